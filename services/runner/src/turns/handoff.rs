//! A workspace handed between a conversation and an SOP run: `run SOP` in a conversation's
//! thread starts the run from the conversation's workspace (its latest checkpoint, taken
//! after every turn), and when the run ends, or is taken over, the conversation's next
//! task adopts the run's workspace. Each side gets a copy, with the record of how its
//! repositories were checked out, so delivery on either side pushes the same branches; a
//! paused run that was taken over still has its own.

use std::path::Path;

use gatehouse_bus::HandlerError;
use uuid::Uuid;

use super::dirs::ConversationDirs;
use super::workspace::blocking;
use crate::checkpoint;
use crate::files::{RunDirs, Scratch};
use crate::runner::Runner;

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
        let dirs = ConversationDirs::new(&self.options.data_dir, conversation);
        let (archive, record) = (dirs.checkpoint(), dirs.checkouts());
        let (workspace, run_record) = (run_dirs.workspace(), run_dirs.checkouts());
        let done = blocking(move || {
            if archive.exists() {
                checkpoint::restore(&archive, &workspace)?;
            } else {
                std::fs::create_dir_all(&workspace)?;
            }
            copy_if_there(&record, &run_record)?;
            std::fs::write(&seeded, conversation.to_string())
        })
        .await;
        Ok(done
            .map(|()| true)
            .map_err(|e| format!("starting from conversation {conversation}'s workspace: {e}")))
    }

    /// Replaces the conversation's workspace with a copy of `run`'s, which gave it back.
    /// A run whose workspace is gone (its files were cleaned up) leaves the conversation's
    /// as it is, and says so in the log.
    pub(super) async fn adopt_run(&self, run: Uuid, dirs: &ConversationDirs) -> Result<(), String> {
        let run_dirs = RunDirs::new(&self.options.data_dir, run);
        let (from, record) = (run_dirs.workspace(), run_dirs.checkouts());
        if !from.exists() {
            tracing::warn!(%run, "the run's workspace is gone; the conversation keeps its own");
            return Ok(());
        }
        let (workspace, scratch, conversation_record) =
            (dirs.workspace(), dirs.scratch(), dirs.checkouts());
        blocking(move || {
            let staging = Scratch::new(&scratch, "adopting")?;
            let archive = staging.path().join("run.tar");
            checkpoint::take(&from, &archive)?;
            checkpoint::restore(&archive, &workspace)?;
            std::fs::remove_file(&conversation_record).or_else(not_found)?;
            copy_if_there(&record, &conversation_record)
        })
        .await
        .map_err(|e| format!("taking over run {run}'s workspace: {e}"))?;
        tracing::info!(%run, "the conversation took over the run's workspace");
        Ok(())
    }
}

fn copy_if_there(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::copy(from, to) {
        Ok(_) => Ok(()),
        Err(e) => not_found(e),
    }
}

fn not_found(e: std::io::Error) -> std::io::Result<()> {
    if e.kind() == std::io::ErrorKind::NotFound {
        Ok(())
    } else {
        Err(e)
    }
}
