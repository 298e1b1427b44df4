//! Google's Gemini CLI (`@google/gemini-cli`, tested with 0.61.0).
//!
//! `gemini --output-format stream-json` (headless because stdin is not a terminal; one JSON
//! event per line: the tool calls as they happen, then a result with usage per model) with
//! `--approval-mode yolo` (no approval prompts: Gatehouse's sandbox is the boundary and
//! nobody is at a terminal) and `--skip-trust` (without it an untrusted folder exits 55, or
//! silently drops yolo back to prompting). The prompt comes on stdin, read whole before the
//! run starts.
//!
//! Gemini CLI has no flag that adds to its system prompt. `GEMINI_SYSTEM_MD` names a file
//! that *replaces* it — its tool instructions, safety rules and workspace context with it —
//! and rewrites `${…}` in the file as template variables, so the role's system text would
//! lose the CLI's own instructions and could be altered. Instead the system text precedes
//! the prompt on stdin, separated by a blank line, as for Codex; a turn does not send it
//! again, since the resumed session holds the first turn's prompt. A turn continues with
//! `--resume <session_id>` (the id of the `init` event), which keeps the id.
//!
//! It is configured by `~/.gemini/settings.json`, which Gatehouse writes before every call:
//! usage statistics (Clearcut logging to Google), telemetry, auto-update and its notice
//! off, and `general.maxAttempts` = the role's retries + 1 (capped at the CLI's maximum
//! of 10) so an unreachable model fails the attempt soon. When the gateway serves the
//! role's model, the file also selects `gemini-api-key` authentication: with
//! `GOOGLE_GEMINI_BASE_URL` set and no selection the CLI picks its `gateway` method and
//! exits 41 ("Invalid auth method selected"). It then reads the gateway's address from
//! `GOOGLE_GEMINI_BASE_URL` and the attempt's token from `GEMINI_API_KEY` (sent as
//! `x-goog-api-key`). Without the gateway no method is selected, so the CLI picks one from
//! the role's variables (`GEMINI_API_KEY`, `GOOGLE_GENAI_USE_VERTEXAI`, …).
//!
//! MCP servers go in the same settings file's `mcpServers`: `command`, `args`, `env` for a
//! stdio server, `httpUrl` and an `Authorization: Bearer` header for a remote one, the
//! runner's address and the attempt's token expanded by the shell as it writes the file.
//! `--approval-mode yolo` approves their tools as it does the built-in ones.
//!
//! A role with `permissions` gets Gatehouse's `BeforeTool` hook in the same file
//! ([`crate::permission::hook`]): `gatehouse-acp hook gemini` runs before every tool call
//! (the CLI's own, a sub-agent's, MCP tools) and its answer decides, so `--approval-mode
//! yolo` stays — the CLI asks nobody and runs what the hook allows. The CLI lets a call run
//! when a hook times out, fails without output or prints no decision, so the command is
//! wrapped to deny whenever the shim does not answer, and its time-out is the longest the
//! CLI's timer takes (24 days; the attempt ends first). The shim's variables are handed to
//! the hook through its `env` (the CLI fills `${…}` in settings from its own environment),
//! since the CLI drops variables named like secrets from a hook's environment under
//! GitHub Actions. Two things could switch the hook off, so they are shut: extensions
//! (`--extensions none`) and the working folder's `.gemini/settings.json`, which the CLI
//! merges over the user's file when the folder is trusted — a run refuses to start when that
//! file has `hooks` or `hooksConfig`, or does not read as plain JSON.
//!
//! Its sessions are `~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl`, where
//! `<project>` is named after the working directory and `<id8>` is the first 8 characters
//! of the session id; `GEMINI_CLI_HOME` moves `~/.gemini`.

mod events;
mod report;

use serde_json::json;

use super::mcp_servers::{as_strs, bearer, program, variables};
use super::{Call, Cli, ModelApi, home_file, pairs};
use crate::invocation::quote;
use crate::permission::hook::Hook;
use crate::role::Role;
use crate::sessions::SessionFiles;
use crate::trace::Events;
use crate::usage::{ParseError, Report};

/// The most attempts `general.maxAttempts` accepts.
const MAX_ATTEMPTS: u32 = 10;

/// Where the settings file goes, under `$HOME`.
const SETTINGS: &str = ".gemini/settings.json";

/// The permission hook's time-out in milliseconds: the most Node's timers take (a larger
/// value fires at once). A person's answer takes at most the attempt's time.
const HOOK_TIMEOUT_MS: u32 = i32::MAX as u32;

/// What the hook prints when the shim gave no answer: the CLI would run the call.
const HOOK_FAILED: &str = r#"{"decision":"deny","reason":"the Gatehouse permission hook gave no answer, so the call is denied"}"#;

