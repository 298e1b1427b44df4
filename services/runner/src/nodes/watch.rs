//! Watching runs: the runner keeps the newest `run.updated` snapshot of each run and stops
//! the attempts a snapshot no longer wants (a cancelled run, fail-fast, a node sent back),
//! whether they are running here already or arrive later. Its own consumer, apart from
//! the work queue, so a run is still watched while jobs in flight finish at shutdown.

use async_trait::async_trait;
use gatehouse_bus::{Handler, HandlerError};
use gatehouse_events::{Envelope, Event, NodeStatus, RunUpdated};
use gatehouse_store::Tx;

use super::Nodes;

/// Snapshots kept before those of finished runs are dropped.
const SNAPSHOTS_KEPT: usize = 10_000;

/// Whether `snapshot` shows that `node`'s `attempt` is no longer wanted: a newer attempt
/// exists, or this one is no longer dispatched or running. A snapshot older than the
/// attempt says nothing about it.
pub(super) fn unwanted(snapshot: &RunUpdated, node: &str, attempt: u32) -> bool {
    snapshot.nodes.iter().any(|n| {
        n.node == node
            && (n.attempt > attempt
                || n.attempt == attempt
                    && !matches!(n.status, NodeStatus::Dispatched | NodeStatus::Running))
    })
}

/// Keeps the newest snapshot of each run and stops attempts it no longer wants.
#[async_trait]
impl Handler for Nodes {
    async fn handle(&self, _tx: &mut Tx, envelope: &Envelope) -> Result<(), HandlerError> {
        let Ok(Event::RunUpdated(snapshot)) = envelope.decode() else {
            return Ok(());
        };
        {
            let mut snapshots = self.snapshots.lock().unwrap_or_else(|p| p.into_inner());
            if snapshots.len() >= SNAPSHOTS_KEPT {
                snapshots.retain(|_, s| !s.status.is_terminal());
            }
            let newer = snapshots
                .get(&snapshot.run_id)
                .is_none_or(|old| old.revision < snapshot.revision);
            if newer {
                snapshots.insert(snapshot.run_id, snapshot.clone());
            }
        }
        if snapshot.status.is_terminal() {
            // Outside the consumer's transaction: Docker may be slow, and a volume left
            // behind costs nothing but a name.
            let (sandbox, run) = (self.runner.sandbox.clone(), snapshot.run_id.to_string());
            tokio::spawn(async move {
                if let Err(err) = sandbox.run_ended(&run).await {
                    tracing::warn!(%run, error = %err, "releasing the run's sandbox resources failed");
                }
            });
        }
        self.running.stop_where(
            |(run, node, attempt)| *run == snapshot.run_id && unwanted(&snapshot, node, *attempt),
            |(run, node, attempt)| {
                tracing::info!(run = %run, node = %node, attempt, "stopping an attempt the run no longer wants");
            },
        );
        Ok(())
    }
}
