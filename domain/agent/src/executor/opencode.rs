//! OpenCode (`opencode-ai` on npm), and what its fork Kilo shares with it.
//!
//! `opencode run --format json` (one JSON event per line: see [`events`]) with `--pure` (no
//! external plugins: otherwise it fetches them from npm at start) and `--auto` (approve
//! every permission the configuration does not deny; Gatehouse's sandbox is the boundary and
//! nobody is at a terminal to answer). `--title Gatehouse` names the session, which saves
//! the side request OpenCode otherwise makes to have the model write a title. The prompt
//! comes on stdin (no message argument). `opencode run` has no system-prompt flag, so the
//! system text precedes the prompt on stdin on a session's first call; a turn continues the
//! session with `-s <ses_id>` and does not send it again (the session holds it).
//!
//! It is configured by the JSON in `OPENCODE_CONFIG_CONTENT`, set on the command line
//! because it depends on the call: auto-update and sharing off, no workspace snapshots
//! (Gatehouse checkpoints the workspace itself), and, when the model requests go through
//! the gateway, a provider `gatehouse` whose `npm` picks the wire API
//! (`@ai-sdk/anthropic`: Messages, `@ai-sdk/openai`: Responses; both bundled, nothing is
//! downloaded) and whose address and key are OpenCode's own `{env:NAME}` substitutions of
//! the gateway's variables: the token never appears in the command line. The model is then
//! `gatehouse/<model>`; without the gateway it is the role's `model` as OpenCode names it
//! (`anthropic/claude-sonnet-4-5`).
//!
//! MCP servers go in the same configuration's `mcp`: `{"type": "local", "command": [...],
//! "environment": {...}}` for a stdio server, `{"type": "remote", "url": ..., "headers":
//! {"Authorization": "Bearer {env:GATEHOUSE_TOOLS_TOKEN}"}}` for a remote one, the runner's
//! address and the token again OpenCode's `{env:NAME}`. Their tools are `<server>_<tool>`.
//!
//! OpenCode retries a failed model request that may pass (HTTP 408, 409, 429, 5xx, no
//! connection) on its own, with a back-off from 2 s doubling, and prints nothing while it
//! waits: against a gateway answering 500 it made 6 requests over 78 s before its `error`
//! event. A refusal (401) ends the call at once with an `error` event. Its retries cannot
//! be bounded from outside (Kilo's can: `KILO_SESSION_RETRY_LIMIT`).
//!
//! A role with `permissions` is enforced by a plugin ([`permissions`]): the command line
//! writes it into `~/.config/opencode/plugins/` and drops `--pure` (which loads no plugin
//! at all), and the plugin hands every tool call to `gatehouse-acp hook opencode`.
//!
//! Its state is `~/.local/share/opencode/` (the sessions in the SQLite database
//! `opencode.db`, logs in `log/`), `~/.config/opencode/` (where it installs
//! `@opencode-ai/plugin` from npm in the background at every start, even with `--pure`; a
//! sandbox without npm only logs a warning) and `~/.cache/opencode/`. Sessions are rows,
//! not files, so the runner cannot tell whether a home holds one.

pub(super) mod events;
mod permissions;
pub(super) mod report;

use serde_json::{Map, Value, json};

use super::{Call, Cli, ModelApi, pairs};
use crate::invocation::quote;
use crate::permission::hook::Hook;
use crate::role::Role;
use crate::trace::Events;
use crate::usage::{ParseError, Report};

pub(super) struct OpenCode;

/// The OpenCode of [`OpenCode`]: its program and variable names, which Kilo renames.
pub(super) const OPENCODE: Flavour = Flavour {
    program: "opencode",
    config_variable: "OPENCODE_CONFIG_CONTENT",
    project_config_off: "OPENCODE_DISABLE_PROJECT_CONFIG",
    config_dir: ".config/opencode",
    plugin_package: "@opencode-ai/plugin",
    hook: Hook::OpenCode,
};

impl Cli for OpenCode {
    fn name(&self) -> &'static str {
        "opencode"
    }

    fn program(&self) -> Option<&'static str> {
        Some("opencode")
    }

    fn install(&self) -> Option<&'static str> {
        Some("npm install -g opencode-ai")
    }

    fn model_apis(&self) -> &'static [ModelApi] {
        &[ModelApi::Anthropic, ModelApi::OpenAi]
    }

    /// No update check, no fetch of the models.dev catalogue, no sharing and no download of
    /// language servers: none of these is reachable from the sandbox, and each would be
    /// waited on or retried.
    fn environment(&self, _role: &Role) -> Vec<(String, String)> {
        pairs(&[
            ("OPENCODE_DISABLE_AUTOUPDATE", "true"),
            ("OPENCODE_DISABLE_MODELS_FETCH", "true"),
            ("OPENCODE_DISABLE_SHARE", "true"),
            ("OPENCODE_DISABLE_LSP_DOWNLOAD", "true"),
        ])
    }

    fn command_line(&self, role: &Role, call: &Call<'_>) -> String {
        command_line(&OPENCODE, role, call)
    }

    fn permission_hook(&self) -> Option<Hook> {
        Some(OPENCODE.hook)
    }

    fn skills_homes(&self) -> &'static [&'static str] {
        &["\"$HOME/.agents/skills\""]
    }

    fn events(&self) -> Box<dyn Events> {
        Box::new(events::Reader::new(OPENCODE.program))
    }

    fn report(&self, text: &str, model: &str) -> Result<Report, ParseError> {
        report::report(text, model)
            .ok_or_else(|| crate::parse::no_result(super::Executor::Opencode, text))
    }
}