/// Before a run with `permissions`: refuses a working folder whose `.gemini/settings.json`
/// could turn hooks off or add a hook that rewrites an allowed call (`hooks`,
/// `hooksConfig`), or that `JSON.parse` does not read as the CLI would. `node` runs the
/// CLI, so it is there.
const WORKSPACE_CHECK: &str = "node -e 'const fs=require(\"fs\");let t;try{t=fs.readFileSync(\".gemini/settings.json\",\"utf8\")}catch(e){process.exit(e.code===\"ENOENT\"?0:1)}const s=JSON.parse(t);process.exit(s!==null&&typeof s===\"object\"&&(\"hooks\" in s||\"hooksConfig\" in s)?1:0)' 2>/dev/null || { echo 'Gatehouse: this folder'\\''s .gemini/settings.json sets hooks or hooksConfig (or is not plain JSON); with the role'\\''s permissions Gemini CLI does not run with it, since it could switch the permission hook off' >&2; exit 3; }";

pub(super) struct Gemini;

impl Cli for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn program(&self) -> Option<&'static str> {
        Some("gemini")
    }

    fn install(&self) -> Option<&'static str> {
        Some("npm install -g @google/gemini-cli")
    }

    fn model_apis(&self) -> &'static [ModelApi] {
        &[ModelApi::Gemini]
    }

    /// Telemetry off once more: the variable wins over any settings file.
    fn environment(&self, _role: &Role) -> Vec<(String, String)> {
        pairs(&[("GEMINI_TELEMETRY_ENABLED", "false")])
    }

    fn permission_hook(&self) -> Option<Hook> {
        Some(Hook::Gemini)
    }

    fn command_line(&self, role: &Role, call: &Call<'_>) -> String {
        let Call {
            prompt_file,
            system_file,
            resume,
            api,
            ..
        } = *call;
        let mut words: Vec<String> = [
            "gemini",
            "--output-format",
            "stream-json",
            "--approval-mode",
            "yolo",
            "--skip-trust",
        ]
        .map(String::from)
        .into();
        if role.permissions.is_some() {
            // An extension's hooks could rewrite a call after Gatehouse's allowed it.
            words.push("--extensions".to_owned());
            words.push("none".to_owned());
        }
        if let Some(model) = &role.model {
            words.push("--model".to_owned());
            words.push(quote(model));
        }
        if let Some(id) = resume {
            words.push("--resume".to_owned());
            words.push(quote(id));
        }
        words.extend(role.args.iter().map(|arg| quote(arg)));
        let gemini = words.join(" ");
        let servers = &call.tools.mcp;
        let mut settings = home_file(
            SETTINGS,
            &settings(role, api.is_some(), servers),
            &as_strs(&variables(servers)),
        );
        if role.permissions.is_some() {
            settings = format!("{settings} && {{ {WORKSPACE_CHECK}; }}");
        }
        match system_file.filter(|_| resume.is_none()) {
            // A blank line keeps the system text's last line apart from the prompt's first.
            Some(system_file) => format!(
                "{settings} && {{ cat {}; printf '\\n\\n'; cat {}; }} | {gemini}",
                quote(system_file),
                quote(prompt_file)
            ),
            None => format!("{settings} && {gemini} < {}", quote(prompt_file)),
        }
    }

    fn session_files(&self) -> Option<SessionFiles> {
        Some(
            SessionFiles::new("GEMINI_CLI_HOME", ".gemini/tmp", 2, "session-", true)
                .named(Some(8), ".jsonl"),
        )
    }

    fn skills_homes(&self) -> &'static [&'static str] {
        &["\"${GEMINI_CLI_HOME:-$HOME}/.gemini/skills\""]
    }

    fn events(&self) -> Box<dyn Events> {
        Box::<events::Reader>::default()
    }

    fn report(&self, text: &str, model: &str) -> Result<Report, ParseError> {
        report::report(text, model)
            .ok_or_else(|| crate::parse::no_result(super::Executor::Gemini, text))
    }
}

/// `~/.gemini/settings.json`: nothing sent but model requests, bounded retries, the
/// API-key method when the requests go through the gateway, and the MCP servers.
fn settings(role: &Role, through_gateway: bool, servers: &[crate::McpServer]) -> String {
    let attempts = role.retries().saturating_add(1).min(MAX_ATTEMPTS);
    let auth = through_gateway.then(|| json!({"auth": {"selectedType": "gemini-api-key"}}));
    let mut settings = json!({
        "general": {
            "enableAutoUpdate": false,
            "enableAutoUpdateNotification": false,
            "maxAttempts": attempts,
        },
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
    });
    if let (Some(auth), Some(object)) = (auth, settings.as_object_mut()) {
        object.insert("security".to_owned(), auth);
    }
    if let (false, Some(object)) = (servers.is_empty(), settings.as_object_mut()) {
        object.insert("mcpServers".to_owned(), mcp_servers(servers));
    }
    if let (true, Some(object)) = (role.permissions.is_some(), settings.as_object_mut()) {
        object.insert("hooksConfig".to_owned(), json!({"enabled": true}));
        object.insert(
            "hooks".to_owned(),
            json!({"BeforeTool": [permission_hook()]}),
        );
    }
    settings.to_string()
}

