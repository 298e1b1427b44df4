//! Any Agent Client Protocol agent, through the `gatehouse-acp` shim (adapters/acp).
//!
//! ACP is JSON-RPC over the agent's stdio, between an editor and a coding agent: Gemini
//! CLI (`gemini --acp`), OpenCode (`opencode acp`), goose (`goose acp`), Claude Code and
//! Codex through Zed's adapters (`claude-agent-acp`, `codex-acp`), Qwen, Copilot, Kilo,
//! Mistral Vibe (survey: tests/agent-clis/survey/README.md). The role's `command` is the
//! agent's argv, where only `{model}` is filled in (e.g. `["gemini", "--acp", "-m",
//! "{model}"]`); the rest goes through the protocol. The command line runs the shim the
//! runner put in the sandbox (`$GATEHOUSE_ACP`, a read-only bind mount in Docker):
//!
//! `exec "$GATEHOUSE_ACP" --prompt-file P [--system-file S] [--resume ID]
//! [--transcript-file T] [--mcp JSON] [role args…] -- <agent argv>`
//!
//! The shim plays the editor — no `fs`, no `terminal` capability, so the agent reads, writes
//! and runs commands itself inside the sandbox — and prints one JSON object per line, read
//! by `acp/events.rs`. The role's `args` are the shim's options, before `--`: `--mode yolo`
//! (Gemini) or `--mode bypassPermissions` (Claude) for agents that would otherwise ask
//! permission (the shim allows every request anyway), `--timeout SECS` for a slow start.
//!
//! MCP servers go to the shim as `--mcp '<json>'`, the array `session/new` and
//! `session/load` carry as `mcpServers` in ACP's own shape (a stdio server's `command`,
//! `args` and `env` as `{name, value}` pairs; a remote one `type` `http` with its `url`
//! and an `Authorization: Bearer` header), the runner's address and the attempt's token
//! expanded by the shell. The shim refuses a remote server when the agent's `initialize`
//! answer does not offer `mcpCapabilities.http`.
//!
//! A role with `permissions` has them written, as JSON, to
//! `$HOME/.gatehouse/acp-permissions.json` by the command line, and the shim started with
//! `--permissions` on that file: it answers each `session/request_permission` from the
//! policy (`ask` through the runner's `/permission` endpoint, a person deciding), instead
//! of allowing every request. The role's `--mode` should then be one in which the agent
//! asks (Gemini's `default`, Claude's `default`), not `yolo` or `bypassPermissions`.
//!
//! A turn continues the session with `--resume <sessionId>` (`session/load`); the system
//! text is not sent again, the loaded session holds it. When the agent cannot load a
//! session (it does not offer `session/load`, or it fails, as in Gemini CLI 0.61), the
//! shim starts a new one and sends the conversation so far from `--transcript-file`, which
//! is why this executor reads the transcript. Where an agent keeps its sessions is its own
//! affair (under `$HOME`, the conversation's home), so the runner cannot look for them.
//!
//! The model API is whatever the agent speaks: the sandbox has the gateway's variables for
//! the role's provider (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`, `GOOGLE_GEMINI_BASE_URL` and
//! keys), which several agents read as they are; others need the role's `env` (e.g.
//! OpenCode's `OPENCODE_CONFIG_CONTENT`).

mod events;
mod report;

use serde_json::{Value, json};

use super::mcp_servers::{as_strs, bearer, program, variables};
use super::{Call, Cli, ModelApi, expand};
use crate::invocation::quote;
use crate::placeholder::{self, Piece};
use crate::role::{Role, RoleError};
use crate::trace::Events;
use crate::usage::{ParseError, Report};

/// The shim's path as the sandbox sees it, from the variable the runner sets; the shell
/// stops with a message in a sandbox the runner did not give it to.
const SHIM: &str = "\"${GATEHOUSE_ACP:?the runner gave this sandbox no gatehouse-acp}\"";

/// ACP session modes in which the surveyed agents run tools without asking: Gemini CLI's
/// `yolo` and `autoEdit`, Claude's (claude-agent-acp) `bypassPermissions` and
/// `acceptEdits`, codex-acp's `full-access`.
const UNASKING_MODES: [&str; 5] = [
    "yolo",
    "autoEdit",
    "bypassPermissions",
    "acceptEdits",
    "full-access",
];

/// Where the command line writes a role's `permissions` for the shim, under `$HOME`.
const PERMISSIONS_FILE: &str = ".gatehouse/acp-permissions.json";

pub(super) struct Acp;

