//! Pre-tool hooks: how CLIs without a permission prompt Gatehouse can answer still obey a
//! role's `permissions`, `ask` included.
//!
//! Gemini CLI, Codex and Copilot CLI run a configured command before each tool call and
//! obey its answer; OpenCode and Kilo run plugins that can do the same. Gatehouse's
//! command is `"$GATEHOUSE_ACP" hook NAME` ([`Hook::command`]): the shim the runner mounts
//! into the sandbox reads the CLI's event on stdin, names the call as Claude Code names
//! its tools ([`Hook::tool_use`], so one policy reads every CLI), asks the runner
//! (`POST ${GATEHOUSE_TOOLS_URL}/permission`, which decides by the role's `permissions`,
//! puts an `ask` to a person and records every decision in the attempt's trace), and
//! prints the answer in the CLI's own terms ([`Hook::answer`]).
//!
//! Every failure — an event that does not read, a runner that cannot be reached, an answer
//! that does not come — is a deny: `ask` never becomes allow. Each CLI's mapping is its own
//! file under `hook/`, with the real events it was written from in its tests.

mod codex;
mod copilot;
mod gemini;
mod kilo;
mod opencode;

use serde_json::{Value, json};

use super::ToolUse;

/// The most of a hook event read from stdin; a tool call's arguments are far smaller (a
/// larger one is denied, saying so).
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// A CLI whose pre-tool hook Gatehouse answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// Gemini CLI's `BeforeTool` hook (`hook/gemini.rs`).
    Gemini,
    /// Codex's `PreToolUse` hook (`hook/codex.rs`).
    Codex,
    /// Copilot CLI's `preToolUse` hook (`hook/copilot.rs`).
    Copilot,
    /// OpenCode, through the plugin its command line writes (`hook/opencode.rs`).
    OpenCode,
    /// Kilo, OpenCode's fork, with tools of its own (`hook/kilo.rs`).
    Kilo,
}

impl Hook {
    /// Every CLI with a hook, for [`Hook::from_name`].
    pub const ALL: &'static [Self] = &[
        Self::Gemini,
        Self::Codex,
        Self::Copilot,
        Self::OpenCode,
        Self::Kilo,
    ];
}

/// What the hook command prints and how it exits, as the CLI reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookAnswer {
    /// The CLI's decision document, when it reads one.
    pub stdout: String,
    /// Words for the CLI's log (and, for some, for the model) when the call is denied.
    pub stderr: String,
    /// The exit status the CLI reads as the decision (or as "read stdout").
    pub exit: i32,
}

impl Hook {
    /// By the name `gatehouse-acp hook NAME` is given.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|hook| hook.name() == name)
    }

    /// As `gatehouse-acp hook` is given it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Gemini => gemini::NAME,
            Self::Codex => "codex",
            Self::Copilot => "copilot",
            Self::OpenCode => "opencode",
            Self::Kilo => "kilo",
        }
    }

    /// The `sh` command the CLI's hook configuration runs: the runner's shim, which fails
    /// loudly (and the CLI denies) when the sandbox has none.
    pub fn command(self) -> String {
        format!(
            "\"${{GATEHOUSE_ACP:?the runner gave this sandbox no gatehouse-acp}}\" hook {}",
            self.name()
        )
    }

    /// The call a pre-tool event describes, named as Claude Code names its tools (`Bash`
    /// with `command`, `Edit` with `file_path`, `mcp__SERVER__TOOL`); `Err` says why the
    /// event does not read, and the call is denied.
    pub fn tool_use(self, event: &Value) -> Result<ToolUse, String> {
        match self {
            Self::Gemini => gemini::tool_use(event),
            Self::Codex => codex::tool_use(event),
            Self::Copilot => copilot::tool_use(event),
            Self::OpenCode => opencode::tool_use(event),
            Self::Kilo => kilo::tool_use(event),
        }
    }

    /// The answer to the CLI: the call runs when `allow`, else it is refused and the agent
    /// reads `reason`.
    pub fn answer(self, allow: bool, reason: &str) -> HookAnswer {
        match self {
            Self::Gemini => gemini::answer(allow, reason),
            Self::Codex => codex::answer(allow, reason),
            Self::Copilot => copilot::answer(allow, reason),
            Self::OpenCode | Self::Kilo => opencode::answer(allow, reason),
        }
    }
}

/// The reason a deny gives when it has none (some CLIs run a call denied with an empty
/// one).
const NO_REASON: &str = "Gatehouse denied the call";

impl HookAnswer {
    /// Exit 0 with nothing printed: the call runs (Codex, Copilot CLI).
    fn silent_allow() -> Self {
        Self {
            stdout: String::new(),
            stderr: String::new(),
            exit: 0,
        }
    }

    /// The decision as `{"decision": "allow"}` under exit 0, or `{"decision": "deny",
    /// "reason"}` with `reason` on stderr too under `deny_exit` (Gemini CLI, OpenCode's
    /// plugin).
    fn decision(allow: bool, reason: &str, deny_exit: i32) -> Self {
        if allow {
            return Self {
                stdout: json!({"decision": "allow"}).to_string(),
                stderr: String::new(),
                exit: 0,
            };
        }
        Self {
            stdout: json!({"decision": "deny", "reason": reason}).to_string(),
            stderr: reason.to_owned(),
            exit: deny_exit,
        }
    }
}

/// `reason` trimmed, or [`NO_REASON`] when that leaves nothing.
fn reason_given(reason: &str) -> &str {
    match reason.trim() {
        "" => NO_REASON,
        reason => reason,
    }
}

/// The event's tool name (`name`, its field), which must be a non-empty string.
fn tool_name(name: Option<&Value>) -> Result<&str, &'static str> {
    name.and_then(Value::as_str)
        .filter(|name| !name.is_empty())
        .ok_or("the event names no tool")
}

/// A call of MCP server `server`'s `tool`, named as Claude Code names it
/// (`mcp__SERVER__TOOL`).
fn mcp_call(server: &str, tool: &str, input: Value) -> ToolUse {
    ToolUse {
        tool: format!("mcp__{server}__{tool}"),
        input,
    }
}

/// `path` as an absolute path, against `cwd` when it is relative; `None` when it cannot be
/// (no absolute `cwd`, or an empty path): a rule naming an absolute folder must not miss it.
fn absolute(path: &str, cwd: Option<&str>) -> Option<String> {
    if path.is_empty() || path.chars().any(char::is_control) {
        return None;
    }
    if path.starts_with('/') {
        return Some(path.to_owned());
    }
    let cwd = cwd.filter(|cwd| cwd.starts_with('/'))?;
    Some(format!("{}/{path}", cwd.trim_end_matches('/')))
}
