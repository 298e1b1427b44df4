//! OpenAI's Codex CLI.
//!
//! `codex exec --json` (JSON Lines events) with `--skip-git-repo-check` (a workspace need
//! not be a repository) and `--dangerously-bypass-approvals-and-sandbox` (no approvals, no
//! Codex sandbox: documented for externally sandboxed environments, and Codex's
//! Landlock/seccomp sandbox often cannot start inside a container anyway). `codex exec` has
//! no system-prompt flag, so the system text precedes the prompt on stdin, read through the
//! `-` prompt argument. A turn continues with `codex exec … resume <SESSION_ID> -`: the
//! `exec` options come before `resume`, where every release accepts them, and the system
//! text is not sent again (the resumed session holds the first turn's prompt).
//!
//! MCP servers go in one `-c mcp_servers.<NAME>={…}` each, a TOML inline table: `command`,
//! `args`, `env` for a stdio server; `url` (the runner's address expanded by the shell) and
//! `bearer_token_env_var` (the variable holding the attempt's token, which Codex reads and
//! sends as `Authorization: Bearer`) for a remote one. Its trace shows their calls as
//! `mcp_tool_call` items.
//!
//! A role's `permissions` go through Codex's `PreToolUse` hook, which asks Gatehouse about
//! every call (`codex/hook.rs`).
//!
//! Its sessions are `~/.codex/sessions/<year>/<month>/<day>/rollout-<time>-<thread>.jsonl`;
//! `exec resume` finds one by the thread's id, and keeps it.

mod events;
mod hook;
mod report;

use super::mcp_servers::{as_strs, variables};
use super::{Call, Cli, ModelApi, expand};
use crate::invocation::{push_model, quote};
use crate::role::Role;
use crate::sessions::SessionFiles;
use crate::trace::Events;
use crate::usage::{ParseError, Report};

pub(super) struct Codex;

impl Cli for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn program(&self) -> Option<&'static str> {
        Some("codex")
    }

    fn install(&self) -> Option<&'static str> {
        Some("npm install -g @openai/codex")
    }

    fn model_apis(&self) -> &'static [ModelApi] {
        &[ModelApi::OpenAi]
    }

    /// Nothing: its retries and the gateway's address go on its command line.
    fn environment(&self, _role: &Role) -> Vec<(String, String)> {
        Vec::new()
    }

    fn command_line(&self, role: &Role, call: &Call<'_>) -> String {
        let Call {
            prompt_file,
            system_file,
            resume,
            ..
        } = *call;
        let mut words: Vec<String> = ["codex", "exec", "--json"].map(String::from).into();
        push_model(&mut words, role);
        words.extend(
            [
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
            ]
            .map(String::from),
        );
        if role.provider.is_some() {
            words.extend(
                GATEWAY_PROVIDER
                    .iter()
                    .map(|setting| format!("-c {setting}")),
            );
            // Bounded, so a provider that cannot be reached fails the attempt in seconds.
            let retries = role.retries();
            words.push(format!(
                "-c model_providers.gatehouse.request_max_retries={retries}"
            ));
            words.push(format!(
                "-c model_providers.gatehouse.stream_max_retries={retries}"
            ));
        }
        let vars = variables(&call.tools.mcp);
        for server in &call.tools.mcp {
            words.push("-c".to_owned());
            words.push(expand(
                &format!("mcp_servers.{}={}", server.name, mcp_table(server)),
                &as_strs(&vars),
            ));
        }
        words.extend(role.args.iter().map(|arg| quote(arg)));
        if let Some(permissions) = &role.permissions {
            words.extend(hook::flags(permissions));
        }
        if let Some(id) = resume {
            words.push("resume".to_owned());
            words.push(quote(id));
        }
        words.push("-".to_owned());
        let codex = words.join(" ");
        match system_file.filter(|_| resume.is_none()) {
            // A blank line keeps the system text's last line apart from the prompt's first.
            Some(system_file) => format!(
                "{{ cat {}; printf '\\n\\n'; cat {}; }} | {codex}",
                quote(system_file),
                quote(prompt_file)
            ),
            None => format!("{codex} < {}", quote(prompt_file)),
        }
    }

    /// Its `PreToolUse` hook, before every tool it runs (`codex/hook.rs`).
    fn permission_hook(&self) -> Option<crate::permission::hook::Hook> {
        Some(crate::permission::hook::Hook::Codex)
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
        Some(SessionFiles::new(
            "CODEX_HOME",
            ".codex/sessions",
            3,
            "rollout-",
            true,
        ))
    }

    fn skills_homes(&self) -> &'static [&'static str] {
        &["\"$HOME/.agents/skills\""]
    }

    fn events(&self) -> Box<dyn Events> {
        Box::<events::Reader>::default()
    }

    fn report(&self, text: &str, model: &str) -> Result<Report, ParseError> {
        report::report(text, model)
            .ok_or_else(|| crate::parse::no_result(super::Executor::Codex, text))
    }
}

/// Codex's settings for a role whose model requests go through the gateway. Codex reads no
/// base URL from its environment (`OPENAI_BASE_URL` is ignored by 0.171), so a provider of
/// its own is defined on the command line, reading the gateway's address and the attempt's
/// token from the variables the runner sets. Double-quoted so the shell expands the address.
const GATEWAY_PROVIDER: [&str; 7] = [
    "model_provider=gatehouse",
    "model_providers.gatehouse.name=Gatehouse",
    "\"model_providers.gatehouse.base_url=$OPENAI_BASE_URL\"",
    "model_providers.gatehouse.wire_api=responses",
    "model_providers.gatehouse.env_key=OPENAI_API_KEY",
    "analytics.enabled=false",
    "check_for_update_on_startup=false",
];

/// One server's settings as a TOML inline table. TOML's basic strings take JSON's escapes,
/// so strings are written as JSON writes them.
fn mcp_table(server: &crate::McpServer) -> String {
    let string = |text: &str| serde_json::Value::from(text).to_string();
    let mut fields = Vec::new();
    match &server.transport {
        crate::McpTransport::Stdio { command, env } => {
            let (program, args) = super::mcp_servers::program(command);
            fields.push(format!("command={}", string(program)));
            let args: Vec<String> = args.iter().map(|arg| string(arg)).collect();
            fields.push(format!("args=[{}]", args.join(",")));
            if !env.is_empty() {
                let env: Vec<String> = env
                    .iter()
                    .map(|(name, value)| format!("{}={}", string(name), string(value)))
                    .collect();
                fields.push(format!("env={{{}}}", env.join(",")));
            }
        }
        crate::McpTransport::Http { url, token_env } => {
            fields.push(format!("url={}", string(url)));
            if let Some(token_env) = token_env {
                fields.push(format!("bearer_token_env_var={}", string(token_env)));
            }
        }
    }
    format!("{{{}}}", fields.join(","))
}
