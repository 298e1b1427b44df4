//! A run's workspace following it between runners, with no shared disk.
//!
//! Before an attempt, this runner's copy of the workspace is made the run's latest
//! checkpoint: restored from the blob store when another runner took that checkpoint, or
//! when an attempt here was cut short (the runner killed mid-attempt leaves its marker).
//! At the node's first start the workspace is checkpointed (a send-back to the node
//! restores it), and after every attempt it is checkpointed again and recorded as the
//! run's latest, before the attempt reports its end — so whichever runner takes the next
//! node finds it. A job for a run whose latest checkpoint another runner took is left to
//! that runner for a short grace, so the workspace moves only when it must.
//!
//! Attempts of one run on one runner share its workspace, as parallel nodes always have:
//! it is only restored when no other attempt of the run is working in it here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use gatehouse_blobs::Digest;
use gatehouse_bus::Delivery;
use gatehouse_events::{Envelope, EventType, NodeDispatch};
use gatehouse_store::CheckpointRow;
use uuid::Uuid;

use super::Nodes;
use crate::checkpoint::{CheckpointError, Local, Restored};
use crate::durably::durably;
use crate::files::RunDirs;
use crate::patience::patiently;
use crate::workspaces::run_workspace;

/// How long a job waits for the runner holding its run's workspace before any runner
/// takes it (and restores the workspace).
const HOLDER_GRACE: Duration = Duration::from_millis(1500);
/// How soon a job left to its holder comes back. Short, so the grace holds many rounds
/// (see the pause in the queue's pull loop, [`crate::queue`]).
const LEAVE_FOR: Duration = Duration::from_millis(50);

/// Attempts working in each run's workspace on this runner, and the lock its checkpoints
/// and restores take turns on (parallel nodes of a run share one workspace and one record
/// of it).
pub(super) type Working = Arc<Mutex<HashMap<Uuid, Workspace>>>;

/// One run's workspace on this runner, while attempts work in it.
#[derive(Default)]
pub(super) struct Workspace {
    attempts: usize,
    checkpoints: Arc<tokio::sync::Mutex<()>>,
}

/// An attempt's hold on its run's workspace here; let go when dropped.
pub(super) struct Hold {
    working: Working,
    run: Uuid,
    /// The run had no checkpoint when the attempt began: no node of it has ended, so its
    /// settings are most likely not frozen yet.
    pub(super) fresh: bool,
}

impl Drop for Hold {
    fn drop(&mut self) {
        let mut working = self.working.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(workspace) = working.get_mut(&self.run) {
            workspace.attempts -= 1;
            if workspace.attempts == 0 {
                working.remove(&self.run);
            }
        }
    }
}

impl Nodes {
    /// Gives a node job back for a moment when the run's latest checkpoint is on another
    /// runner's disk and the job is younger than the grace: `Err(LEAVE_FOR)` then, else
    /// the job to take. Anything but a readable node job is taken (and parked by the
    /// queue).
    pub(super) async fn leave_to_holder(&self, delivery: Delivery) -> Result<Delivery, Duration> {
        // The envelope says the event's type and run; the job itself is decoded once, by
        // the attempt.
        let job = Envelope::from_slice(&delivery.payload)
            .ok()
            .filter(|envelope| envelope.event_type == EventType::NodeDispatch.as_str())
            .and_then(|envelope| Some((envelope.occurred_at, envelope.correlation.run_id?)));
        let Some((occurred_at, run)) = job else {
            return Ok(delivery);
        };
        let age = (Utc::now() - occurred_at).to_std().unwrap_or_default();
        if age >= HOLDER_GRACE || !self.held_elsewhere(run).await {
            return Ok(delivery);
        }
        if let Err(err) = delivery.nak(LEAVE_FOR).await {
            tracing::warn!(error = %err, "giving the job back to its workspace's holder failed");
        }
        Err(LEAVE_FOR)
    }

    /// Whether another runner took the run's latest checkpoint.
    async fn held_elsewhere(&self, run: Uuid) -> bool {
        match self
            .runner
            .store
            .latest_checkpoint(&run_workspace(run))
            .await
        {
            Ok(latest) => latest.is_some_and(|l| l.runner != self.runner.options.id),
            Err(err) => {
                tracing::warn!(error = %err, "reading the run's latest checkpoint failed; taking the job");
                false
            }
        }
    }

    /// Makes this runner's copy of the run's workspace the latest checkpoint's, unless
    /// another attempt of the run works in it here (then waits for that attempt's restore);
    /// holds it for the attempt. `Err`: why it cannot be, which fails the attempt.
    pub(super) async fn follow(&self, job: &NodeDispatch, dirs: &RunDirs) -> Result<Hold, String> {
        // The first attempt takes the run's checkpoint turn before letting go of the map,
        // so an attempt of the run arriving meanwhile waits for the restore to finish.
        let (lock, first) = {
            let mut working = self.working.lock().unwrap_or_else(|p| p.into_inner());
            let workspace = working.entry(job.run_id).or_default();
            workspace.attempts += 1;
            let lock = workspace.checkpoints.clone();
            let first = (workspace.attempts == 1)
                .then(|| lock.clone().try_lock_owned().ok())
                .flatten();
            (lock, first)
        };
        let mut hold = Hold {
            working: self.working.clone(),
            run: job.run_id,
            fresh: false,
        };
        let Some(_turn) = first else {
            drop(lock.lock().await);
            return Ok(hold);
        };
        hold.fresh = self.catch_up(job, dirs).await?;
        std::fs::create_dir_all(dirs.run_dir())
            .and_then(|()| std::fs::write(dirs.unfinished(), job.node.as_bytes()))
            .map_err(|e| format!("marking the workspace in use: {e}"))?;
        Ok(hold)
    }