impl Cli for Acp {
    fn name(&self) -> &'static str {
        "acp"
    }

    /// The role's `command` names the agent.
    fn program(&self) -> Option<&'static str> {
        None
    }

    fn install(&self) -> Option<&'static str> {
        None
    }

    /// Any: the agent's own.
    fn model_apis(&self) -> &'static [ModelApi] {
        &[]
    }

    /// Nothing in general: each agent has its own switches, set in the role's `env`.
    fn environment(&self, _role: &Role) -> Vec<(String, String)> {
        Vec::new()
    }

    fn command_line(&self, role: &Role, call: &Call<'_>) -> String {
        // `exec`: the shim is the job's process, so a signal to the job reaches it (and it
        // cancels the prompt) rather than ending a shell that would leave it running.
        let mut words = Vec::new();
        if let Some(permissions) = &role.permissions {
            let policy = serde_json::to_string(permissions).unwrap_or_default();
            words.push(super::home_file(PERMISSIONS_FILE, &policy, &[]));
            words.push("&&".to_owned());
        }
        words.extend([
            "exec".to_owned(),
            SHIM.to_owned(),
            "--prompt-file".to_owned(),
            quote(call.prompt_file),
        ]);
        if role.permissions.is_some() {
            words.push("--permissions".to_owned());
            words.push(format!("\"$HOME\"/{PERMISSIONS_FILE}"));
        }
        if let Some(system_file) = call.system_file {
            words.push("--system-file".to_owned());
            words.push(quote(system_file));
        }
        if let Some(id) = call.resume {
            words.push("--resume".to_owned());
            words.push(quote(id));
            if let Some(transcript) = call.transcript_file {
                words.push("--transcript-file".to_owned());
                words.push(quote(transcript));
            }
        }
        if !call.tools.mcp.is_empty() {
            let servers = &call.tools.mcp;
            words.push("--mcp".to_owned());
            words.push(expand(
                &mcp_servers(servers).to_string(),
                &as_strs(&variables(servers)),
            ));
        }
        words.extend(role.args.iter().map(|arg| quote(arg)));
        words.push("--".to_owned());
        words.extend(role.command.iter().map(|argument| {
            let mut filled = String::with_capacity(argument.len());
            for piece in placeholder::pieces(argument) {
                match piece {
                    Piece::Text(text) => filled.push_str(text),
                    Piece::Placeholder("model") => {
                        filled.push_str(role.model.as_deref().unwrap_or_default());
                    }
                    // Refused by `check`; written back as it was.
                    Piece::Placeholder(other) => {
                        filled.push('{');
                        filled.push_str(other);
                        filled.push('}');
                    }
                }
            }
            quote(&filled)
        }));
        words.join(" ")
    }

    /// The agent's argv: a program first, `{model}` the only placeholder, with a model.
    fn check(&self, role: &Role) -> Result<(), RoleError> {
        let Some(program) = role.command.first() else {
            return Err(RoleError::AgentCommandMissing);
        };
        if program.trim().is_empty() {
            return Err(RoleError::ProgramEmpty);
        }
        for argument in &role.command {
            for piece in placeholder::pieces(argument) {
                match piece {
                    Piece::Text(_) => {}
                    Piece::Placeholder("model") if role.model.is_none() => {
                        return Err(RoleError::ModelPlaceholderWithoutModel);
                    }
                    Piece::Placeholder("model") => {}
                    Piece::Placeholder(name) => {
                        return Err(RoleError::AgentPlaceholder {
                            name: name.to_owned(),
                            argument: argument.clone(),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// The shim decides every permission request the agent makes from the policy. What
    /// an agent does without asking (Gemini's read-only tools, any tool in `yolo` mode) is
    /// the agent's affair: the role's `--mode` must be one that asks.
    /// A `--mode` in which the agent runs tools without asking (`yolo`,
    /// `bypassPermissions`, …) would leave the policy unconsulted: refused.
    fn check_permissions(
        &self,
        role: &Role,
        _permissions: &crate::permission::Permissions,
    ) -> Result<(), RoleError> {
        let mode = role
            .args
            .windows(2)
            .find(|pair| pair[0] == "--mode")
            .map(|pair| pair[1].as_str());
        match mode {
            Some(mode) if UNASKING_MODES.contains(&mode) => Err(RoleError::ModeNeverAsks {
                mode: mode.to_owned(),
            }),
            _ => Ok(()),
        }
    }

    /// For a session the agent cannot load: the shim starts over with it.
    fn reads_transcript(&self) -> bool {
        true
    }

    /// Where most ACP agents look (goose, Codex's, Gemini CLI's, OpenCode's; Claude
    /// Code's): the agent behind the shim is the role's own, so the skills are also listed
    /// in the system text.
    fn skills_homes(&self) -> &'static [&'static str] {
        &["\"$HOME/.agents/skills\"", "\"$HOME/.claude/skills\""]
    }

    fn reads_skills(&self) -> bool {
        false
    }

    fn events(&self) -> Box<dyn Events> {
        Box::<events::Reader>::default()
    }

    fn report(&self, text: &str, model: &str) -> Result<Report, ParseError> {
        report::report(text, model)
            .ok_or_else(|| crate::parse::no_result(super::Executor::Acp, text))
    }
}

/// ACP's `mcpServers`: `[{name, command, args, env: [{name, value}]}, {type: "http", name,
/// url, headers: [{name, value}]}]`.
fn mcp_servers(servers: &[crate::McpServer]) -> Value {
    let entries = servers.iter().map(|server| match &server.transport {
        crate::McpTransport::Stdio { command, env } => {
            let (program, args) = program(command);
            let env: Vec<Value> = env
                .iter()
                .map(|(name, value)| json!({"name": name, "value": value}))
                .collect();
            json!({"name": server.name, "command": program, "args": args, "env": env})
        }
        crate::McpTransport::Http { url, token_env } => {
            let headers: Vec<Value> = token_env
                .iter()
                .map(|token_env| json!({"name": "Authorization", "value": bearer(token_env)}))
                .collect();
            json!({"type": "http", "name": server.name, "url": url, "headers": headers})
        }
    });
    Value::Array(entries.collect())
}
