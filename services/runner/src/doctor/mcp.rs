//! Whether a role's stdio MCP servers are there: the check an attempt's script makes before
//! its CLI starts ([`gatehouse_agent::mcp_preflight`]), run as a job in the role's profile,
//! each server in a subshell of its own so that every missing one is named.

use gatehouse_agent::{McpServer, McpTransport, Role, mcp_preflight};
use gatehouse_sandbox::{ExitStatus, Profile};
use tokio_util::sync::CancellationToken;

use super::Outcome;
use super::job::{self, JOB_TIMEOUT};
use crate::runner::Runner;

/// Looks for the programs of the role's stdio MCP servers in `profile`; `None` when the
/// role has none.
pub(super) async fn check(
    runner: &Runner,
    role_name: &str,
    role: &Role,
    profile: &Profile,
    stop: &CancellationToken,
) -> Option<Outcome> {
    let tools = match runner.options.mcp.tools(role, "") {
        Ok(tools) => tools,
        Err(why) => return Some(Outcome::Failed(why)),
    };
    let stdio: Vec<&McpServer> = tools
        .mcp
        .iter()
        .filter(|s| matches!(s.transport, McpTransport::Stdio { .. }))
        .collect();
    if stdio.is_empty() {
        return None;
    }
    let place = crate::agent::sandbox_place(profile);
    let script = stdio
        .iter()
        .map(|server| format!("( {})", mcp_preflight(std::slice::from_ref(*server), place)))
        .collect::<Vec<_>>()
        .join("; ");
    let ran = match job::run(runner, role_name, role, profile, script, stop).await {
        Ok(ran) => ran,
        Err(why) => return Some(Outcome::Failed(why)),
    };
    let missing: Vec<&str> = ran
        .stderr
        .iter()
        .map(|l| l.trim())
        .filter(|l| l.starts_with("MCP server `"))
        .collect();
    Some(match ran.exit.status {
        ExitStatus::TimedOut => Outcome::Failed(format!(
            "looking for the MCP servers' programs took over {}s: check that the sandbox starts",
            JOB_TIMEOUT.as_secs()
        )),
        ExitStatus::Cancelled => Outcome::Failed("stopped before it ended".to_owned()),
        ExitStatus::Exited(_) if !missing.is_empty() => Outcome::Failed(missing.join("; ")),
        ExitStatus::Exited(0) => Outcome::Passed(format!(
            "its stdio MCP servers' programs are in the sandbox: {}",
            stdio
                .iter()
                .map(|s| format!("{} (`{}`)", s.name, program(s)))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        status => Outcome::Failed(format!(
            "looking for the MCP servers' programs ended with {status:?}"
        )),
    })
}

/// A stdio server's program.
fn program(server: &McpServer) -> &str {
    match &server.transport {
        McpTransport::Stdio { command, .. } => command.first().map_or("", String::as_str),
        McpTransport::Http { .. } => "",
    }
}
