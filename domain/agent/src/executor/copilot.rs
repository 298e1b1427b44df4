//! GitHub's Copilot CLI (`@github/copilot`, tested with 1.0.102).
//!
//! `copilot --output-format json` (headless because stdin is not a terminal; JSON Lines
//! events: the tool calls as they happen, the messages, then a `result` with the session's
//! id and the exit code) with `--allow-all` (every tool, path and URL without asking:
//! Gatehouse's sandbox is the boundary and nobody is at a terminal), `--no-ask-user` (no
//! `ask_user` tool to wait on), `--no-auto-update` (runs the version installed, downloads
//! nothing) and `--disable-client-telemetry`. The prompt comes on stdin. Copilot has no
//! system-prompt flag (its custom instructions are files in the workspace), so the system
//! text precedes the prompt on stdin, separated by a blank line, as for Codex; a turn
//! continues with `--resume <sessionId>` without sending it again.
//!
//! When the gateway serves the role's model, Copilot runs on it as a custom provider
//! ("BYOK"): `COPILOT_PROVIDER_TYPE` `openai` (with `COPILOT_PROVIDER_WIRE_API=responses`,
//! the API the gateway always meters: a Chat Completions stream carries usage only when the
//! client asks for it) or `anthropic` (key sent as `x-api-key`), its
//! `COPILOT_PROVIDER_BASE_URL` and `COPILOT_PROVIDER_API_KEY` taken from the gateway's
//! variables when the shell runs, and `COPILOT_OFFLINE=true`: no GitHub sign-in, telemetry,
//! web tools, GitHub MCP server or update check. Without the gateway none of this is set:
//! the role signs in its own way (a GitHub token among its secrets, or its own
//! `COPILOT_PROVIDER_*` variables).
//!
//! MCP servers go in `--additional-mcp-config '<json>'` (its `mcp-config.json` shape:
//! `type` `local` with `command`, `args`, `env`, or `http` with `url` and an
//! `Authorization: Bearer` header the shell expands; `tools: ["*"]` each), which
//! `--allow-all` lets it call without asking.
//!
//! Its JSON output has no token counts. `--usage-output-file` writes them when Copilot
//! exits, pretty-printed, *for the whole session so far*. The command line has it written
//! to `~/.gatehouse/copilot-usage.json` and, once Copilot is done, prints it on one line as
//! `{"type":"gatehouse.copilot_usage","data":…}`, keeping Copilot's exit status. A first
//! call removes any earlier file first. A turn copies the file the previous turn left to
//! `copilot-usage.before.json` and prints it first, as `gatehouse.copilot_usage_before`:
//! the turn's usage is the difference (see `copilot/events.rs`). Newlines are taken out of
//! the file to put it on one line, which leaves JSON intact: strings hold no raw newline.
//!
//! A role's `permissions` go through Copilot's `preToolUse` hook, which asks Gatehouse
//! about every call (`copilot/hook.rs`): `--allow-all` still lets the calls the hook allows
//! run without a prompt.
//!
//! Its sessions are `~/.copilot/session-state/<sessionId>/` (with `events.jsonl`) and
//! `~/.copilot/session-store.db`; each has a lock file
//! `session-state/.session-operation-locks/<sessionId>.lock`, the one file named by the id.
//! `COPILOT_HOME` moves `~/.copilot`.

mod events;
mod hook;
mod report;

use serde_json::{Value, json};

use super::mcp_servers::{as_strs, bearer, program, variables};
use super::{Call, Cli, ModelApi, expand, pairs};
use crate::invocation::{push_model, quote};
use crate::role::Role;
use crate::sessions::SessionFiles;
use crate::trace::Events;
use crate::usage::{ParseError, Report};

/// Where the command line has Copilot write its usage, under `$HOME`.
const USAGE_FILE: &str = "\"$HOME/.gatehouse/copilot-usage.json\"";

/// Where a turn keeps the usage file of the turn before, under `$HOME`.
const BEFORE_FILE: &str = "\"$HOME/.gatehouse/copilot-usage.before.json\"";

pub(super) struct Copilot;

