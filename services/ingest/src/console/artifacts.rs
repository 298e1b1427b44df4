//! An artifact shown in the console: Markdown rendered and sanitised, other text as text,
//! anything else offered as a download. The bytes are read as the API serves them (no
//! links followed, the recorded hash checked).

use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use maud::{PreEscaped, html};

use super::inbox::short;
use super::markdown::to_safe_html;
use super::page::{PageError, frame};
use super::session::Viewer;
use crate::ApiState;
use crate::api::artifacts::{read, respond};
use crate::ids;
use gatehouse_store::IdKind;

/// Larger artifacts are offered as downloads, not shown in the page.
const SHOWN_AT_MOST: usize = 2 * 1024 * 1024;

/// `GET /runs/{id}/artifacts/{node}/{attempt}/{name}`
pub(crate) async fn show(
    State(api): State<ApiState>,
    viewer: Viewer,
    Path((id, node, attempt, name)): Path<(String, String, u32, String)>,
) -> Result<Response, PageError> {
    let id = ids::resolve(&api, IdKind::Run, &id, viewer.caller.reader()).await?;
    let (row, bytes) = read(&api, viewer.caller.reader(), id, &node, attempt, &name).await?;
    let download = format!("/runs/{id}/download/{node}/{attempt}/{name}");
    let markdown = name.ends_with(".md") || name.ends_with(".markdown");
    let text = (bytes.len() <= SHOWN_AT_MOST)
        .then(|| String::from_utf8(bytes).ok())
        .flatten();
    let body = html! {
        h1 { (row.name) }
        p.meta {
            "From " a href=(format!("/runs/{id}#node-{node}")) { (node) } " attempt " (attempt)
            " of run " a href=(format!("/runs/{id}")) { (short(&id.to_string())) }
            " · " (row.size) " bytes · " code.sha { "sha256:" (row.sha256) }
            " · " a href=(download) { "download" }
        }
        @match (text, markdown) {
            (Some(text), true) => article.markdown { (PreEscaped(to_safe_html(&text))) },
            (Some(text), false) => pre.artifact tabindex="0" { (text) },
            (None, _) => p { "This file is not shown here (it is binary or larger than 2 MiB); download it instead." },
        }
    };
    Ok(frame(&row.name, Some(&viewer), body).into_response())
}

/// `GET /runs/{id}/download/{node}/{attempt}/{name}`: the file, always as a download.
pub(crate) async fn download(
    State(api): State<ApiState>,
    viewer: Viewer,
    Path((id, node, attempt, name)): Path<(String, String, u32, String)>,
) -> Result<Response, PageError> {
    let id = ids::resolve(&api, IdKind::Run, &id, viewer.caller.reader()).await?;
    let (row, bytes) = read(&api, viewer.caller.reader(), id, &node, attempt, &name).await?;
    let file_name: String = row
        .name
        .rsplit('/')
        .next()
        .unwrap_or(&row.name)
        .chars()
        .filter(|c| c.is_ascii_graphic() && *c != '"' && *c != '\\' || *c == ' ')
        .collect();
    let mut response = respond(&row.name, bytes);
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{file_name}\"")) {
        response
            .headers_mut()
            .insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}
