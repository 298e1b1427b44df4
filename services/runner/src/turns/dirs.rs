//! Where a conversation's files live under the data directory: its workspace (kept across
//! turns, freed when idle), which checkpoint it matches, how its repositories were
//! checked out, its CLI's home and which snapshot of it it matches, the transcript a
//! `command` executor reads, and each attempt's own inputs and artifacts (removed once the
//! attempt ends).

use std::path::{Path, PathBuf};

use uuid::Uuid;

use crate::checkpoint::Place;

/// One conversation's directories.
pub(crate) struct ConversationDirs {
    root: PathBuf,
}

impl ConversationDirs {
    pub(crate) fn new(data_dir: &Path, conversation: Uuid) -> Self {
        Self {
            root: data_dir.join(format!("conversations/{conversation}")),
        }
    }

    /// The workspace every turn works in.
    pub(crate) fn workspace(&self) -> PathBuf {
        self.root.join("workspace")
    }

    /// What this runner knows of its copy of the workspace: the checkpoint it matches
    /// (see [`crate::checkpoint::Local`]).
    pub(crate) fn local(&self) -> PathBuf {
        self.root.join("checkpoint.json")
    }

    /// The workspace on this runner's disk, as checkpoints are taken and restored.
    pub(crate) fn place(&self) -> Place {
        Place {
            workspace: self.workspace(),
            checkouts: Some(self.checkouts()),
            local: self.local(),
            scratch: self.scratch(),
        }
    }

    /// How the repositories were checked out (see [`crate::deliver::checkouts`]).
    pub(crate) fn checkouts(&self) -> PathBuf {
        self.root.join("checkouts.json")
    }

    /// The runner's short-lived directories: clones being prepared, read-only copies.
    pub(crate) fn scratch(&self) -> PathBuf {
        self.root.join("scratch")
    }

    /// The CLI's own state across the conversation's turns (its sessions, which a turn
    /// resumes), outside the workspace: never in its checkpoint nor delivered, but saved as
    /// a snapshot of its own for the next turn on another runner (see [`super::home`]).
    pub(crate) fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    /// What this runner knows of its copy of the home: the snapshot it matches.
    pub(crate) fn home_local(&self) -> PathBuf {
        self.root.join("home.json")
    }

    /// The home on this runner's disk, as its snapshots are taken and restored: no
    /// checkouts record beside it.
    pub(crate) fn home_place(&self) -> Place {
        Place {
            workspace: self.home(),
            checkouts: None,
            local: self.home_local(),
            scratch: self.scratch(),
        }
    }

    /// The conversation so far, as the runner keeps it (never the CLI).
    pub(crate) fn transcript(&self) -> PathBuf {
        self.root.join("transcript.jsonl")
    }

    /// One attempt's inputs (prompt, system text, a copy of the transcript) and artifacts.
    pub(crate) fn attempt(&self, seq: u64, attempt: u32) -> PathBuf {
        self.root.join(format!("attempts/{seq}-{attempt}"))
    }
}