impl Cli for Copilot {
    fn name(&self) -> &'static str {
        "copilot"
    }

    fn program(&self) -> Option<&'static str> {
        Some("copilot")
    }

    fn install(&self) -> Option<&'static str> {
        Some("npm install -g @github/copilot")
    }

    fn model_apis(&self) -> &'static [ModelApi] {
        &[ModelApi::OpenAi, ModelApi::Anthropic]
    }

    /// No update download, whatever the command line: the sandbox runs what it installed.
    fn environment(&self, _role: &Role) -> Vec<(String, String)> {
        pairs(&[("COPILOT_AUTO_UPDATE", "false")])
    }

    fn command_line(&self, role: &Role, call: &Call<'_>) -> String {
        let Call {
            prompt_file,
            system_file,
            resume,
            api,
            ..
        } = *call;
        let mut words: Vec<String> = provider(api);
        words.extend(
            [
                "copilot",
                "--output-format",
                "json",
                "--allow-all",
                "--no-ask-user",
                "--no-auto-update",
                "--disable-client-telemetry",
            ]
            .map(String::from),
        );
        push_model(&mut words, role);
        if let Some(id) = resume {
            words.push("--resume".to_owned());
            words.push(quote(id));
        }
        if !call.tools.mcp.is_empty() {
            let servers = &call.tools.mcp;
            words.push("--additional-mcp-config".to_owned());
            words.push(expand(
                &mcp_config(servers).to_string(),
                &as_strs(&variables(servers)),
            ));
        }
        words.extend(role.args.iter().map(|arg| quote(arg)));
        words.push("--usage-output-file".to_owned());
        words.push(USAGE_FILE.to_owned());
        let copilot = words.join(" ");
        let run = match system_file.filter(|_| resume.is_none()) {
            // A blank line keeps the system text's last line apart from the prompt's first.
            Some(system_file) => format!(
                "{{ cat {}; printf '\\n\\n'; cat {}; }} | {copilot}",
                quote(system_file),
                quote(prompt_file)
            ),
            None => format!("{copilot} < {}", quote(prompt_file)),
        };
        let (prepare, print_before) = if resume.is_some() {
            (
                format!("{{ cp {USAGE_FILE} {BEFORE_FILE} 2>/dev/null || rm -f {BEFORE_FILE}; }}"),
                format!(
                    "{}; ",
                    print_usage("gatehouse.copilot_usage_before", BEFORE_FILE)
                ),
            )
        } else {
            (format!("rm -f {USAGE_FILE}"), String::new())
        };
        // With `permissions`, the settings that hook every call come first (`copilot/hook.rs`).
        let hooked = match role.permissions {
            Some(_) => format!("{} && ", hook::settings()),
            None => String::new(),
        };
        format!(
            "{hooked}mkdir -p \"$HOME/.gatehouse\" && {prepare} && {run}; status=$?; \
             {print_before}{}; exit $status",
            print_usage("gatehouse.copilot_usage", USAGE_FILE)
        )
    }

    /// Its `preToolUse` hook, before every tool call (`copilot/hook.rs`).
    fn permission_hook(&self) -> Option<crate::permission::hook::Hook> {
        Some(crate::permission::hook::Hook::Copilot)
    }

    fn check_permissions(
        &self,
        role: &Role,
        permissions: &crate::permission::Permissions,
    ) -> Result<(), crate::role::RoleError> {
        hook::check(role, permissions)
    }

    fn unhookable_mcp_name(&self, name: &str) -> Option<&'static str> {
        hook::unhookable_mcp_name(name)
    }

    fn session_files(&self) -> Option<SessionFiles> {
        Some(
            SessionFiles::new("COPILOT_HOME", ".copilot/session-state", 1, "", false)
                .named(None, ".lock"),
        )
    }

    fn skills_homes(&self) -> &'static [&'static str] {
        &["\"${COPILOT_HOME:-$HOME/.copilot}/skills\""]
    }

    fn events(&self) -> Box<dyn Events> {
        Box::<events::Reader>::default()
    }

    fn report(&self, text: &str, model: &str) -> Result<Report, ParseError> {
        report::report(text, model)
            .ok_or_else(|| crate::parse::no_result(super::Executor::Copilot, text))
    }
}

/// The variables that point Copilot at the gateway in `api`'s terms, as assignments
/// before the command; none without the gateway.
fn provider(api: Option<ModelApi>) -> Vec<String> {
    let (kind, url, key) = match api {
        Some(ModelApi::OpenAi) => ("openai", "OPENAI_BASE_URL", "OPENAI_API_KEY"),
        Some(ModelApi::Anthropic) => ("anthropic", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
        // Copilot speaks no Gemini API; the configuration refuses such a provider for it.
        Some(ModelApi::Gemini) | None => return Vec::new(),
    };
    let mut words = vec![
        "COPILOT_OFFLINE=true".to_owned(),
        format!("COPILOT_PROVIDER_TYPE={kind}"),
    ];
    if api == Some(ModelApi::OpenAi) {
        words.push("COPILOT_PROVIDER_WIRE_API=responses".to_owned());
    }
    words.push(format!(
        "COPILOT_PROVIDER_BASE_URL={}",
        expand(&format!("${{{url}}}"), &[url])
    ));
    words.push(format!(
        "COPILOT_PROVIDER_API_KEY={}",
        expand(&format!("${{{key}}}"), &[key])
    ));
    words
}

/// A shell step printing the JSON file `file` on one line as the data of an event `kind`,
/// when the file is there and not empty.
fn print_usage(kind: &str, file: &str) -> String {
    format!(
        "if [ -s {file} ]; then printf '{{\"type\":\"{kind}\",\"data\":'; tr -d '\\n\\r' < {file}; \
         printf '}}\\n'; fi"
    )
}

/// `--additional-mcp-config`'s JSON: `{"mcpServers": {NAME: {...}}}`.
fn mcp_config(servers: &[crate::McpServer]) -> Value {
    let entries = servers.iter().map(|server| {
        let entry = match &server.transport {
            crate::McpTransport::Stdio { command, env } => {
                let (program, args) = program(command);
                json!({"type": "local", "command": program, "args": args, "env": env, "tools": ["*"]})
            }
            crate::McpTransport::Http { url, token_env } => {
                let mut entry = json!({"type": "http", "url": url, "tools": ["*"]});
                if let (Some(token_env), Some(object)) = (token_env, entry.as_object_mut()) {
                    object.insert(
                        "headers".to_owned(),
                        json!({"Authorization": bearer(token_env)}),
                    );
                }
                entry
            }
        };
        (server.name.clone(), entry)
    });
    json!({"mcpServers": entries.collect::<serde_json::Map<String, Value>>()})
}
