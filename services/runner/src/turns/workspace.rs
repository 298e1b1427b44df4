//! A conversation's workspace on the runner's disk: readied before each turn (kept from
//! the turn before when it is the latest checkpoint, else restored from that checkpoint in
//! the blob store — whichever runner took it — else the project's repositories checked
//! out as a run's are), checkpointed after each attempt, copied for a read-only role to
//! work in and throw away, and released when the conversation goes idle — checkpointed
//! first, and kept whole when that fails, so no work is ever lost to a release.

use gatehouse_blobs::Digest;
use gatehouse_bus::HandlerError;
use gatehouse_events::TurnDispatch;
use gatehouse_store::CheckpointRow;
use uuid::Uuid;

use super::Turns;
use super::confined;
use super::dirs::ConversationDirs;
use crate::checkpoint::{self, Local};
use crate::deliver::checkouts::{self, Planned, requirement_branch};
use crate::deliver::mirrors::Lease;
use crate::deliver::prepare::Layout;
use crate::durably::durably;
use crate::patience::patiently;
use crate::scope::Requirement;
use crate::scratch::Scratch;
use crate::workspaces::conversation_workspace;

impl Turns {
    /// Readies the workspace for a turn; the mirrors its repositories share objects with,
    /// held while the turn works. `Ok(Err(reason))`: it cannot be, which fails the attempt.
    pub(super) async fn ready_workspace(
        &self,
        job: &TurnDispatch,
        dirs: &ConversationDirs,
    ) -> Result<Result<Vec<Lease>, String>, HandlerError> {
        // A run gave the workspace back: its files are where the turn starts.
        if let Some(run) = job.adopt_run
            && let Err(reason) = self.adopt_run(run, job.conversation_id, dirs).await
        {
            return Ok(Err(reason));
        }
        let workspace = dirs.workspace();
        let latest = self
            .runner
            .store
            .latest_checkpoint(&conversation_workspace(job.conversation_id))
            .await?;
        let local = Local::digest(&dirs.local());
        match latest {
            Some(latest)
                if !workspace.exists()
                    || local.as_ref().is_none_or(|d| d.as_str() != latest.manifest) =>
            {
                if let Err(reason) = self.restore_conversation(&latest.manifest, dirs).await {
                    return Ok(Err(reason));
                }
            }
            _ if !workspace.exists() => {
                // Nothing of an earlier workspace is left: a record of its checkouts would
                // keep them from being made again.
                if let Err(e) = std::fs::remove_file(dirs.checkouts())
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    return Ok(Err(format!("preparing the workspace: {e}")));
                }
            }
            _ => {}
        }
        let leases = match self.check_out(job, dirs).await? {
            Ok(leases) => leases,
            Err(reason) => return Ok(Err(reason)),
        };
        Ok(std::fs::create_dir_all(&workspace)
            .map(|()| leases)
            .map_err(|e| format!("preparing the workspace: {e}")))
    }

    /// Where the conversation's repositories go in its workspace and on which branches:
    /// what its checkouts are made by, and what their record is held to. The work branch
    /// is the requirement's, as a run on it would name it.
    pub(super) async fn conversation_plan(
        &self,
        job: &TurnDispatch,
    ) -> Result<Result<Vec<Planned>, String>, HandlerError> {
        let branch = match self.runner.store.requirement(job.requirement_id).await? {
            Some(row) => Requirement::from_row(row).auto_branch(),
            None => requirement_branch(job.requirement_id, ""),
        };
        Ok(checkouts::plan(&job.workspace.repositories, &branch))
    }

    /// Checks the project's repositories out into the workspace, as a run's first node
    /// does, unless they are already (then only points them at this runner's mirrors
    /// again) or there are none.
    async fn check_out(
        &self,
        job: &TurnDispatch,
        dirs: &ConversationDirs,
    ) -> Result<Result<Vec<Lease>, String>, HandlerError> {
        let repositories = &job.workspace.repositories;
        if repositories.is_empty() {
            return Ok(Ok(Vec::new()));
        }
        let Some(delivery) = &self.runner.options.delivery else {
            if dirs.checkouts().exists() {
                return Ok(Ok(Vec::new()));
            }
            let repos: Vec<&str> = repositories.iter().map(|r| r.repo.as_str()).collect();
            return Ok(Err(format!(
                "the conversation works on {}, but this runner cannot clone repositories: {}",
                repos.join(", "),
                crate::delivering::CANNOT_CLONE
            )));
        };
        let planned = match self.conversation_plan(job).await? {
            Ok(planned) => planned,
            Err(reason) => return Ok(Err(reason)),
        };
        let (workspace, record, scratch) = (dirs.workspace(), dirs.checkouts(), dirs.scratch());
        let local = dirs.local();
        let layout = Layout {
            workspace: &workspace,
            record: &record,
            scratch: &scratch,
            local: &local,
        };
        let mut log = Vec::new();
        let prepared = delivery.prepare(&planned, &layout, &mut log).await;
        for line in &log {
            tracing::debug!(%line, "checking out the conversation's repositories");
        }
        Ok(prepared.map(|done| {
            tracing::debug!(
                repositories = done.checkouts.len(),
                "the conversation's repositories are ready"
            );
            done.leases
        }))
    }
}

