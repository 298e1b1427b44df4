//! Process groups a sandbox has started, recorded on disk, so that a sandbox started after
//! a crash can stop the scripts its predecessor left running.

use std::io;
use std::path::PathBuf;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// One file per running process group, named by its id, holding the leader's start time.
#[derive(Debug, Clone)]
pub(crate) struct Registry {
    dir: PathBuf,
}

impl Registry {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    pub(crate) fn record(&self, group: i32) -> io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let started = start_time(group).unwrap_or_default();
        std::fs::write(self.dir.join(group.to_string()), started.to_string())
    }

    pub(crate) fn forget(&self, group: i32) {
        let _ = std::fs::remove_file(self.dir.join(group.to_string()));
    }

    /// Kills every recorded group that is still the one recorded, and forgets them all.
    /// A leader whose start time differs is a new process that reused the id: left alone.
    pub(crate) fn reap(&self) -> io::Result<usize> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e),
        };
        let mut killed = 0;
        for entry in entries {
            let entry = entry?;
            let Some(group) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
            else {
                continue;
            };
            let recorded: Option<u64> = std::fs::read_to_string(entry.path())
                .ok()
                .and_then(|s| s.trim().parse().ok());
            let same = match (start_time(group), recorded) {
                (Some(now), Some(then)) => now == then,
                // The leader is gone; members of its group may remain, and the id cannot
                // have been reused while they do.
                (None, _) => true,
                (Some(_), None) => false,
            };
            if same && killpg(Pid::from_raw(group), Signal::SIGKILL).is_ok() {
                killed += 1;
            }
            let _ = std::fs::remove_file(entry.path());
        }
        Ok(killed)
    }
}

/// A process's start time in clock ticks since boot (field 22 of `/proc/PID/stat`).
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name; start time is the 20th of them.
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()
}
