//! Noticing that a container hit its pids limit: Docker reports no such event, so the
//! sandbox watches while the job runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bollard::Docker;
use bollard::query_parameters::StatsOptions;
use futures::StreamExt;
use tokio::task::JoinHandle;

/// How often the cgroup's pids events are read.
const EVENTS_POLL: Duration = Duration::from_millis(100);

/// Watches one running container's process count.
#[derive(Debug)]
pub(super) struct PidsWatch {
    reached: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

impl PidsWatch {
    /// Starts watching container `id`, just started, against `limit`. Docker's stats stream
    /// (about one sample a second) gives the current count. When the runner can see the
    /// container's cgroup (same host), its `pids.events` counts every fork refused for the
    /// limit, which also catches a spike between two samples; it is read every
    /// [`EVENTS_POLL`].
    pub(super) fn start(docker: &Docker, id: &str, limit: u32) -> Self {
        let reached = Arc::new(AtomicBool::new(false));
        // The cgroup exists from start until the container stops.
        let events = events_files(id).into_iter().find(|file| file.exists());
        let task = tokio::spawn({
            let (reached, docker, id) = (Arc::clone(&reached), docker.clone(), id.to_owned());
            async move {
                let options = StatsOptions {
                    stream: true,
                    one_shot: false,
                };
                let mut stats = docker.stats(&id, Some(options));
                let mut poll = tokio::time::interval(EVENTS_POLL);
                loop {
                    let hit = tokio::select! {
                        sample = stats.next() => match sample {
                            Some(Ok(sample)) => {
                                sample.pids_stats.and_then(|p| p.current).unwrap_or(0)
                                    >= u64::from(limit)
                            }
                            // The container is gone, or Docker stopped reporting.
                            _ => return,
                        },
                        _ = poll.tick(), if events.is_some() => {
                            events.as_deref().is_some_and(refused_forks)
                        }
                    };
                    if hit {
                        reached.store(true, Ordering::Relaxed);
                        return;
                    }
                }
            }
        });
        Self { reached, task }
    }

    /// Whether the limit was reached while the container ran.
    pub(super) fn reached(&self) -> bool {
        self.reached.load(Ordering::Relaxed)
    }
}

impl Drop for PidsWatch {
    /// The stats stream would otherwise run on until the container is removed.
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Where the container's pids cgroup may be, for the usual drivers and cgroup versions.
fn events_files(id: &str) -> Vec<PathBuf> {
    [
        format!("/sys/fs/cgroup/pids/docker/{id}/pids.events"),
        format!("/sys/fs/cgroup/docker/{id}/pids.events"),
        format!("/sys/fs/cgroup/system.slice/docker-{id}.scope/pids.events"),
        format!("/sys/fs/cgroup/pids/system.slice/docker-{id}.scope/pids.events"),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

/// Whether `events` says a fork was refused for the limit (`max N`, N > 0).
fn refused_forks(events: &Path) -> bool {
    std::fs::read_to_string(events).is_ok_and(|events| max_events(&events) > 0)
}

fn max_events(events: &str) -> u64 {
    events
        .lines()
        .find_map(|line| line.strip_prefix("max "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids_events_are_read() {
        assert_eq!(max_events("max 17\n"), 17);
        assert_eq!(max_events("max 0\n"), 0);
        assert_eq!(max_events(""), 0);
        assert!(
            events_files("no-such-container")
                .iter()
                .all(|file| !refused_forks(file))
        );
    }
}