impl Turns {
    /// Restores the conversation's workspace from checkpoint `manifest`.
    pub(super) async fn restore_conversation(
        &self,
        manifest: &str,
        dirs: &ConversationDirs,
    ) -> Result<(), String> {
        let digest: Digest = manifest
            .parse()
            .map_err(|e| format!("the workspace's checkpoint is not a digest: {e}"))?;
        let place = dirs.place();
        let restored = patiently("restoring a checkpoint", || {
            self.runner.checkpoints.restore(&digest, &place)
        })
        .await
        .map_err(|e| format!("restoring the workspace from its checkpoint: {e}"))?;
        tracing::info!(
            entries = restored.entries,
            fetched = restored.fetched,
            "restored the conversation's workspace from its checkpoint"
        );
        Ok(())
    }

    /// Checkpoints the workspace as the attempt left it and records it as the
    /// conversation's latest. A failure is logged and the workspace stays as it is.
    pub(super) async fn checkpoint_conversation(
        &self,
        conversation: Uuid,
        dirs: &ConversationDirs,
    ) -> bool {
        let place = dirs.place();
        let taken = match patiently("taking a checkpoint", || {
            self.runner.checkpoints.take(&place)
        })
        .await
        {
            Ok(taken) => taken,
            Err(e) => {
                tracing::warn!(error = %e, "checkpointing the conversation's workspace failed; it is kept as it is");
                return false;
            }
        };
        tracing::debug!(
            entries = taken.entries,
            uploaded = taken.uploaded,
            "checkpointed the conversation's workspace"
        );
        if !taken.changed {
            return true;
        }
        let row = CheckpointRow {
            workspace: conversation_workspace(conversation),
            manifest: taken.manifest.as_str().to_owned(),
            runner: self.runner.options.id.clone(),
            taken_after: "a turn".to_owned(),
            taken_at: chrono::Utc::now(),
        };
        match durably("recording a checkpoint", || {
            self.runner.store.record_checkpoint(&row)
        })
        .await
        {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, "recording the conversation's checkpoint failed; the workspace is kept as it is");
                false
            }
        }
    }
}

