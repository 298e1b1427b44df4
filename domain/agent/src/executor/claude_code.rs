//! Anthropic's Claude Code.
//!
//! `claude -p` (print mode, the documented headless mode) with `--output-format stream-json
//! --verbose` (one JSON event per line: the tool calls as they happen, for the attempt's
//! trace, then the result object with usage and cost) and `--permission-mode
//! bypassPermissions` (the documented equivalent of `--dangerously-skip-permissions`;
//! Gatehouse's sandbox is the isolation boundary and nobody is at a terminal to answer).
//! The prompt comes on stdin, so its length is not bound by argv limits; the system text
//! goes through `--append-system-prompt`, keeping Claude Code's own system prompt and its
//! tool instructions. A turn continues the session with `--resume <session_id>`; the system
//! text is given again, since Claude Code builds its system prompt per invocation.
//!
//! MCP servers go in `--mcp-config '<json>'` (its `.mcp.json` shape: `type` `stdio` with
//! `command`, `args`, `env`, or `http` with `url` and an `Authorization: Bearer` header
//! whose token the shell expands) followed by `--strict-mcp-config`, so only these servers
//! run, none from a settings file in the workspace. `--mcp-config` takes several values, so
//! an option must follow it. Their tools are `mcp__<server>__<tool>`.
//!
//! A role with `permissions` runs with `--permission-mode default` instead, its rules in
//! Claude Code's terms as `--settings` JSON (`settings.rs`), and either
//! `--permission-prompt-tool <tool>` (the runner's MCP tool, which decides what the rules
//! leave open by the same policy and asks a person for `ask`) or, when the attempt has no
//! such tool, `--permission-prompts none`, so whatever would prompt is refused: `ask` never
//! becomes allow.
//!
//! Its sessions are `~/.claude/projects/<project>/<session>.jsonl`, one directory per
//! working directory; `--resume` finds a session in any of them and keeps its id.

mod events;
mod report;
mod settings;

use serde_json::{Value, json};

use super::mcp_servers::{as_strs, bearer, program, variables};
use super::{Call, Cli, ModelApi, expand, pairs};
use crate::invocation::{push_model, quote};
use crate::role::{Role, RoleError};
use crate::sessions::SessionFiles;
use crate::trace::Events;
use crate::usage::{ParseError, Report};

pub(super) struct ClaudeCode;

impl Cli for ClaudeCode {
    fn name(&self) -> &'static str {
        "claude-code"
    }

    fn program(&self) -> Option<&'static str> {
        Some("claude")
    }

    fn install(&self) -> Option<&'static str> {
        Some("npm install -g @anthropic-ai/claude-code")
    }

    fn model_apis(&self) -> &'static [ModelApi] {
        &[ModelApi::Anthropic]
    }

    /// Gatehouse's sandbox is the sandbox (`IS_SANDBOX=1`, without which it refuses to skip
    /// permission prompts as root), it sends nothing but model requests — no telemetry,
    /// error reports, update checks or preflight, which the sandbox could not reach anyway
    /// and would wait on — and it retries a failed model request only the role's
    /// `max_retries` times, so a model it cannot reach fails the attempt soon.
    fn environment(&self, role: &Role) -> Vec<(String, String)> {
        let mut env = pairs(&[
            ("IS_SANDBOX", "1"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_ERROR_REPORTING", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
        ]);
        env.push((
            "CLAUDE_CODE_MAX_RETRIES".to_owned(),
            role.retries().to_string(),
        ));
        env
    }

    fn command_line(&self, role: &Role, call: &Call<'_>) -> String {
        let Call {
            prompt_file,
            system_file,
            resume,
            ..
        } = *call;
        let mut words: Vec<String> = [
            "claude",
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
        ]
        .map(String::from)
        .into();
        if let Some(id) = resume {
            words.push("--resume".to_owned());
            words.push(quote(id));
        }
        push_model(&mut words, role);
        if let Some(system_file) = system_file {
            words.push("--append-system-prompt".to_owned());
            words.push(format!("\"$(cat {})\"", quote(system_file)));
        }
        if !call.tools.mcp.is_empty() {
            let servers = &call.tools.mcp;
            words.push("--mcp-config".to_owned());
            words.push(expand(
                &mcp_config(servers).to_string(),
                &as_strs(&variables(servers)),
            ));
            words.push("--strict-mcp-config".to_owned());
        }
        match &role.permissions {
            None => words.extend(["--permission-mode", "bypassPermissions"].map(String::from)),
            Some(permissions) => {
                words.extend(["--permission-mode", "default", "--settings"].map(String::from));
                words.push(quote(
                    &settings::settings(permissions, call.tools).to_string(),
                ));
                match &call.tools.permission_tool {
                    Some(tool) => {
                        words.push("--permission-prompt-tool".to_owned());
                        words.push(quote(tool));
                    }
                    None => words.extend(["--permission-prompts", "none"].map(String::from)),
                }
            }
        }
        words.extend(role.args.iter().map(|arg| quote(arg)));
        words.push("<".to_owned());
        words.push(quote(prompt_file));
        words.join(" ")
    }

    /// Every rule in its settings, but those its syntax cannot say.
    fn check_permissions(
        &self,
        _role: &Role,
        permissions: &crate::permission::Permissions,
    ) -> Result<(), RoleError> {
        settings::check(permissions)
    }

    fn session_files(&self) -> Option<SessionFiles> {
        Some(SessionFiles::new(
            "CLAUDE_CONFIG_DIR",
            ".claude/projects",
            1,
            "",
            false,
        ))
    }

    fn skills_homes(&self) -> &'static [&'static str] {
        &["\"${CLAUDE_CONFIG_DIR:-$HOME/.claude}/skills\""]
    }

    fn events(&self) -> Box<dyn Events> {
        Box::<events::Reader>::default()
    }

    fn report(&self, text: &str, model: &str) -> Result<Report, ParseError> {
        report::report(text, model)
            .ok_or_else(|| crate::parse::no_result(super::Executor::ClaudeCode, text))
    }
}

/// `--mcp-config`'s JSON: `{"mcpServers": {NAME: {...}}}`.
fn mcp_config(servers: &[crate::McpServer]) -> Value {
    let entries = servers.iter().map(|server| {
        let entry = match &server.transport {
            crate::McpTransport::Stdio { command, env } => {
                let (program, args) = program(command);
                json!({"type": "stdio", "command": program, "args": args, "env": env})
            }
            crate::McpTransport::Http { url, token_env } => {
                let mut entry = json!({"type": "http", "url": url});
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