    /// Restores the latest checkpoint when this runner's copy is not it; with none yet,
    /// seeds the workspace from the conversation the run was started from, if any, and
    /// says so (`true`).
    async fn catch_up(&self, job: &NodeDispatch, dirs: &RunDirs) -> Result<bool, String> {
        let latest = self
            .runner
            .store
            .latest_checkpoint(&run_workspace(job.run_id))
            .await
            .map_err(|e| format!("reading the workspace's latest checkpoint: {e}"))?;
        let Some(latest) = latest else {
            // Started in a conversation's thread: from the conversation's workspace.
            return self.seed_from_conversation(job, dirs).await.map(|()| true);
        };
        let local = Local::digest(&dirs.local());
        let cut_short = dirs.unfinished().exists();
        if !cut_short
            && local
                .as_ref()
                .is_some_and(|d| d.as_str() == latest.manifest)
        {
            return Ok(false);
        }
        let digest: Digest = latest
            .manifest
            .parse()
            .map_err(|e| format!("the run's latest checkpoint is not a digest: {e}"))?;
        let restored = self
            .restore_checkpoint(&digest, dirs)
            .await
            .map_err(|e| format!("restoring the workspace from its checkpoint: {e}"))?;
        let why = if cut_short && local.is_some() {
            "an attempt here was cut short"
        } else {
            "this runner did not hold it"
        };
        let note = format!(
            "[gatehouse] workspace restored from the checkpoint taken after {} on {} ({why}): {} entries, {} fetched",
            latest.taken_after,
            latest.runner,
            restored.entries,
            bytesize::ByteSize::b(restored.fetched).display().iec()
        );
        self.store_log(job, &[note]).await;
        Ok(false)
    }

    /// Checkpoints the workspace and records it as the run's latest, then marks the
    /// attempt's work in it finished. `Err`: it could not be, and the attempt fails rather
    /// than leave the next node an older workspace.
    pub(super) async fn checkpoint_after(
        &self,
        job: &NodeDispatch,
        dirs: &RunDirs,
    ) -> Result<(), String> {
        let after = format!("node {}, attempt {}", job.node, job.attempt);
        self.take_checkpoint(job, dirs, after)
            .await
            .map_err(|e| format!("checkpointing the workspace: {e}"))?;
        // The marker stays while another attempt of the run still works in the workspace.
        let working = self.working.lock().unwrap_or_else(|p| p.into_inner());
        if working.get(&job.run_id).is_some_and(|w| w.attempts > 1) {
            return Ok(());
        }
        match std::fs::remove_file(dirs.unfinished()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(format!("marking the workspace's attempt finished: {e}"))
            }
            _ => Ok(()),
        }
    }

    /// Takes a checkpoint (`taken_after` says when, for people) and, when it differs from
    /// the latest, records it as the latest. The blob store is tried again while it is
    /// unreachable ([`patiently`]).
    pub(super) async fn take_checkpoint(
        &self,
        job: &NodeDispatch,
        dirs: &RunDirs,
        taken_after: String,
    ) -> Result<Digest, CheckpointError> {
        let place = dirs.place();
        let _turn = self.checkpoint_turn(job.run_id).await;
        let began = std::time::Instant::now();
        let taken = patiently("taking a checkpoint", || {
            self.runner.checkpoints.take(&place)
        })
        .await?;
        let took = began.elapsed();
        if taken.changed {
            self.record_latest(job, taken.manifest.clone(), taken_after)
                .await?;
            if taken.uploaded > 0 {
                let note = format!(
                    "[gatehouse] workspace checkpointed in {:.1} s: {} entries, {} in all, {} new",
                    took.as_secs_f64(),
                    taken.entries,
                    bytesize::ByteSize::b(taken.bytes).display().iec(),
                    bytesize::ByteSize::b(taken.uploaded).display().iec()
                );
                self.store_log(job, &[note]).await;
            }
        }
        Ok(taken.manifest)
    }

    /// Records `manifest` as the run's latest checkpoint, held by this runner.
    pub(super) async fn record_latest(
        &self,
        job: &NodeDispatch,
        manifest: Digest,
        taken_after: String,
    ) -> Result<(), CheckpointError> {
        let row = CheckpointRow {
            workspace: run_workspace(job.run_id),
            manifest: manifest.as_str().to_owned(),
            runner: self.runner.options.id.clone(),
            taken_after,
            taken_at: Utc::now(),
        };
        durably("recording a checkpoint", || {
            self.runner.store.record_checkpoint(&row)
        })
        .await?;
        Ok(())
    }

    /// Waits for the run's checkpoints and restores here to be this one's turn; held for
    /// as long as the guard lives. Nothing to wait for when no attempt of the run holds
    /// its workspace here.
    pub(super) async fn checkpoint_turn(
        &self,
        run: Uuid,
    ) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        let lock = self
            .working
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&run)
            .map(|w| w.checkpoints.clone())?;
        Some(lock.lock_owned().await)
    }

    /// Restores checkpoint `digest` into the run's workspace here. The caller takes the
    /// run's [checkpoint turn](Nodes::checkpoint_turn) first.
    pub(super) async fn restore_checkpoint(
        &self,
        digest: &Digest,
        dirs: &RunDirs,
    ) -> Result<Restored, CheckpointError> {
        let place = dirs.place();
        patiently("restoring a checkpoint", || {
            self.runner.checkpoints.restore(digest, &place)
        })
        .await
    }
}