/// A copy of the workspace for a read-only role, removed when dropped. No link in it leads
/// out of it ([`confined`]): what the role writes stays in the copy.
pub(super) async fn read_only_copy(dirs: &ConversationDirs) -> Result<Scratch, String> {
    let (workspace, scratch) = (dirs.workspace(), dirs.scratch());
    blocking(move || {
        let archive = Scratch::new(&scratch, "copying")?;
        let tar = archive.path().join("workspace.tar");
        checkpoint::take_archive(&workspace, &tar)?;
        let copy = Scratch::new(&scratch, "read-only")?;
        checkpoint::restore_archive(&tar, copy.path())?;
        for (link, target) in confined::drop_links_leaving(copy.path())? {
            tracing::warn!(%link, %target, "a link leading out of the read-only copy of the workspace is left out of it");
        }
        Ok(copy)
    })
    .await
    .map_err(|e| format!("copying the workspace for a read-only role: {e}"))
}

impl Turns {
    /// Frees an idle conversation's workspace: checkpointed, then deleted (and the
    /// sandbox's hold on it let go). When the checkpoint fails the workspace is kept; an
    /// absent workspace is left so.
    pub(super) async fn release(&self, job: &TurnDispatch, timer: u64) {
        let dirs = ConversationDirs::new(&self.runner.options.data_dir, job.conversation_id);
        // What a run gave back is what is checkpointed; if it cannot be taken, the
        // workspace is released as it is and the run keeps its own.
        if let Some(run) = job.adopt_run
            && let Err(reason) = self.adopt_run(run, job.conversation_id, &dirs).await
        {
            tracing::warn!(%run, %reason, "releasing without the run's workspace");
        }
        let workspace = dirs.workspace();
        if !workspace.exists() {
            tracing::debug!(timer, "the conversation's workspace is released already");
            return;
        }
        if !self
            .checkpoint_conversation(job.conversation_id, &dirs)
            .await
        {
            return;
        }
        let local = dirs.local();
        let removed = blocking(move || {
            std::fs::remove_dir_all(&workspace)?;
            std::fs::remove_file(local)
        });
        if let Err(e) = removed.await {
            tracing::warn!(error = %e, "deleting the released workspace failed");
            return;
        }
        tracing::info!(timer, "released the conversation's workspace");
        if let Err(err) = self
            .runner
            .sandbox
            .run_ended(&job.conversation_id.to_string())
            .await
        {
            tracing::warn!(error = %err, "releasing the conversation's sandbox resources failed");
        }
    }
}

/// Runs file work off the async threads.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(std::io::Error::other)?
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};

    use super::*;

    #[tokio::test]
    async fn the_read_only_copy_has_no_way_back_into_the_workspace() {
        let data = tempfile::tempdir().unwrap();
        let dirs = ConversationDirs::new(data.path(), Uuid::now_v7());
        let workspace = dirs.workspace();
        std::fs::create_dir_all(workspace.join("src")).unwrap();
        std::fs::write(workspace.join("src/lib.rs"), "// the work").unwrap();
        symlink("src/lib.rs", workspace.join("lib.rs")).unwrap();
        // From the copy (`scratch/read-only-…`), this leads to the workspace itself.
        symlink("../../workspace", workspace.join("escape")).unwrap();
        let tool = workspace.join("tool");
        std::fs::write(&tool, "#!/bin/sh").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o4755)).unwrap();
        // Only a root runner can give a file away; it must not give it back.
        let given_away = std::os::unix::fs::lchown(&tool, Some(4321), Some(4321)).is_ok();

        let copy = read_only_copy(&dirs).await.unwrap();
        let escape = copy.path().join("escape");
        assert!(
            !escape.is_symlink(),
            "the link back into the workspace was copied: {:?}",
            std::fs::canonicalize(&escape)
        );
        assert!(std::fs::write(escape.join("scribble.txt"), "x").is_err());
        assert!(!workspace.join("scribble.txt").exists());
        assert_eq!(
            std::fs::read_to_string(copy.path().join("lib.rs")).unwrap(),
            "// the work"
        );
        let meta = std::fs::metadata(copy.path().join("tool")).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o755, "no setuid bit in the copy");
        if given_away {
            let runner = std::fs::metadata(data.path()).unwrap().uid();
            assert_eq!(meta.uid(), runner, "the copy is the runner's");
        }
    }
}
