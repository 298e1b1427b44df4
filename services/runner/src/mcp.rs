//! Gatehouse's MCP server for agents, served by the runner to the sandboxes it runs.
//!
//! An agent inside a run or a conversation's turn can ask Gatehouse for things its CLI
//! cannot do alone: ask a person and wait for the answer (`request_approval`), hand over a
//! document as an artifact (`publish_artifact`), read the requirement and its node's inputs
//! (`get_requirement`, `get_inputs`) and say how it is getting on (`post_progress`). The
//! runner serves it as streamable HTTP at `/mcp/gatehouse` beside the model gateway, on a
//! Unix socket (reached by an isolated sandbox through its relay) and a loopback port; each
//! attempt gets a token of its own ([`Desk::open`]) that stops working when its
//! [`Ticket`] is dropped, so an attempt that ended cannot ask anything any more.
//!
//! Everything an agent sends is untrusted: arguments are bounded and checked, an artifact
//! is written into the attempt's own artifact directory and then checked like any other,
//! and a question's text is shown to people as text, never interpreted.

mod ask;
mod attempt;
mod permission;
mod server;
mod servers;
#[cfg(test)]
mod tests;
mod tools;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

pub(crate) use attempt::{ASK_TIMEOUT, AttemptTools};
pub(crate) use server::serve;
pub use servers::McpServers;

/// The path Gatehouse's own server is served at.
pub(crate) const GATEHOUSE_PATH: &str = "/mcp/gatehouse";
/// The name CLIs know Gatehouse's server by; its tools are `mcp__gatehouse__<tool>`.
pub(crate) const SERVER_NAME: &str = "gatehouse";
/// The tool Claude Code asks about what its rules leave open (`--permission-prompt-tool`).
pub(crate) const PERMISSION_TOOL: &str = "mcp__gatehouse__permission";
/// The variable holding the tools' address in the sandbox.
pub(crate) const URL_VAR: &str = "GATEHOUSE_TOOLS_URL";
/// The variable holding the attempt's token in the sandbox.
pub(crate) const TOKEN_VAR: &str = "GATEHOUSE_TOOLS_TOKEN";
/// The prefix of every tools token, so one found in a log is recognised.
const TOKEN_PREFIX: &str = "gh-tools-";

/// The attempts the runner serves tools to, by token, and the remote `[mcp.NAME]`
/// servers it forwards them to.
#[derive(Default, Clone)]
pub(crate) struct Desk {
    attempts: Arc<Mutex<HashMap<String, Arc<AttemptTools>>>>,
    remotes: Arc<BTreeMap<String, Arc<gatehouse_gateway::RemoteMcp>>>,
}

impl Desk {
    /// A desk forwarding to `remotes` (by name), the secrets in them.
    pub(crate) fn new(remotes: BTreeMap<String, Arc<gatehouse_gateway::RemoteMcp>>) -> Self {
        Self {
            attempts: Arc::default(),
            remotes: Arc::new(remotes),
        }
    }

    /// The remote server `name`'s forwarder.
    pub(crate) fn remote(&self, name: &str) -> Option<&Arc<gatehouse_gateway::RemoteMcp>> {
        self.remotes.get(name)
    }

    /// Serves `attempt` under a fresh token until the returned ticket is dropped.
    pub(crate) fn open(&self, attempt: Arc<AttemptTools>) -> Ticket {
        let token = format!(
            "{TOKEN_PREFIX}{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        if let Ok(mut attempts) = self.attempts.lock() {
            attempts.insert(token.clone(), attempt.clone());
        }
        Ticket {
            token,
            desk: self.clone(),
            attempt,
        }
    }

    /// The attempt a request's bearer token belongs to, while its ticket lives.
    pub(crate) fn attempt(&self, token: &str) -> Option<Arc<AttemptTools>> {
        self.attempts.lock().ok()?.get(token).cloned()
    }

    fn close(&self, token: &str) {
        if let Ok(mut attempts) = self.attempts.lock() {
            attempts.remove(token);
        }
    }
}

/// One attempt's access to its tools: its token works until this is dropped.
pub(crate) struct Ticket {
    token: String,
    desk: Desk,
    attempt: Arc<AttemptTools>,
}

impl Ticket {
    /// The token to hand the sandbox.
    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    /// The permission decisions made for the attempt so far, taken out for its trace.
    pub(crate) fn take_decisions(&self) -> Vec<gatehouse_agent::ToolCall> {
        self.attempt.take_decisions()
    }

    /// Stops the token working at once (a question it waits on stays asked); idempotent.
    pub(crate) fn revoke(&self) {
        self.desk.close(&self.token);
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.revoke();
    }
}

/// The MCP servers an attempt's CLI gets: Gatehouse's own first when the sandbox reaches
/// the runner's tools (`served`), then `configured`, the role's and project's. A CLI that
/// takes no MCP servers gets none of them. An ACP agent is not given Gatehouse's own
/// server unasked: some (goose) run with exactly the servers `session/new` names,
/// dropping their built-in tools; its permission requests reach the runner through the
/// shim all the same.
pub(crate) fn with_gatehouse(
    role: &gatehouse_agent::Role,
    configured: gatehouse_agent::Tools,
    served: bool,
) -> gatehouse_agent::Tools {
    let mut tools = configured;
    if served && role.executor.takes_mcp() && role.executor != gatehouse_agent::Executor::Acp {
        tools.mcp.insert(0, server_entry());
        tools.permission_tool = Some(PERMISSION_TOOL.to_owned());
    }
    tools
}

/// Puts the permission decisions Gatehouse made for an attempt into its trace, among the
/// CLI's own calls in the order they happened.
pub(crate) fn add_decisions(
    trace: &mut gatehouse_agent::Trace,
    decisions: Vec<gatehouse_agent::ToolCall>,
) {
    if decisions.is_empty() {
        return;
    }
    trace.tools.extend(decisions);
    trace.tools.sort_by_key(|call| call.started_ms);
}

/// The names of the remote servers among `tools`, which the attempt may reach through the
/// runner.
pub(crate) fn remote_names(tools: &gatehouse_agent::Tools) -> Vec<String> {
    tools
        .mcp
        .iter()
        .filter(|server| matches!(server.transport, gatehouse_agent::McpTransport::Http { .. }))
        .map(|server| server.name.clone())
        .collect()
}

/// Gatehouse's server as a CLI reaches it from the sandbox: streamable HTTP at the tools'
/// address, with the attempt's token.
fn server_entry() -> gatehouse_agent::McpServer {
    gatehouse_agent::McpServer {
        name: SERVER_NAME.to_owned(),
        transport: gatehouse_agent::McpTransport::Http {
            url: format!("${{{URL_VAR}}}{GATEHOUSE_PATH}"),
            token_env: Some(TOKEN_VAR.to_owned()),
        },
    }
}
