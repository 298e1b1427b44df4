//! Agent nodes, without I/O.
//!
//! An SOP's `agent` node runs a coding-agent CLI (Claude Code, Codex, or a program of the
//! user's own) inside a sandbox. This crate holds the logic the runner needs for that and
//! nothing that touches files, processes or the network:
//!
//! - [`Role`]: `[roles.<name>]` in the configuration, checked when it loads;
//! - [`Executor`]: the CLI a role runs, each one's own ways in one file of `src/executor/`;
//! - [`render_prompt`] / [`check_template`]: the node's prompt template;
//! - [`invocation`]: the shell command that runs the role's CLI on the rendered prompt, and
//!   [`turn_invocation`] for a conversation turn, continuing the CLI's session, and
//!   [`SessionFiles`]: where the CLI keeps the sessions it continues;
//! - [`parse_report`]: token usage, the failure and the final message, read from the CLI's
//!   stdout;
//! - [`cost`]: that usage priced from `[pricing]`;
//! - [`Limit`]: a budget in dollars or tokens, as the configuration writes it;
//! - [`Permissions`]: which tool calls a role's agent may make, must ask for, or may not;
//! - [`Tools`]: the MCP servers, permission tool and skills an attempt hands its CLI, and
//!   [`mcp_servers`]: a role's and project's `[mcp.NAME]` servers as its CLI reaches them;
//! - [`SkillFiles`]: a skill's folder, checked, and the bundle its content hash is of;
//! - [`TraceParser`]: the tools an attempt called, read from the CLI's output as it runs.

mod executor;
mod invocation;
mod limit;
mod mcp;
mod mcp_preflight;
mod parse;
pub mod permission;
mod placeholder;
mod price;
mod prompt;
mod role;
mod sessions;
mod skill;
mod tools;
mod trace;
mod usage;

pub use executor::{Executor, ModelApi};
pub use invocation::{
    MAX_SESSION_ID_LEN, Session, SessionIdError, check_session_id, invocation, turn_invocation,
};
pub use limit::{Limit, LimitError, WARN_PERCENT, share, show_tokens, show_usd};
pub use mcp::{
    GATEHOUSE_MCP, MAX_MCP_NAME_LEN, MAX_MCP_SERVERS, McpDefinition, McpError, TOOLS_TOKEN_VAR,
    TOOLS_URL_VAR, check_mcp_list, check_mcp_name, mcp_servers, remote_url, unknown_mcp,
};
pub use mcp_preflight::{MCP_PROGRAM_MISSING, SandboxPlace, mcp_preflight, missing_mcp_program};
pub use parse::parse_report;
pub use permission::{Decision, Permissions, PermissionsError, Rule, RuleError, ToolUse, Verdict};
pub use price::{Price, PriceTable, cost};
pub use prompt::{PromptContext, PromptError, RequirementView, check_template, render_prompt};
pub use role::{DEFAULT_MAX_RETRIES, MAX_RETRIES_LIMIT, Role, RoleError};
pub use sessions::SessionFiles;
pub use skill::{
    FrontMatter, MAX_DEPTH, MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES, PINNED_KIND, PinnedSkill,
    REPOSITORY_SKILLS_DIR, SKILL_FILE, SkillConfig, SkillError, SkillFiles, SkillSource,
    check_path, check_skill_name, front_matter, skills_note,
};
pub use tools::{McpServer, McpTransport, Tools};
pub use trace::{Progress, Retry, ToolCall, Trace, TraceParser};
pub use usage::{ModelUsage, ParseError, Report};
