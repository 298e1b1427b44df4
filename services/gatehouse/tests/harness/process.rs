//! The `gatehouse` binary as a child process: how it is started and how it is stopped, by
//! SIGTERM within a limit or by SIGKILL, and never left behind when a test ends.

use std::process::{Child, ChildStderr, Command, ExitStatus};
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_gatehouse");

/// A command running the binary under test; callers add its verb and environment.
pub fn gatehouse() -> Command {
    Command::new(BIN)
}

/// A started `gatehouse` process, killed when dropped however the test ends.
pub struct Process {
    /// What the process is, for messages.
    name: String,
    child: Child,
}

impl Process {
    /// Spawns `command` as the process `name`.
    pub fn spawn(name: &str, command: &mut Command) -> Self {
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{name} did not start: {e}"));
        Self {
            name: name.to_owned(),
            child,
        }
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Its standard error, when it was started with a pipe there (once).
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// Whether it is still alive (it has not exited by itself).
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// SIGTERM; its exit status once it has stopped, which must be `within` the given time
    /// (else it is killed and the test fails).
    pub fn terminate(&mut self, within: Duration) -> ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let start = Instant::now();
        while start.elapsed() < within {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let _ = self.child.kill();
        panic!("{} did not stop within {within:?} of SIGTERM", self.name);
    }

    /// SIGKILL: no shutdown, no flush.
    pub fn kill_9(mut self) {
        self.reap();
    }

    fn reap(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.reap();
    }
}
