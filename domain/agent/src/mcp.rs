//! `[mcp.NAME]`: the MCP servers a configuration defines, as the runner needs them to hand
//! an attempt's CLI its role's and project's servers ([`mcp_servers`]). A server is a
//! program the CLI starts inside the sandbox (stdio), or a remote streamable-HTTP server
//! the sandbox reaches only through the runner's tools endpoint, which adds the server's
//! secret there: the definition here holds no secret, so nothing of it can leak into a
//! sandbox.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::tools::{McpServer, McpTransport};

/// The variable holding the runner's tools endpoint as the sandbox reaches it
/// (`http://127.0.0.1:8720`); remote servers are at `${GATEHOUSE_TOOLS_URL}/mcp/<NAME>`.
pub const TOOLS_URL_VAR: &str = "GATEHOUSE_TOOLS_URL";

/// The variable holding the attempt's bearer token for the tools endpoint, revoked when the
/// attempt ends.
pub const TOOLS_TOKEN_VAR: &str = "GATEHOUSE_TOOLS_TOKEN";

/// Gatehouse's own MCP server's name, which no `[mcp.NAME]` may take.
pub const GATEHOUSE_MCP: &str = "gatehouse";

/// The longest server name: it prefixes every tool name (`mcp__<name>__<tool>`), which
/// some CLIs bound (64 characters in Claude Code).
pub const MAX_MCP_NAME_LEN: usize = 32;

/// The most MCP servers one attempt gets (role's and project's together): each is a
/// process or a connection the CLI opens before it starts work.
pub const MAX_MCP_SERVERS: usize = 16;

/// One `[mcp.NAME]` without its secret: where the CLI finds the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "transport", deny_unknown_fields)]
pub enum McpDefinition {
    /// A program the CLI starts inside the sandbox; the sandbox's image must have it.
    Stdio {
        /// The argv.
        command: Vec<String>,
        /// Variables it runs with.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
    },
    /// A streamable-HTTP server the runner forwards to, adding its secret; the sandbox
    /// reaches it at `${GATEHOUSE_TOOLS_URL}/mcp/<NAME>` with the attempt's token.
    Remote,
}

/// Why an MCP server name or definition cannot be used; each message says what to change.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum McpError {
    /// A name outside `[a-z0-9_-]{1,32}`.
    #[error(
        "MCP server name {name:?} is not 1 to {MAX_MCP_NAME_LEN} lowercase letters, digits, \
         `-` and `_`; rename it (it prefixes the server's tool names)"
    )]
    BadName {
        /// The name as written.
        name: String,
    },
    /// `[mcp.gatehouse]`, or a role naming `gatehouse`.
    #[error(
        "the MCP server name \"{GATEHOUSE_MCP}\" is Gatehouse's own server, attached to every \
         agent already; pick another name"
    )]
    Reserved,
    /// A name that no `[mcp.NAME]` defines.
    #[error("MCP server `{name}` is not configured (add [mcp.{name}]); {known}")]
    Unknown {
        /// The name as written.
        name: String,
        /// The servers that are configured, for the message.
        known: String,
    },
    /// The same name twice in one list.
    #[error("MCP server `{name}` is listed twice; list it once")]
    Twice {
        /// The name.
        name: String,
    },
    /// More servers than [`MAX_MCP_SERVERS`].
    #[error(
        "{count} MCP servers for one agent; at most {MAX_MCP_SERVERS} are allowed, since the \
         CLI starts each one before it works"
    )]
    TooMany {
        /// How many.
        count: usize,
    },
    /// `command = []` or a blank program.
    #[error(
        "`command` must start with the program to run inside the sandbox, e.g. command = \
         [\"docs-mcp\", \"--stdio\"]"
    )]
    ProgramEmpty,
    /// An `env` name a shell or the CLIs would not take.
    #[error(
        "`env` variable name {name:?} is not letters, digits and `_` starting with a letter \
         or `_`; rename it"
    )]
    BadEnvName {
        /// The name as written.
        name: String,
    },
    /// A NUL character, which no argv entry or variable can carry.
    #[error("`{field}` contains a NUL character; remove it")]
    Nul {
        /// The key it is in.
        field: &'static str,
    },
}

