//! A workspace handed between a conversation and an SOP run: `run SOP` in a conversation's
//! thread starts the run from the conversation's workspace (its latest checkpoint, taken
//! after every turn), and when the run ends, or is taken over, the conversation's next
//! task adopts the run's workspace (the run's latest checkpoint, taken after every
//! attempt). Both come from the blob store, so neither side needs the other's runner.
//! Each side gets a copy, with the record of how its repositories were checked out, so
//! delivery on either side pushes the same branches; a paused run that was taken over
//! still has its own.

use gatehouse_blobs::Digest;
use gatehouse_events::NodeDispatch;
use gatehouse_store::CheckpointRow;
use uuid::Uuid;

use super::dirs::ConversationDirs;
use super::workspace::conversation_workspace;
use crate::durably::durably;
use crate::files::RunDirs;
use crate::runner::{Runner, run_workspace};

impl Runner {
    /// Seeds a run's workspace from the conversation it was started from, when the run has
    /// no checkpoint of its own yet (called from [`Runner::catch_up`], in the run's
    /// checkpoint turn), and records the seed as the run's latest checkpoint: whichever
    /// runner takes a later node then restores the run's workspace, not the conversation's,
    /// which may have moved on. Whether the run came from a conversation is asked once per
    /// run on this runner, and remembered beside its workspace (the conversation's id, or
    /// nothing), so later attempts read no table. `Err`: why it cannot be, which fails the
    /// attempt.
    pub(crate) async fn seed_from_conversation(
        &self,
        job: &NodeDispatch,
        run_dirs: &RunDirs,
    ) -> Result<(), String> {
        let seeded = run_dirs.run_dir().join("from_conversation");
        if seeded.exists() {
            return Ok(());
        }
        let conversation = self
            .store
            .conversation_of_run(job.run_id)
            .await
            .map_err(|e| format!("reading whether the run came from a conversation: {e}"))?;
        let Some(conversation) = conversation else {
            return std::fs::create_dir_all(run_dirs.run_dir())
                .and_then(|()| std::fs::write(&seeded, ""))
                .map_err(|e| format!("preparing the run's directory: {e}"));
        };
        let failed =
            |e: String| format!("starting from conversation {conversation}'s workspace: {e}");
        // The conversation's latest checkpoint, whichever runner took it; none when no turn
        // ever ran (an empty workspace).
        let latest = self
            .store
            .latest_checkpoint(&conversation_workspace(conversation))
            .await
            .map_err(|e| failed(e.to_string()))?;
        match latest {
            Some(latest) => {
                let digest: Digest = latest
                    .manifest
                    .parse()
                    .map_err(|e| failed(format!("its checkpoint is not a digest: {e}")))?;
                self.restore_checkpoint(&digest, run_dirs)
                    .await
                    .map_err(|e| failed(e.to_string()))?;
                let after = format!("starting from conversation {conversation}'s workspace");
                self.record_latest(job, digest, after)
                    .await
                    .map_err(|e| failed(e.to_string()))?;
            }
            None => {
                std::fs::create_dir_all(run_dirs.workspace()).map_err(|e| failed(e.to_string()))?
            }
        }
        std::fs::write(&seeded, conversation.to_string()).map_err(|e| failed(e.to_string()))
    }

    /// Replaces the conversation's workspace with a copy of `run`'s (its latest
    /// checkpoint), which gave it back, and makes that the conversation's latest
    /// checkpoint. A run that left no checkpoint leaves the conversation's workspace as it
    /// is, and says so in the log.
    pub(super) async fn adopt_run(
        &self,
        run: Uuid,
        conversation: Uuid,
        dirs: &ConversationDirs,
    ) -> Result<(), String> {
        let latest = self
            .store
            .latest_checkpoint(&run_workspace(run))
            .await
            .map_err(|e| format!("reading run {run}'s checkpoint: {e}"))?;
        let Some(latest) = latest else {
            tracing::warn!(%run, "the run left no checkpoint; the conversation keeps its own workspace");
            return Ok(());
        };
        self.restore_conversation(&latest.manifest, dirs)
            .await
            .map_err(|e| format!("taking over run {run}'s workspace: {e}"))?;
        let row = CheckpointRow {
            workspace: conversation_workspace(conversation),
            manifest: latest.manifest,
            runner: self.options.id.clone(),
            taken_after: format!("taking run {run}'s workspace"),
            taken_at: chrono::Utc::now(),
        };
        durably("recording a checkpoint", || {
            self.store.record_checkpoint(&row)
        })
        .await
        .map_err(|e| format!("recording run {run}'s workspace as the conversation's: {e}"))?;
        tracing::info!(%run, "the conversation took over the run's workspace");
        Ok(())
    }
}
