//! A run started from a conversation's workspace: `run SOP` in a conversation's thread
//! starts the run from the conversation's latest checkpoint (taken after every turn), from
//! the blob store, so it needs not the conversation's runner. The run gets a copy, with the
//! record of how its repositories were checked out, so delivery on either side pushes the
//! same branches. (The other way, the conversation taking back the run's workspace, is the
//! turns' side.)

use gatehouse_blobs::Digest;
use gatehouse_events::NodeDispatch;

use super::Nodes;
use crate::files::RunDirs;
use crate::workspaces::conversation_workspace;

impl Nodes {
    /// Seeds a run's workspace from the conversation it was started from, when the run has
    /// no checkpoint of its own yet (called from [`Nodes::catch_up`], in the run's
    /// checkpoint turn), and records the seed as the run's latest checkpoint: whichever
    /// runner takes a later node then restores the run's workspace, not the conversation's,
    /// which may have moved on. Whether the run came from a conversation is asked once per
    /// run on this runner, and remembered beside its workspace (the conversation's id, or
    /// nothing), so later attempts read no table. `Err`: why it cannot be, which fails the
    /// attempt.
    pub(super) async fn seed_from_conversation(
        &self,
        job: &NodeDispatch,
        run_dirs: &RunDirs,
    ) -> Result<(), String> {
        let seeded = run_dirs.run_dir().join("from_conversation");
        if seeded.exists() {
            return Ok(());
        }
        let conversation = self
            .runner
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
            .runner
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
}
