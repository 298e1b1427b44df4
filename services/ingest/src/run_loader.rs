//! Runs as the API reads them: the row, the SOP definition the run was frozen with, and
//! its decoded state.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use gatehouse_engine::RunState;
use gatehouse_sop::Sop;
use gatehouse_store::{RunRow, Store};
use uuid::Uuid;

use crate::ApiError;

/// Reads runs; the definitions are parsed once per version (a version never changes).
#[derive(Clone)]
pub(crate) struct RunLoader {
    store: Store,
    definitions: Arc<Mutex<HashMap<String, Arc<Sop>>>>,
}

impl RunLoader {
    pub(crate) fn new(store: Store) -> Self {
        Self {
            store,
            definitions: Arc::default(),
        }
    }

    /// A run with its frozen definition and decoded state, or 404.
    pub(crate) async fn load(&self, id: Uuid) -> Result<(RunRow, Arc<Sop>, RunState), ApiError> {
        let row = self
            .store
            .run(id)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("no run {id}")))?;
        self.decode(row).await
    }

    /// The definition and decoded state of a run already read.
    pub(crate) async fn decode(
        &self,
        row: RunRow,
    ) -> Result<(RunRow, Arc<Sop>, RunState), ApiError> {
        let sop = self.definition(&row.sop_version).await?;
        let state = serde_json::from_str(&row.state)
            .map_err(|e| ApiError::Internal(format!("run {} has unreadable state: {e}", row.id)))?;
        Ok((row, sop, state))
    }

    async fn definition(&self, version: &str) -> Result<Arc<Sop>, ApiError> {
        if let Some(sop) = self
            .definitions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(version)
        {
            return Ok(sop.clone());
        }
        let (source, body) =
            self.store.sop_version_body(version).await?.ok_or_else(|| {
                ApiError::Internal(format!("SOP version {version} is not stored"))
            })?;
        let sop = Arc::new(
            gatehouse_sop::parse(&source, &body).map_err(|e| ApiError::Internal(e.to_string()))?,
        );
        self.definitions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(version.to_owned(), sop.clone());
        Ok(sop)
    }
}