/// The `BeforeTool` entry that asks Gatehouse about every call: no matcher (every tool),
/// the shim's command wrapped so that no answer is a deny, and the shim's variables.
fn permission_hook() -> serde_json::Value {
    let command = format!(
        "( {} ) || {{ printf '%s\\n' '{HOOK_FAILED}'; exit 2; }}",
        Hook::Gemini.command()
    );
    let env: serde_json::Map<String, serde_json::Value> = [
        "GATEHOUSE_ACP",
        "GATEHOUSE_TOOLS_URL",
        "GATEHOUSE_TOOLS_TOKEN",
    ]
    .into_iter()
    .map(|name| (name.to_owned(), json!(format!("${{{name}:-}}"))))
    .collect();
    json!({"hooks": [{
        "name": "gatehouse-permissions",
        "type": "command",
        "command": command,
        "timeout": HOOK_TIMEOUT_MS,
        "env": env,
    }]})
}

/// `mcpServers`: NAME → `{command, args, env}` or `{httpUrl, headers}`.
fn mcp_servers(servers: &[crate::McpServer]) -> serde_json::Value {
    let entries = servers.iter().map(|server| {
        let entry = match &server.transport {
            crate::McpTransport::Stdio { command, env } => {
                let (program, args) = program(command);
                json!({"command": program, "args": args, "env": env})
            }
            crate::McpTransport::Http { url, token_env } => match token_env {
                Some(token_env) => {
                    json!({"httpUrl": url, "headers": {"Authorization": bearer(token_env)}})
                }
                None => json!({"httpUrl": url}),
            },
        };
        (server.name.clone(), entry)
    });
    serde_json::Value::Object(entries.collect())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{HOOK_FAILED, settings};
    use crate::permission::Permissions;
    use crate::role::Role;
    use crate::{Executor, Tools, invocation};

    fn with_permissions() -> Role {
        let permissions: Permissions =
            serde_json::from_value(json!({"ask": ["Bash(git push*)"]})).expect("permissions");
        Role {
            permissions: Some(permissions),
            ..Role::new(Executor::Gemini)
        }
    }

    #[test]
    fn a_role_with_permissions_gets_the_hook_and_nothing_that_could_skip_it() {
        let role = with_permissions();
        assert_eq!(role.check(), Ok(()));
        assert!(Executor::needs_shim(&role));
        let written: Value = serde_json::from_str(&settings(&role, true, &[])).expect("json");
        assert_eq!(written["hooksConfig"], json!({"enabled": true}));
        let hook = &written["hooks"]["BeforeTool"][0]["hooks"][0];
        assert!(written["hooks"]["BeforeTool"][0].get("matcher").is_none());
        assert_eq!(hook["type"], "command");
        assert_eq!(hook["timeout"], json!(i32::MAX));
        assert_eq!(
            hook["env"]["GATEHOUSE_TOOLS_TOKEN"],
            "${GATEHOUSE_TOOLS_TOKEN:-}"
        );
        let command = hook["command"].as_str().expect("a command");
        assert!(
            command.starts_with("( \"${GATEHOUSE_ACP:?") && command.contains(" hook gemini )"),
            "{command}"
        );
        // The fallback sits in single quotes.
        assert!(!HOOK_FAILED.contains('\''));
        let line = |role: &Role| invocation(role, None, &Tools::none(), "/in/prompt.md", None);
        let hooked = line(&role);
        assert!(hooked.contains("--extensions none"), "{hooked}");
        assert!(hooked.contains("\"hooksConfig\" in s"), "{hooked}");
        let plain = line(&Role::new(Executor::Gemini));
        assert!(
            !plain.contains("hooks") && !plain.contains("--extensions"),
            "{plain}"
        );
    }

    #[test]
    fn the_hook_command_denies_when_the_shim_is_missing_or_silent() {
        let role = with_permissions();
        let written: Value = serde_json::from_str(&settings(&role, false, &[])).expect("json");
        let command = written["hooks"]["BeforeTool"][0]["hooks"][0]["command"]
            .as_str()
            .expect("a command")
            .to_owned();
        let run = |acp: &str| {
            let mut bash = std::process::Command::new("bash");
            bash.arg("-c").arg(&command).env_remove("GATEHOUSE_ACP");
            if !acp.is_empty() {
                bash.env("GATEHOUSE_ACP", acp);
            }
            bash.output().expect("bash")
        };
        for acp in ["", "/bin/false", "/nonexistent/gatehouse-acp"] {
            let output = run(acp);
            assert_eq!(output.status.code(), Some(2), "{acp}");
            let answer: Value = serde_json::from_slice(&output.stdout).expect("a decision");
            assert_eq!(answer["decision"], "deny", "{acp}");
        }
    }
}
