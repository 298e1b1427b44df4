//! `GET /runs/{id}/artifacts/{node}/{attempt}/{name}`: what a node produced, for the
//! reviewer deciding its gate.
//!
//! A node's files are untrusted: the file is opened without following links, must be the
//! regular file that was recorded (its SHA-256 is checked), and is served so that no
//! browser runs it: never as HTML, with `nosniff` and a sandboxing CSP, and as a download
//! unless it is plain text.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use gatehouse_blobs::{BlobError, Digest};
use gatehouse_store::ArtifactRow;
use uuid::Uuid;

use crate::error::ErrorBody;
use crate::ids;
use crate::projects::Reader;
use crate::rights::Caller;
use crate::{ApiError, ApiState};
use gatehouse_store::IdKind;

/// Artifacts above this are not served through the API.
const MAX_SERVED: u64 = 64 * 1024 * 1024;

/// One artifact's bytes.
#[utoipa::path(get, path = "/runs/{id}/artifacts/{node}/{attempt}/{name}",
    params(("id" = Uuid, Path, description = "Run id"), ("node" = String, Path, description = "Node id"),
        ("attempt" = u32, Path, description = "The node's attempt"),
        ("name" = String, Path, description = "The artifact's name (may contain `/`)")),
    responses((status = 200, description = "The file", content_type = "application/octet-stream"),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody)))]
pub async fn download(
    State(api): State<ApiState>,
    caller: Caller,
    Path((id, node, attempt, name)): Path<(String, String, u32, String)>,
) -> Result<Response, ApiError> {
    let id = ids::resolve(&api, IdKind::Run, &id, caller.reader()).await?;
    let (row, bytes) = read(&api, caller.reader(), id, &node, attempt, &name).await?;
    Ok(respond(&row.name, bytes))
}

/// An artifact's row and bytes, checked: of a run `reader` may read (404 otherwise, as for
/// a run that does not exist), recorded for this attempt, read without following links
/// from inside its directory, and unchanged since it was recorded.
pub(crate) async fn read(
    api: &ApiState,
    reader: Reader<'_>,
    id: Uuid,
    node: &str,
    attempt: u32,
    name: &str,
) -> Result<(ArtifactRow, Vec<u8>), ApiError> {
    let not_found = || {
        ApiError::NotFound(format!(
            "run {id} recorded no artifact `{name}` for attempt {attempt} of node `{node}`"
        ))
    };
    crate::api::runs::readable_row(api, id, reader).await?;
    let row = api
        .store
        .artifacts(id)
        .await?
        .into_iter()
        .find(|a| a.node == node && i64::from(a.attempt) == i64::from(attempt) && a.name == name)
        .ok_or_else(not_found)?;
    let bytes = bytes_of(api, &row).await?;
    Ok((row, bytes))
}

/// The bytes of an artifact whose row was read from a run the caller may read: from the
/// blob store, or the data directory, checked against the recorded digest.
pub(crate) async fn bytes_of(api: &ApiState, row: &ArtifactRow) -> Result<Vec<u8>, ApiError> {
    match from_blobs(api, row).await? {
        Some(bytes) => Ok(bytes),
        None => from_data_dir(api, row).await,
    }
}

/// The artifact's bytes from the blob store, checked against its digest there; none when
/// the store does not have it (recorded before there was one).
async fn from_blobs(api: &ApiState, row: &ArtifactRow) -> Result<Option<Vec<u8>>, ApiError> {
    let Some(blobs) = &api.blobs else {
        return Ok(None);
    };
    let digest: Digest = row.sha256.parse().map_err(|_| {
        ApiError::Conflict(format!(
            "artifact `{}` was recorded with a malformed digest; it is not served",
            row.name
        ))
    })?;
    match blobs.get_bytes(&digest, MAX_SERVED).await {
        Ok(bytes) => Ok(Some(bytes.to_vec())),
        Err(BlobError::NotFound(_)) => Ok(None),
        Err(BlobError::TooLarge { size, .. }) => Err(ApiError::Conflict(format!(
            "artifact `{}` is {size} bytes, more than the {MAX_SERVED} served",
            row.name
        ))),
        Err(err @ BlobError::Corrupt { .. }) => {
            tracing::warn!(run = %row.run_id, node = %row.node, error = %err, "artifact not served");
            Err(ApiError::Conflict(format!(
                "artifact `{}` does not match what was recorded; it is not served",
                row.name
            )))
        }
        Err(err) => {
            tracing::warn!(error = %err, "reading an artifact from the blob store failed");
            Err(ApiError::Unavailable)
        }
    }
}

