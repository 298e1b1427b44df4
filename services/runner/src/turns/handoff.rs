//! A workspace handed between a conversation and an SOP run: `run SOP` in a conversation's
//! thread starts the run from the conversation's workspace (its latest checkpoint, taken
//! after every turn), and when the run ends, or is taken over, the conversation's next
//! task adopts the run's workspace (the run's latest checkpoint, taken after every
//! attempt). Both come from the blob store, so neither side needs the other's runner.
//! Each side gets a copy, with the record of how its repositories were checked out, so
//! delivery on either side pushes the same branches; a paused run that was taken over
//! still has its own.

use gatehouse_blobs::Digest;
use gatehouse_bus::HandlerError;
use gatehouse_store::CheckpointRow;
use uuid::Uuid;

use super::dirs::ConversationDirs;
use super::workspace::conversation_workspace;
use crate::durably::durably;
use crate::files::RunDirs;
use crate::patience::patiently;
use crate::runner::{Runner, run_place, run_workspace};

impl Runner {
    /// Seeds a run's workspace from the conversation it was started from, before its first
    /// node: `true` when it did (the run then has the conversation's repositories checked
    /// out already). Whether the run came from a conversation is asked once per run on
    /// this runner, and remembered beside its workspace (the conversation's id, or
    /// nothing), so later attempts read no table.
    pub(crate) async fn seed_from_conversation(
        &self,
        run: Uuid,
        run_dirs: &RunDirs,
    ) -> Result<Result<bool, String>, HandlerError> {
        let seeded = run_dirs.run_dir().join("from_conversation");
        if seeded.exists() {
            return Ok(Ok(false));
        }
        let Some(conversation) = self.store.conversation_of_run(run).await? else {
            let remembered = std::fs::create_dir_all(run_dirs.run_dir())
                .and_then(|()| std::fs::write(&seeded, ""));
            return Ok(remembered
                .map(|()| false)
                .map_err(|e| format!("preparing the run's directory: {e}")));
        };
        // The conversation's latest checkpoint, whichever runner took it; none when no turn
        // ever ran (an empty workspace).
        let latest = self
            .store
            .latest_checkpoint(&conversation_workspace(conversation))
            .await?;
        let done = match latest {
            Some(latest) => match latest.manifest.parse::<Digest>() {
                Ok(digest) => {
                    let place = run_place(run_dirs);
                    patiently("restoring a checkpoint", || {
                        self.checkpoints.restore(&digest, &place)
                    })
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
                }
                Err(e) => Err(format!("its checkpoint is not a digest: {e}")),
            },
            None => std::fs::create_dir_all(run_dirs.workspace()).map_err(|e| e.to_string()),
        };
        let done = done.and_then(|()| {
            std::fs::write(&seeded, conversation.to_string()).map_err(|e| e.to_string())
        });
        Ok(done
            .map(|()| true)
            .map_err(|e| format!("starting from conversation {conversation}'s workspace: {e}")))
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