/// What tells OpenCode and its forks apart on a command line.
pub(super) struct Flavour {
    /// The program.
    pub(super) program: &'static str,
    /// The variable holding the configuration as JSON.
    pub(super) config_variable: &'static str,
    /// The variable that keeps it from reading the workspace's configuration (and plugins).
    pub(super) project_config_off: &'static str,
    /// Its configuration folder under `$HOME`, where it loads plugins from.
    pub(super) config_dir: &'static str,
    /// The package it installs into that folder before loading a plugin.
    pub(super) plugin_package: &'static str,
    /// The pre-tool hook its plugin runs.
    pub(super) hook: Hook,
}

/// The provider Gatehouse defines for the gateway, as models name it (`gatehouse/<model>`).
const PROVIDER: &str = "gatehouse";

/// `<CONFIG>='…' <program> run …` for one call of OpenCode or a fork of it.
pub(super) fn command_line(flavour: &Flavour, role: &Role, call: &Call<'_>) -> String {
    let Call {
        prompt_file,
        system_file,
        resume,
        api,
        ..
    } = *call;
    let guarded = role.permissions.is_some();
    let mut config = config(role.model.as_deref(), api, &call.tools.mcp);
    if let (true, Some(object)) = (guarded, config.as_object_mut()) {
        object.insert("permission".to_owned(), permissions::deny_all());
    }
    let mut words = Vec::new();
    if guarded {
        words.push(format!("{}=true", flavour.project_config_off));
    }
    words.push(format!(
        "{}={}",
        flavour.config_variable,
        quote(&config.to_string())
    ));
    words.push(flavour.program.to_owned());
    words.extend(["run", "--format", "json"].map(String::from));
    if !guarded {
        words.push("--pure".to_owned());
    }
    words.extend(["--auto", "--title", "Gatehouse"].map(String::from));
    if let Some(model) = &role.model {
        words.push("--model".to_owned());
        words.push(quote(&match api {
            Some(_) => format!("{PROVIDER}/{model}"),
            None => model.clone(),
        }));
    }
    if let Some(id) = resume {
        words.push("-s".to_owned());
        words.push(quote(id));
    }
    words.extend(role.args.iter().map(|arg| quote(arg)));
    let cli = words.join(" ");
    let setup = match guarded {
        true => format!("{} && ", permissions::setup(flavour, &call.tools.mcp)),
        false => String::new(),
    };
    match system_file.filter(|_| resume.is_none()) {
        // A blank line keeps the system text's last line apart from the prompt's first.
        Some(system_file) => format!(
            "{setup}{{ cat {}; printf '\\n\\n'; cat {}; }} | {cli}",
            quote(system_file),
            quote(prompt_file)
        ),
        None => format!("{setup}{cli} < {}", quote(prompt_file)),
    }
}

/// The configuration: what every call turns off, the gateway's provider when `api` says
/// the model requests go through it, and the MCP servers. The addresses and the keys are
/// `{env:NAME}`, which OpenCode substitutes when it reads the configuration.
fn config(model: Option<&str>, api: Option<ModelApi>, servers: &[crate::McpServer]) -> Value {
    let mut config = json!({
        "autoupdate": false,
        "share": "disabled",
        "snapshot": false,
    });
    let provider = match api {
        Some(ModelApi::Anthropic) => Some((
            "@ai-sdk/anthropic",
            "{env:ANTHROPIC_BASE_URL}/v1",
            "{env:ANTHROPIC_API_KEY}",
        )),
        Some(ModelApi::OpenAi) => Some((
            "@ai-sdk/openai",
            "{env:OPENAI_BASE_URL}",
            "{env:OPENAI_API_KEY}",
        )),
        // Not one of its model APIs: the configuration refuses it when it loads.
        Some(ModelApi::Gemini) | None => None,
    };
    if let (Some((npm, base_url, key)), Some(object)) = (provider, config.as_object_mut()) {
        let mut models = Map::new();
        if let Some(model) = model {
            models.insert(model.to_owned(), json!({}));
        }
        object.insert(
            "provider".to_owned(),
            json!({
                PROVIDER: {
                    "npm": npm,
                    "name": "Gatehouse",
                    "options": {"baseURL": base_url, "apiKey": key},
                    "models": models,
                }
            }),
        );
    }
    if let (false, Some(object)) = (servers.is_empty(), config.as_object_mut()) {
        object.insert("mcp".to_owned(), mcp(servers));
    }
    config
}

/// `mcp`: NAME → a `local` or `remote` server.
fn mcp(servers: &[crate::McpServer]) -> Value {
    use super::mcp_servers::opencode_env;
    let entries = servers.iter().map(|server| {
        let entry = match &server.transport {
            crate::McpTransport::Stdio { command, env } => {
                json!({"type": "local", "command": command, "environment": env})
            }
            crate::McpTransport::Http { url, token_env } => {
                let mut entry = json!({"type": "remote", "url": opencode_env(url)});
                if let (Some(token_env), Some(object)) = (token_env, entry.as_object_mut()) {
                    object.insert(
                        "headers".to_owned(),
                        json!({"Authorization": format!("Bearer {{env:{token_env}}}")}),
                    );
                }
                entry
            }
        };
        (server.name.clone(), entry)
    });
    Value::Object(entries.collect())
}
