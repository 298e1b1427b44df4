//! Noticing that the kernel killed a process of a container for lack of memory. Docker's
//! `OOMKilled` flag misses a kill whose notice reaches the engine after the container's
//! exit, but the engine sends the container's `oom` event either way, so the sandbox
//! listens for that too.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bollard::Docker;
use bollard::query_parameters::EventsOptions;
use futures::StreamExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Listens for one container's `oom` event.
#[derive(Debug)]
pub(super) struct OomWatch {
    seen: watch::Receiver<bool>,
    task: JoinHandle<()>,
}

impl OomWatch {
    /// Starts listening for container `id`'s `oom` event; call it before the container
    /// starts. Events from a second before now are replayed, so the subscription cannot
    /// miss one that happens while it is being set up.
    pub(super) fn start(docker: &Docker, id: &str) -> Self {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs().saturating_sub(1));
        let options = EventsOptions {
            since: Some(since.to_string()),
            until: None,
            filters: Some(HashMap::from([
                ("type".to_owned(), vec!["container".to_owned()]),
                ("container".to_owned(), vec![id.to_owned()]),
                ("event".to_owned(), vec!["oom".to_owned()]),
            ])),
        };
        let (tell, seen) = watch::channel(false);
        let mut events = docker.events(Some(options));
        let task = tokio::spawn(async move {
            // The stream stays open until the watch is dropped; any event it lets through
            // is this container's `oom`.
            if let Some(Ok(_)) = events.next().await {
                let _ = tell.send(true);
            }
        });
        Self { seen, task }
    }

    /// Whether the event came, waiting up to `patience` for it.
    pub(super) async fn killed(&self, patience: Duration) -> bool {
        let mut seen = self.seen.clone();
        tokio::time::timeout(patience, seen.wait_for(|seen| *seen))
            .await
            .is_ok_and(|waited| waited.is_ok())
    }
}

impl Drop for OomWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}
