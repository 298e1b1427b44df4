//! A conversation's home across runners: the CLI's own state (Claude Code's `.claude/`,
//! Codex's `.codex/`, with the sessions a turn resumes) lives outside the workspace, so it
//! is neither in the workspace's checkpoint nor delivered. After each turn it is saved to
//! the blob store as a snapshot of its own ([`crate::checkpoint::Checkpoints`] within
//! [`crate::checkpoint::HomeBounds`]) and recorded as the conversation's latest; before a
//! turn, a runner whose copy is older or missing restores it, treating the snapshot as
//! untrusted (no links, no path leading out, sizes capped).
//!
//! A home that cannot be saved (past `storage.conversation_home_limit`, or the blob store
//! failing) is recorded as such, with the runner whose disk alone has it: that runner goes
//! on with it, any other starts from an empty home rather than an older one. Whatever the
//! home holds, the session to resume is looked for in it first ([`SessionFiles`]); a
//! session not there is not asked for — the turn starts a new one and its progress
//! message says why — so a turn never fails for a session it cannot have.
//!
//! The home may hold tool output the CLI kept unmasked: it goes only to Gatehouse's own blob
//! store and back into the same conversation's sandbox, never to chat, logs, artifacts or
//! the console.

use std::io;
use std::path::Path;

use gatehouse_agent::{Role, SessionFiles};
use gatehouse_blobs::Digest;
use gatehouse_bus::HandlerError;
use gatehouse_store::HomeRow;
use uuid::Uuid;

use super::Turns;
use super::dirs::ConversationDirs;
use super::turn::Turn;
use super::workspace::blocking;
use crate::checkpoint::{CheckpointError, Local};
use crate::durably::durably;
use crate::patience::patiently;

/// The home as a turn found it.
pub(super) struct Homecoming {
    /// The snapshot recorded as the latest when the turn began: one the turn leaves the
    /// home as needs no recording again.
    latest: Option<String>,
    /// Why the session the turn was to resume is not asked for; `None` when it is (or none
    /// was to be).
    pub lost: Option<Lost>,
}

/// Why the earlier session is not resumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lost {
    /// The home here does not hold it: never saved, or saved without it.
    Missing,
    /// The latest snapshot was refused or could not be fetched.
    Refused,
}

impl Turns {
    /// Readies the conversation's home for a turn — restored from the latest snapshot when
    /// this runner's copy is older or missing, emptied when the latest is a home only
    /// another runner has — and looks for the session `resume` in it.
    pub(super) async fn ready_home(
        &self,
        conversation: Uuid,
        dirs: &ConversationDirs,
        role: &Role,
        resume: Option<&str>,
    ) -> Result<Homecoming, HandlerError> {
        let row = self.runner.store.latest_home(conversation).await?;
        let home = dirs.home();
        let local = Local::digest(&dirs.home_local());
        let mut refused = false;
        match &row {
            Some(HomeRow {
                manifest: Some(manifest),
                ..
            }) if !home.exists() || local.as_ref().is_none_or(|d| d.as_str() != manifest) => {
                if let Err(reason) = self.restore_home(manifest, dirs).await {
                    tracing::warn!(%reason, "the conversation's home cannot be restored from its snapshot; the turn starts from an empty one");
                    refused = true;
                    empty_home(dirs).await;
                }
            }
            Some(HomeRow {
                manifest: None,
                runner,
                taken_after,
                ..
            }) if *runner != self.runner.options.id && home.exists() => {
                tracing::info!(%runner, %taken_after, "the conversation's latest home was not saved and is on another runner's disk; the turn starts from an empty one");
                empty_home(dirs).await;
            }
            _ => {}
        }
        let lost = match resume {
            Some(id) if session_found(&home, role, id).await == Some(false) => Some(if refused {
                Lost::Refused
            } else {
                Lost::Missing
            }),
            _ => None,
        };
        if let (Some(lost), Some(id)) = (lost, resume) {
            tracing::info!(session = %id, ?lost, "the session to resume is not in the conversation's home; the turn starts a new one");
        }
        Ok(Homecoming {
            latest: row.and_then(|r| r.manifest),
            lost,
        })
    }

    /// Replaces the home with snapshot `manifest`. `Err`: why not; the home is then as it
    /// was, or partly replaced.
    async fn restore_home(&self, manifest: &str, dirs: &ConversationDirs) -> Result<(), String> {
        let digest: Digest = manifest
            .parse()
            .map_err(|e| format!("the home's snapshot is not a digest: {e}"))?;
        let place = dirs.home_place();
        let restored = patiently("restoring a conversation's home", || {
            self.runner.homes.restore(&digest, &place)
        })
        .await
        .map_err(|e| format!("restoring the conversation's home: {e}"))?;
        tracing::info!(
            entries = restored.entries,
            fetched = restored.fetched,
            "restored the conversation's home from its snapshot"
        );
        Ok(())
    }

