//! What an attempt hands its CLI besides the prompt: the MCP servers it may call (the
//! role's and project's `[mcp.NAME]`, and Gatehouse's own), the MCP tool that decides its
//! permission prompts, and the skills copied into its sandbox. The runner resolves them per
//! attempt; each executor hands them to its CLI its own way (`src/executor/`).

use std::collections::BTreeMap;

/// One MCP server as the sandbox reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    /// The name the CLI knows it by, and its tools' prefix (`mcp__<name>__<tool>` in
    /// Claude Code).
    pub name: String,
    /// How the CLI reaches it.
    pub transport: McpTransport,
}

/// How a CLI reaches an MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A program the CLI starts inside the sandbox, speaking MCP on its stdin and stdout.
    Stdio {
        /// The argv; the program must be in the sandbox's image.
        command: Vec<String>,
        /// Variables the server runs with.
        env: BTreeMap<String, String>,
    },
    /// Streamable HTTP, at an address of the runner's (Gatehouse's own server, or a remote
    /// server forwarded by the runner with its secret added there, never in the sandbox).
    Http {
        /// The URL as the sandbox reaches it. It may name the attempt's variables as
        /// `${NAME}` (the runner's tools address), which the shell expands.
        url: String,
        /// The variable holding the bearer token the CLI sends (`Authorization: Bearer`).
        token_env: Option<String>,
    },
}

/// Everything an attempt's CLI gets besides its prompt and system text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tools {
    /// The MCP servers, Gatehouse's own first when the runner serves it.
    pub mcp: Vec<McpServer>,
    /// The MCP tool (`mcp__gatehouse__permission`) a CLI that supports it asks before a
    /// tool call its own rules neither allow nor deny; `None` when the runner serves no
    /// such tool.
    pub permission_tool: Option<String>,
    /// The folder, as the sandbox sees it, holding one folder per skill (`<name>/SKILL.md`);
    /// each executor copies it to where its CLI looks for skills.
    pub skills_dir: Option<String>,
}

impl Tools {
    /// No MCP server, no permission tool, no skills: what a CLI ran with before tools.
    pub fn none() -> Self {
        Self::default()
    }
}
