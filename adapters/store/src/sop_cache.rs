//! The SOP definitions runs are frozen with, parsed once per process. A version is a hash
//! of its text and never changes, so one parse serves every reader: the scheduler applying
//! events, ingest answering for a run, the notifier drawing its cards. The cache lives with
//! the store because every service that reads runs has one, and in `gatehouse up` they share
//! the same store.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use gatehouse_sop::Sop;

/// Parsed definitions by version, and the versions known to be in the database; shared
/// by every clone of a `Store`.
#[derive(Default)]
pub(crate) struct Definitions {
    parsed: Mutex<HashMap<String, Arc<Sop>>>,
    /// Versions a commit of this process saved, or a read found: a version is never
    /// deleted, so saving one of these again would change nothing
    /// (`Tx::save_sop_version`).
    stored: Mutex<HashSet<String>>,
}

impl Definitions {
    pub(crate) fn get(&self, version: &str) -> Option<Arc<Sop>> {
        self.parsed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(version)
            .cloned()
    }

    pub(crate) fn insert(&self, version: &str, sop: Arc<Sop>) {
        self.parsed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(version.to_owned(), sop);
    }

    pub(crate) fn is_stored(&self, version: &str) -> bool {
        self.stored
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(version)
    }

    pub(crate) fn stored(&self, versions: impl IntoIterator<Item = String>) {
        self.stored
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(versions);
    }
}
