//! A run's workspace handed back to the conversation it was started from: when the run
//! ends, or is taken over, the conversation's next task adopts the run's workspace (the
//! run's latest checkpoint, taken after every attempt), from the blob store, so it needs
//! not the run's runner. The conversation gets a copy, with the record of how its
//! repositories were checked out, so delivery on either side pushes the same branches; a
//! paused run that was taken over still has its own. (The other way, a run started from
//! the conversation's workspace, is the node jobs' side.)

use gatehouse_store::CheckpointRow;
use uuid::Uuid;

use super::Turns;
use super::dirs::ConversationDirs;
use crate::durably::durably;
use crate::workspaces::{conversation_workspace, run_workspace};

impl Turns {
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
            .runner
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
            runner: self.runner.options.id.clone(),
            taken_after: format!("taking run {run}'s workspace"),
            taken_at: chrono::Utc::now(),
        };
        durably("recording a checkpoint", || {
            self.runner.store.record_checkpoint(&row)
        })
        .await
        .map_err(|e| format!("recording run {run}'s workspace as the conversation's: {e}"))?;
        tracing::info!(%run, "the conversation took over the run's workspace");
        Ok(())
    }
}