/// An artifact recorded before the blob store, from the data directory the runners
/// shared then; stored as `<artifact directory>/<name>` below it, and walked without
/// following links.
async fn from_data_dir(api: &ApiState, row: &ArtifactRow) -> Result<Vec<u8>, ApiError> {
    let (id, node, attempt, name) = (row.run_id, &row.node, row.attempt, &row.name);
    let not_found = || {
        ApiError::NotFound(format!(
            "the content of artifact `{name}` of run {id} is in no blob store or data directory here"
        ))
    };
    let data_dir = api.data_dir.clone().ok_or_else(not_found)?;
    let dir = row
        .location
        .strip_suffix(&row.name)
        .filter(|d| d.ends_with('/'))
        .map(|d| d.trim_end_matches('/').to_owned())
        .ok_or_else(not_found)?;
    let refused = |e: gatehouse_sandbox::untrusted::Refused| {
        tracing::warn!(run = %id, %node, attempt, error = %e, "artifact not served");
        ApiError::Conflict(format!("{e}; it is not served"))
    };
    let bytes = tokio::task::spawn_blocking({
        let name = row.name.clone();
        move || gatehouse_sandbox::untrusted::read_in(&data_dir, &dir, &name, MAX_SERVED)
    })
    .await
    .map_err(|e| ApiError::Internal(e.to_string()))?
    .map_err(refused)?;
    if crate::auth::sha256_hex(&bytes) != row.sha256 {
        return Err(ApiError::Conflict(format!(
            "artifact `{name}` changed after it was recorded; it is not served"
        )));
    }
    Ok(bytes)
}

/// The file as a response no browser runs: never as HTML, `nosniff`, a sandboxing CSP,
/// and a download unless it is plain text.
pub(crate) fn respond(name: &str, bytes: Vec<u8>) -> Response {
    let (content_type, inline) = content_type(name);
    let file_name = name.rsplit('/').next().unwrap_or(name).replace('"', "");
    let disposition = if inline { "inline" } else { "attachment" };
    let mut response = Response::new(Body::from(bytes));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox; default-src 'none'"),
    );
    if let Ok(value) = HeaderValue::from_str(&format!("{disposition}; filename=\"{file_name}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

/// The content type a name suggests, and whether it is shown rather than downloaded.
/// Markup a browser would run (HTML, SVG) is served as plain text or a download.
fn content_type(name: &str) -> (&'static str, bool) {
    let extension = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "md" | "markdown" => ("text/markdown; charset=utf-8", true),
        "txt" | "log" | "diff" | "patch" | "csv" | "yaml" | "yml" | "toml" | "html" | "htm"
        | "svg" | "xml" => ("text/plain; charset=utf-8", true),
        "json" => ("application/json", true),
        "png" => ("image/png", false),
        "jpg" | "jpeg" => ("image/jpeg", false),
        "pdf" => ("application/pdf", false),
        "gz" | "tgz" => ("application/gzip", false),
        "zip" => ("application/zip", false),
        _ => ("application/octet-stream", false),
    }
}

#[cfg(test)]
mod tests {
    use super::content_type;

    #[test]
    fn markup_is_never_served_as_markup() {
        assert_eq!(content_type("report.md").0, "text/markdown; charset=utf-8");
        assert_eq!(content_type("page.HTML").0, "text/plain; charset=utf-8");
        assert_eq!(content_type("x.svg").0, "text/plain; charset=utf-8");
        assert_eq!(content_type("blob"), ("application/octet-stream", false));
    }
}