    /// Saves the home as the attempt left it and records it as the conversation's latest;
    /// one that cannot be saved is recorded as this runner's alone. Failures are logged:
    /// the turn's outcome does not depend on them.
    pub(super) async fn save_home(
        &self,
        conversation: Uuid,
        dirs: &ConversationDirs,
        turn: &Turn<'_>,
        came: &Homecoming,
    ) {
        let place = dirs.home_place();
        let manifest = match patiently("saving a conversation's home", || {
            self.runner.homes.take(&place)
        })
        .await
        {
            Ok(taken) => {
                tracing::debug!(
                    entries = taken.entries,
                    packed = taken.packed,
                    uploaded = taken.uploaded,
                    "saved the conversation's home"
                );
                if came.latest.as_deref() == Some(taken.manifest.as_str()) {
                    return;
                }
                Some(taken.manifest.as_str().to_owned())
            }
            Err(e @ CheckpointError::HomeTooLarge { .. }) => {
                tracing::warn!(error = %e, "the conversation's home is not saved: a turn on another runner will start a new session");
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, "saving the conversation's home failed: a turn on another runner will start a new session");
                None
            }
        };
        let row = HomeRow {
            conversation_id: conversation,
            manifest,
            runner: self.runner.options.id.clone(),
            taken_after: format!("turn {}, attempt {}", turn.seq, turn.attempt),
            taken_at: chrono::Utc::now(),
        };
        if let Err(e) = durably("recording a conversation's home", || {
            self.runner.store.record_home(&row)
        })
        .await
        {
            tracing::warn!(error = %e, "recording the conversation's home failed");
        }
    }
}

/// Empties the home and forgets which snapshot it matched, so the CLI starts afresh; a
/// failure is logged (the session check that follows sees what is left).
async fn empty_home(dirs: &ConversationDirs) {
    let (home, local) = (dirs.home(), dirs.home_local());
    let emptied = blocking(move || {
        remove(&local, |p| std::fs::remove_file(p))?;
        remove(&home, |p| std::fs::remove_dir_all(p))
    });
    if let Err(e) = emptied.await {
        tracing::warn!(error = %e, "emptying the conversation's home failed");
    }
}

/// `how` on `path`, which may be missing already.
fn remove(path: &Path, how: impl Fn(&Path) -> io::Result<()>) -> io::Result<()> {
    match how(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Whether `home` holds session `id` of `role`'s CLI; `None` when the runner cannot tell:
/// a CLI without sessions, one whose state the role's environment moves elsewhere, or a
/// home that does not read.
async fn session_found(home: &Path, role: &Role, id: &str) -> Option<bool> {
    let files = role.executor.session_files()?;
    if role.env.contains_key(files.moved_by) {
        return None;
    }
    let (dir, id) = (home.join(files.dir), id.to_owned());
    match blocking(move || find_session(&dir, files, &id)).await {
        Ok(found) => Some(found),
        Err(e) => {
            tracing::warn!(error = %e, "looking for the session in the conversation's home failed");
            None
        }
    }
}

/// Whether a file `files.depth` directories below `dir` names session `id`. Links are not
/// followed; a directory missing holds none.
fn find_session(dir: &Path, files: SessionFiles, id: &str) -> io::Result<bool> {
    let mut level = vec![dir.to_owned()];
    for _ in 0..files.depth {
        let mut below = Vec::new();
        for dir in &level {
            for entry in entries(dir)? {
                if entry.file_type()?.is_dir() {
                    below.push(entry.path());
                }
            }
        }
        level = below;
    }
    for dir in &level {
        for entry in entries(dir)? {
            let named = entry
                .file_name()
                .to_str()
                .is_some_and(|name| files.names(name, id));
            if named && entry.file_type()?.is_file() {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The entries of `dir`; none when it is missing.
fn entries(dir: &Path) -> io::Result<Vec<std::fs::DirEntry>> {
    match std::fs::read_dir(dir) {
        Ok(read) => read.collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use gatehouse_agent::Executor;

    use super::*;

    const ID: &str = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";

    fn write(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "{}\n").unwrap();
    }

    #[tokio::test]
    async fn a_session_is_found_where_its_cli_keeps_it_and_nowhere_else() {
        let home = tempfile::tempdir().unwrap();
        let claude = Role::new(Executor::ClaudeCode);
        let codex = Role::new(Executor::Codex);
        assert_eq!(session_found(home.path(), &claude, ID).await, Some(false));
        assert_eq!(session_found(home.path(), &codex, ID).await, Some(false));

        // Too shallow, too deep, or behind a link: not where the CLI would find it.
        write(&home.path().join(format!(".claude/projects/{ID}.jsonl")));
        write(&home.path().join(format!(".claude/projects/a/b/{ID}.jsonl")));
        let elsewhere = tempfile::tempdir().unwrap();
        write(&elsewhere.path().join(format!("{ID}.jsonl")));
        std::os::unix::fs::symlink(elsewhere.path(), home.path().join(".claude/projects/l"))
            .unwrap();
        assert_eq!(session_found(home.path(), &claude, ID).await, Some(false));

        write(
            &home
                .path()
                .join(format!(".claude/projects/-work/{ID}.jsonl")),
        );
        assert_eq!(session_found(home.path(), &claude, ID).await, Some(true));
        assert_eq!(
            session_found(home.path(), &claude, "other").await,
            Some(false)
        );

        let rollout = format!(".codex/sessions/2026/01/02/rollout-2026-01-02T03-04-05-{ID}.jsonl");
        write(&home.path().join(rollout));
        assert_eq!(session_found(home.path(), &codex, ID).await, Some(true));
    }

    #[tokio::test]
    async fn a_session_kept_elsewhere_or_by_no_cli_is_not_judged() {
        let home = tempfile::tempdir().unwrap();
        let moved = Role {
            env: BTreeMap::from([("CLAUDE_CONFIG_DIR".to_owned(), "/state".to_owned())]),
            ..Role::new(Executor::ClaudeCode)
        };
        assert_eq!(session_found(home.path(), &moved, ID).await, None);
        let command = Role {
            command: vec!["my-agent".into()],
            ..Role::new(Executor::Command)
        };
        assert_eq!(session_found(home.path(), &command, ID).await, None);
    }
}
