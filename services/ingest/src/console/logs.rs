//! A run's output in the console: paged (never loaded whole: a run may have written
//! hundreds of megabytes) and followed live with server-sent events.
//!
//! The event stream sends `log` events (a batch of lines, the event id the last `seq`, so
//! a reconnecting browser resumes where it stopped with `Last-Event-ID`), `state` when
//! the run's state changed (the page then refreshes its graph and nodes), and `end` once
//! the run has finished and every line was sent. A stream closes itself after
//! [`LIFETIME`] and the browser reconnects at once: so the session is checked again,
//! signing out stops it, and no stream holds a connection open past a shutdown.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use gatehouse_store::LogRow;
use maud::{Markup, html};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::inbox::short;
use super::page::{PageError, frame};
use super::session::Viewer;
use crate::api::runs;
use crate::ids;
use crate::{ApiError, ApiState};
use gatehouse_store::IdKind;

/// Lines the run page shows (the end of the output).
pub(crate) const LOG_TAIL: i64 = 200;
/// Lines on one page of `/runs/{id}/logs`.
const PAGE: i64 = 1000;
/// Lines sent in one `log` event.
const BATCH: i64 = 500;
/// How often the stream looks for new lines and state while the run moves; while nothing
/// happens (a run waiting days at a gate, its page left open) it looks less and less
/// often, down to once every [`IDLE_POLL`].
const POLL: Duration = Duration::from_millis(300);
const IDLE_POLL: Duration = Duration::from_secs(3);
/// How long one stream lasts before the browser is made to reconnect.
const LIFETIME: Duration = Duration::from_secs(20);
/// How soon the browser reconnects.
const RECONNECT: Duration = Duration::from_millis(500);

/// The lines as the page shows them: one element each, the stream as its class.
pub(crate) fn log_lines(lines: &[LogRow]) -> Markup {
    html! {
        @for l in lines {
            span class=(if l.stream == "stderr" { "line stderr" } else { "line" }) {
                span.src { "[" (l.node) "#" (l.attempt) "] " } (l.line) "\n"
            }
        }
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct PageQuery {
    /// Lines after this `seq`.
    after: Option<i64>,
    /// Lines before this `seq` (the page before); the end of the output when neither.
    before: Option<i64>,
}

/// `GET /runs/{id}/logs`: one page of output, with links to the pages around it.
pub(crate) async fn page(
    State(api): State<ApiState>,
    viewer: Viewer,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Result<Markup, PageError> {
    let id = ids::resolve(&api, IdKind::Run, &id, viewer.caller.reader()).await?;
    runs::readable_row(&api, id, viewer.caller.reader()).await?;
    let lines = match (q.after, q.before) {
        (Some(after), _) => api.store.logs(id, after.max(0), PAGE).await?,
        (None, before) => api.store.logs_before(id, before, PAGE).await?,
    };
    let first = lines.first().map(|l| l.seq);
    let last = lines.last().map(|l| l.seq);
    let more_before = match first {
        Some(seq) => !api.store.logs_before(id, Some(seq), 1).await?.is_empty(),
        None => false,
    };
    let more_after = match last {
        Some(seq) => !api.store.logs(id, seq, 1).await?.is_empty(),
        None => false,
    };
    let body = html! {
        h1 { "Output of run " a href=(format!("/runs/{id}")) { (short(&id.to_string())) } }
        nav.pager aria-label="Pages" {
            @if let (true, Some(seq)) = (more_before, first) { a href=(format!("/runs/{id}/logs?before={seq}")) rel="prev" { "← Earlier" } }
            a href=(format!("/runs/{id}/logs?after=0")) { "Beginning" }
            a href=(format!("/runs/{id}/logs")) { "End" }
            @if let (true, Some(seq)) = (more_after, last) { a href=(format!("/runs/{id}/logs?after={seq}")) rel="next" { "Later →" } }
        }
        @if lines.is_empty() { p.empty { "No output here." } }
        @else { pre id="log" tabindex="0" { (log_lines(&lines)) } }
    };
    Ok(frame("Output", Some(&viewer), body))
}

#[derive(Debug, Deserialize)]
pub(crate) struct EventsQuery {
    after: Option<i64>,
}

/// One line as a `log` event carries it.
#[derive(Debug, Serialize)]
struct Line<'a> {
    seq: i64,
    node: &'a str,
    attempt: i32,
    stream: &'a str,
    line: &'a str,
}

/// Where the stream is.
struct Follow {
    api: ApiState,
    id: Uuid,
    after: i64,
    revision: Option<i64>,
    ended: bool,
    began: std::time::Instant,
    /// Whether the browser was told how soon to reconnect.
    hinted: bool,
}

/// `GET /runs/{id}/events`: the run's new output and state changes as they happen.
pub(crate) async fn events(
    State(api): State<ApiState>,
    viewer: Viewer,
    Path(id): Path<String>,
    headers: HeaderMap,
    Query(q): Query<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, PageError> {
    let id = ids::resolve(&api, IdKind::Run, &id, viewer.caller.reader()).await?;
    let row = runs::readable_row(&api, id, viewer.caller.reader()).await?;
    let resumed = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i64>().ok());
    let follow = Follow {
        api,
        id,
        after: resumed.or(q.after).unwrap_or(0).max(0),
        revision: Some(row.revision),
        ended: false,
        began: std::time::Instant::now(),
        hinted: false,
    };
    let stream = futures::stream::unfold(follow, |mut f| async move {
        if f.ended || f.began.elapsed() >= LIFETIME {
            return None;
        }
        if !f.hinted {
            f.hinted = true;
            return Some((
                Ok(Event::default().retry(RECONNECT).comment("following")),
                f,
            ));
        }
        let mut wait = POLL;
        let event = loop {
            match next_event(&mut f).await {
                Ok(Some(event)) => break event,
                // Closed without `end`: the browser reconnects and resumes.
                Ok(None) if f.began.elapsed() >= LIFETIME => return None,
                Ok(None) => {
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(IDLE_POLL);
                }
                Err(e) => {
                    tracing::warn!(run = %f.id, error = %e, "run event stream stopped");
                    f.ended = true;
                    break Event::default().event("end").data("error");
                }
            }
        };
        Some((Ok(event), f))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// The next event to send, if anything happened: a change of state first (so a run that
/// prints without pause still shows its gates opening), then new lines, then the end.
async fn next_event(f: &mut Follow) -> Result<Option<Event>, ApiError> {
    let row = f
        .api
        .store
        .run(f.id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no run {}", f.id)))?;
    if f.revision != Some(row.revision) {
        f.revision = Some(row.revision);
        return Ok(Some(
            Event::default().event("state").data(row.status.to_string()),
        ));
    }
    let lines = f.api.store.logs(f.id, f.after, BATCH).await?;
    if let Some(last) = lines.last() {
        f.after = last.seq;
        let batch: Vec<Line> = lines
            .iter()
            .map(|l| Line {
                seq: l.seq,
                node: &l.node,
                attempt: l.attempt,
                stream: &l.stream,
                line: &l.line,
            })
            .collect();
        let data = serde_json::to_string(&batch).map_err(|e| ApiError::Internal(e.to_string()))?;
        return Ok(Some(
            Event::default()
                .event("log")
                .id(f.after.to_string())
                .data(data),
        ));
    }
    if row.status.is_terminal() {
        f.ended = true;
        return Ok(Some(
            Event::default().event("end").data(row.status.to_string()),
        ));
    }
    Ok(None)
}
