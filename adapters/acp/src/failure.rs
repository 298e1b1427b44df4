//! Why a run ends without a result: each one line that names the agent's command (a role
//! may run any agent, so "the agent" alone would not say which) and, where there is one,
//! what to change. The line becomes the `error` output line and the turn's failure.

use std::process::ExitStatus;
use std::time::Duration;

/// A run that ended without a prompt result.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error("cannot read {what} {path}: {source}")]
    Input {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Spawn(#[from] crate::agent::SpawnError),
    #[error("agent `{command}` {ended} before answering `{method}`{stderr}{garbage}")]
    Exited {
        command: String,
        method: &'static str,
        ended: String,
        stderr: String,
        garbage: String,
    },
    #[error(
        "agent `{command}` did not answer `{method}` within {secs} s{garbage}; if it is slow to \
         start, raise `--timeout`"
    )]
    Timeout {
        command: String,
        method: &'static str,
        secs: u64,
        garbage: String,
    },
    #[error(
        "agent `{command}` speaks ACP protocol version {version}; gatehouse-acp speaks version \
         1: use a release of the agent that supports version 1"
    )]
    Version { command: String, version: String },
    #[error(
        "agent `{command}` needs a login ({message}; its auth methods: {methods}), which it \
         cannot do inside a sandbox: give the role the agent's API key (its `env`, or a \
         `provider` so it goes through the gateway) or the settings file that selects key auth"
    )]
    AuthRequired {
        command: String,
        message: String,
        methods: String,
    },
    #[error("agent `{command}` refused `{method}`: {message} (code {code})")]
    Refused {
        command: String,
        method: &'static str,
        message: String,
        code: i64,
    },
    #[error(
        "agent `{command}` cannot continue session {session}: {reason}; and no \
         `--transcript-file` was given to start a new session with the conversation so far"
    )]
    CannotResume {
        command: String,
        session: String,
        reason: String,
    },
    #[error(
        "agent `{command}` cannot reach MCP server `{server}`: it is a remote ({kind}) server \
         and the agent does not offer `mcpCapabilities.{kind}`; use a stdio server for this \
         agent, or an agent that takes remote ones"
    )]
    McpTransport {
        command: String,
        server: String,
        kind: String,
    },
    #[error("agent `{command}` has no mode `{mode}`{modes}")]
    NoSuchMode {
        command: String,
        mode: String,
        modes: String,
    },
    #[error("stopped by signal {signal} before the prompt was sent to agent `{command}`")]
    Interrupted { command: String, signal: i32 },
    #[error(
        "stopped by signal {signal}: agent `{command}` did not end its prompt within {secs} s \
         of `session/cancel`, so its processes were killed"
    )]
    CancelIgnored {
        command: String,
        signal: i32,
        secs: u64,
    },
}

impl Failure {
    /// Words for how the agent ended: its status if it exited, else that its output ended.
    pub fn ended(status: Option<ExitStatus>) -> String {
        use std::os::unix::process::ExitStatusExt;
        match status {
            Some(status) => match (status.code(), status.signal()) {
                (Some(code), _) => format!("exited with status {code}"),
                (None, Some(signal)) => format!("was killed by signal {signal}"),
                (None, None) => "exited".to_owned(),
            },
            None => "closed its output".to_owned(),
        }
    }

    /// The seconds of a limit, as a message says them.
    pub fn secs(limit: Duration) -> u64 {
        limit.as_secs().max(1)
    }
}
