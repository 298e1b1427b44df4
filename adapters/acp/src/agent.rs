//! The agent's process: started in a process group of its own with piped stdin and stdout
//! (the protocol) and its stderr passed through to ours, and ended by signalling the whole
//! group. Agents start helpers (an npm launcher runs the native binary, agents run
//! language servers and shells), and some ignore stdin's end (claude-agent-acp, codex-acp,
//! goose) or do not forward signals (codex-acp's launcher), so only the group is a
//! reliable handle.

use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::args::Invocation;

/// How much of the agent's stderr is passed through: enough for any diagnosis, bounded so
/// a chatty agent cannot fill the runner's log.
const MAX_STDERR_BYTES: usize = 1024 * 1024;

/// How much of the end of the agent's stderr is kept for a failure's message.
const STDERR_TAIL_CHARS: usize = 400;

/// How long an agent gets to exit after its stdin closed, and then after SIGTERM.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// A running agent.
#[derive(Debug)]
pub struct Agent {
    child: Child,
    /// The process group, which is the agent's own pid; `None` if the pid was unknown.
    group: Option<Pid>,
    /// The end of what the agent wrote to stderr.
    stderr_tail: Arc<Mutex<String>>,
}

/// Why the agent did not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot run `{command}`: {source}{hint}")]
pub struct SpawnError {
    command: String,
    source: std::io::Error,
    hint: &'static str,
}

impl Agent {
    /// Starts the agent in the current directory, in a new process group.
    pub fn spawn(invocation: &Invocation) -> Result<(Self, ChildStdin, ChildStdout), SpawnError> {
        let spawn_error = |source: std::io::Error| {
            let hint = if source.kind() == std::io::ErrorKind::NotFound {
                " (is the agent installed in the sandbox's image and on its PATH?)"
            } else {
                ""
            };
            SpawnError {
                command: invocation.command(),
                source,
                hint,
            }
        };
        let mut child = Command::new(&invocation.program)
            .args(&invocation.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(spawn_error)?;
        let missing = || spawn_error(std::io::Error::other("its stdio was not piped"));
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        let stderr_tail = Arc::new(Mutex::new(String::new()));
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(pass_stderr(stderr, Arc::clone(&stderr_tail)));
        }
        let group = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(Pid::from_raw);
        Ok((
            Self {
                child,
                group,
                stderr_tail,
            },
            stdin,
            stdout,
        ))
    }

    /// The end of the agent's stderr, on one line, for a failure's message; empty when it
    /// wrote nothing.
    pub fn stderr_tail(&self) -> String {
        let tail = self
            .stderr_tail
            .lock()
            .map(|tail| tail.clone())
            .unwrap_or_default();
        tail.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// The agent's exit status if it exits within `wait`.
    pub async fn exited_within(&mut self, wait: Duration) -> Option<ExitStatus> {
        tokio::time::timeout(wait, self.child.wait())
            .await
            .ok()
            .and_then(Result::ok)
    }

    /// Ends the agent once the shim is done with it: its stdin is already closed; it gets
    /// [`EXIT_WAIT`] to exit, then its group gets SIGTERM, then SIGKILL. Helpers left in
    /// the group are signalled even when the agent itself exited.
    pub async fn end(mut self, stdin: Option<ChildStdin>) {
        if let Some(mut stdin) = stdin {
            let _ = stdin.shutdown().await;
            drop(stdin);
        }
        let _ = self.exited_within(EXIT_WAIT).await;
        self.kill_group().await;
    }

    /// SIGTERM to the group, then SIGKILL to what is left after [`EXIT_WAIT`].
    pub async fn kill_group(&mut self) {
        let Some(group) = self.group else {
            let _ = self.child.kill().await;
            return;
        };
        if test_kill_process_group(group).is_err() {
            return;
        }
        let _ = kill_process_group(group, Signal::TERM);
        let _ = self.exited_within(EXIT_WAIT).await;
        let deadline = tokio::time::Instant::now() + EXIT_WAIT;
        while test_kill_process_group(group).is_ok() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if test_kill_process_group(group).is_ok() {
            let _ = kill_process_group(group, Signal::KILL);
        }
        let _ = self.exited_within(EXIT_WAIT).await;
    }
}

/// Copies the agent's stderr to ours, up to [`MAX_STDERR_BYTES`], keeping its end for
/// messages; the rest is read and dropped so the agent never blocks on a full pipe.
async fn pass_stderr(mut stderr: tokio::process::ChildStderr, tail: Arc<Mutex<String>>) {
    let mut ours = tokio::io::stderr();
    let mut passed = 0usize;
    let mut buffer = vec![0u8; 8192];
    loop {
        let read = match stderr.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        let chunk = &buffer[..read];
        if passed < MAX_STDERR_BYTES {
            let take = chunk.len().min(MAX_STDERR_BYTES - passed);
            let _ = ours.write_all(&chunk[..take]).await;
            passed += take;
            if passed == MAX_STDERR_BYTES {
                let _ = ours
                    .write_all(b"\n[gatehouse-acp: the agent's stderr is cut here]\n")
                    .await;
            }
        }
        if let Ok(mut tail) = tail.lock() {
            tail.push_str(&String::from_utf8_lossy(chunk));
            let chars = tail.chars().count();
            if chars > STDERR_TAIL_CHARS {
                let cut: String = tail.chars().skip(chars - STDERR_TAIL_CHARS).collect();
                *tail = cut;
            }
        }
    }
}
