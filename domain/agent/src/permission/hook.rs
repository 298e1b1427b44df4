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

use serde_json::Value;

use super::ToolUse;

mod kilo;
mod opencode;

/// The most of a hook event read from stdin; a tool call's arguments are far smaller (a
/// larger one is denied, saying so).
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// A CLI whose pre-tool hook Gatehouse answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// Gemini CLI's `BeforeTool` hook ([`gemini`]).
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
