//! The SOP definitions runs are frozen with: parsed once per process (the cache is
//! `sop_cache.rs`), and the versions stored.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use gatehouse_sop::Sop;

use crate::error::StoreError;
use crate::store::{Store, with_pool};

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
        self.definitions.stored([version.to_owned()]);
        Ok(Some(sop))
    }

    /// Keeps `sop` as the definition of its version: for one being saved in a transaction
    /// still open, which readers outside it cannot see yet. (Kept even if that transaction
    /// rolls back: a version is its text's hash, so the parse is right whenever it is asked.)
    pub fn keep_sop_definition(&self, sop: Arc<Sop>) {
        let version = sop.version.clone();
        self.definitions.insert(&version, sop);
    }

    /// The versions of SOP `name` that runs were started with, newest first, with how many
    /// runs each has.
    pub async fn sop_versions_of(&self, name: &str) -> Result<Vec<SopVersionRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT v.version, v.source, v.created_at,
                        (SELECT COUNT(*) FROM runs r WHERE r.sop_version = v.version) AS runs
                 FROM sop_versions v WHERE v.name = $1 ORDER BY v.created_at DESC",
            )
            .bind(name)
            .fetch_all(pool)
            .await?
        }))
    }
}

/// A stored version of an SOP.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SopVersionRow {
    /// `sha256:<hex>` of its text.
    pub version: String,
    /// Where it was loaded from.
    pub source: String,
    /// When the first run on it was started.
    pub created_at: DateTime<Utc>,
    /// Runs started on it.
    pub runs: i64,
}
