//! `/sops`: the SOPs this deployment offers now, the files it left out with their errors,
//! and a reload of the files without a restart.
//!
//! The files are also looked at every `server.sop_reload` and reloaded when they change;
//! the reload here is for a deployment that turned that off, and for scripts that want the
//! outcome of their edit at once.

pub(crate) mod views;

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use gatehouse_sop::SopError;

use crate::ApiError;
use crate::ApiState;
use crate::error::ErrorBody;
use crate::rights::Caller;
use crate::views::{InvalidSopView, ReloadView, SopView};

/// The SOPs this deployment offers now.
#[utoipa::path(get, path = "/sops", responses((status = 200, body = [SopView])))]
pub async fn list(State(api): State<ApiState>) -> Json<Vec<SopView>> {
    Json(
        api.catalog
            .current()
            .iter()
            .map(|s| SopView {
                name: s.name.clone(),
                title: s.title.clone(),
                version: s.version.clone(),
                source: s.source.clone(),
                nodes: s.nodes.len(),
                unavailable: s
                    .check_start(&s.params_with_defaults(&BTreeMap::new()))
                    .err()
                    .filter(|m| m.contains("cannot run yet")),
            })
            .collect(),
    )
}

/// The SOP files the last load left out, each with its problems: they start no runs
/// until they are fixed.
#[utoipa::path(get, path = "/sops/invalid", responses((status = 200, body = [InvalidSopView])))]
pub async fn invalid(State(api): State<ApiState>) -> Json<Vec<InvalidSopView>> {
    Json(api.catalog.invalid().iter().map(invalid_view).collect())
}

/// Reads the SOP files again now: new runs start on what they say from here on, runs
/// already started keep their version. Administrators only.
#[utoipa::path(post, path = "/sops/reload", responses((status = 200, body = ReloadView),
    (status = 403, body = ErrorBody)))]
pub async fn reload(
    State(api): State<ApiState>,
    caller: Caller,
) -> Result<Json<ReloadView>, ApiError> {
    caller.require_admin("reload the SOP files")?;
    let library = api.catalog.clone();
    let reloaded = tokio::task::spawn_blocking(move || library.reload())
        .await
        .map_err(|e| ApiError::Internal(format!("reloading the SOP files: {e}")))?;
    tracing::info!(
        by = %caller.person,
        added = %reloaded.added.join(","),
        changed = %reloaded.changed.join(","),
        removed = %reloaded.removed.join(","),
        invalid = reloaded.invalid.len(),
        "SOP files reloaded"
    );
    Ok(Json(ReloadView {
        sops: api.catalog.current().iter().count(),
        added: reloaded.added,
        changed: reloaded.changed,
        removed: reloaded.removed,
        invalid: reloaded.invalid.iter().map(invalid_view).collect(),
    }))
}

/// A file left out, as the API shows it.
pub(crate) fn invalid_view(error: &SopError) -> InvalidSopView {
    InvalidSopView {
        file: error
            .diagnostics
            .first()
            .map(|d| d.file.clone())
            .unwrap_or_default(),
        problems: error.diagnostics.iter().map(ToString::to_string).collect(),
    }
}
