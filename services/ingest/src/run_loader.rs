//! Runs as the API reads them: the row, the SOP definition the run was frozen with, and
//! its decoded state.

use std::sync::Arc;

use gatehouse_engine::RunState;
use gatehouse_sop::Sop;
use gatehouse_store::{RunRow, Store};
use uuid::Uuid;

use crate::ApiError;

/// Reads runs with the definitions they were frozen with.
#[derive(Clone)]
pub(crate) struct RunLoader {
    store: Store,
}

impl RunLoader {
    pub(crate) fn new(store: Store) -> Self {
        Self { store }
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
        self.store
            .sop_definition(version)
            .await?
            .ok_or_else(|| ApiError::Internal(format!("SOP version {version} is not stored")))
    }
}
