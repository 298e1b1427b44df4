//! The SOP definitions runs are frozen with, parsed once per process. A version is a hash
//! of its text and never changes, so one parse serves every reader: the scheduler applying
//! events, ingest answering for a run, the notifier drawing its cards. The cache lives with
//! the store because every service that reads runs has one, and in `gatehouse up` they share
//! the same store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use gatehouse_sop::Sop;

use crate::{Store, StoreError};

/// Parsed definitions by version; shared by every clone of a [`Store`].
#[derive(Default)]
pub(crate) struct Definitions(Mutex<HashMap<String, Arc<Sop>>>);

impl Definitions {
    fn get(&self, version: &str) -> Option<Arc<Sop>> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(version)
            .cloned()
    }

    fn insert(&self, version: &str, sop: Arc<Sop>) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(version.to_owned(), sop);
    }
}

impl Store {
    /// The definition of SOP version `version`, parsed from `sop_versions` the first time
    /// this process asks. `None` when no such version is stored; a stored text that no
    /// longer parses (written by another build) is [`StoreError::Corrupt`].
    pub async fn sop_definition(&self, version: &str) -> Result<Option<Arc<Sop>>, StoreError> {
        if let Some(sop) = self.definitions.get(version) {
            return Ok(Some(sop));
        }
        let Some((source, body)) = self.sop_version_body(version).await? else {
            return Ok(None);
        };
        let sop = gatehouse_sop::parse(&source, &body).map_err(|e| {
            StoreError::Corrupt(format!("SOP version {version} does not parse: {e}"))
        })?;
        let sop = Arc::new(sop);
        self.definitions.insert(version, sop.clone());
        Ok(Some(sop))
    }

    /// Keeps `sop` as the definition of its version: for one being saved in a transaction
    /// still open, which readers outside it cannot see yet. (Kept even if that transaction
    /// rolls back: a version is its text's hash, so the parse is right whenever it is asked.)
    pub fn keep_sop_definition(&self, sop: Arc<Sop>) {
        let version = sop.version.clone();
        self.definitions.insert(&version, sop);
    }
}