/// Accepts a server name: 1 to [`MAX_MCP_NAME_LEN`] of `[a-z0-9_-]`, not `gatehouse`.
pub fn check_mcp_name(name: &str) -> Result<(), McpError> {
    let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_';
    if name.is_empty() || name.len() > MAX_MCP_NAME_LEN || !name.chars().all(plain) {
        return Err(McpError::BadName {
            name: name.to_owned(),
        });
    }
    if name == GATEHOUSE_MCP {
        return Err(McpError::Reserved);
    }
    Ok(())
}

/// Accepts a list of server names (a role's or a project's `mcp`): each a valid name, none
/// twice, at most [`MAX_MCP_SERVERS`].
pub fn check_mcp_list(names: &[String]) -> Result<(), McpError> {
    if names.len() > MAX_MCP_SERVERS {
        return Err(McpError::TooMany { count: names.len() });
    }
    let mut seen = BTreeSet::new();
    for name in names {
        check_mcp_name(name)?;
        if !seen.insert(name.as_str()) {
            return Err(McpError::Twice { name: name.clone() });
        }
    }
    Ok(())
}

impl McpDefinition {
    /// Checks what serde cannot: a program to run, variable names a shell takes, no NUL.
    pub fn check(&self) -> Result<(), McpError> {
        let Self::Stdio { command, env } = self else {
            return Ok(());
        };
        if command
            .first()
            .is_none_or(|program| program.trim().is_empty())
        {
            return Err(McpError::ProgramEmpty);
        }
        if command.iter().any(|word| word.contains('\0')) {
            return Err(McpError::Nul { field: "command" });
        }
        for (name, value) in env {
            let mut chars = name.chars();
            let first_ok = chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
            if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(McpError::BadEnvName { name: name.clone() });
            }
            if value.contains('\0') {
                return Err(McpError::Nul { field: "env" });
            }
        }
        Ok(())
    }

    /// The server as the sandbox reaches it, under `name`.
    pub fn server(&self, name: &str) -> McpServer {
        let transport = match self {
            Self::Stdio { command, env } => McpTransport::Stdio {
                command: command.clone(),
                env: env.clone(),
            },
            Self::Remote => McpTransport::Http {
                url: remote_url(name),
                token_env: Some(TOOLS_TOKEN_VAR.to_owned()),
            },
        };
        McpServer {
            name: name.to_owned(),
            transport,
        }
    }
}

/// Where the sandbox reaches the remote server `name`: the runner's tools endpoint, which
/// forwards to the configured URL with the server's secret added.
pub fn remote_url(name: &str) -> String {
    format!("${{{TOOLS_URL_VAR}}}/mcp/{name}")
}

/// The MCP servers an attempt's CLI gets: the role's `mcp`, then the project's that the
/// role did not name already, each as `defined` says. Refuses a name not defined (the
/// configuration check refuses it first; a role frozen by a run may name one removed
/// since) and more than [`MAX_MCP_SERVERS`] in all. Gatehouse's own server is not among
/// them: the runner adds it.
pub fn mcp_servers(
    role: &[String],
    project: &[String],
    defined: &BTreeMap<String, McpDefinition>,
) -> Result<Vec<McpServer>, McpError> {
    let mut seen = BTreeSet::new();
    let mut servers = Vec::new();
    for name in role.iter().chain(project) {
        if !seen.insert(name.as_str()) {
            continue;
        }
        let Some(definition) = defined.get(name) else {
            return Err(unknown_mcp(name, defined));
        };
        servers.push(definition.server(name));
    }
    if servers.len() > MAX_MCP_SERVERS {
        return Err(McpError::TooMany {
            count: servers.len(),
        });
    }
    Ok(servers)
}

/// [`McpError::Unknown`] for `name`, listing what is configured.
pub fn unknown_mcp<T>(name: &str, defined: &BTreeMap<String, T>) -> McpError {
    let known = if defined.is_empty() {
        "no [mcp.NAME] is configured".to_owned()
    } else {
        format!(
            "the MCP servers are {}",
            defined.keys().cloned().collect::<Vec<_>>().join(", ")
        )
    };
    McpError::Unknown {
        name: name.to_owned(),
        known,
    }
}
