//! Where traces start: each API request, each webhook delivery and each reconciled issue
//! gets one trace, which every event it causes continues (so the scheduler, the runners and
//! the notifier log the same trace id for that work), and a span carrying its trace id.
//! Webhook requests are also timed (`gatehouse_webhook_duration_seconds`). When spans are
//! exported (OpenTelemetry), each span's trace is also its parent: see [`continue_trace`].

use std::collections::HashMap;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use gatehouse_events::TraceParent;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use sha2::{Digest, Sha256};
use tracing::Instrument;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

tokio::task_local! {
    /// The trace of the work this task is doing for a request or a delivery.
    static TRACE: TraceParent;
}

/// The traceparent for an event emitted now: a child of the current request's or
/// delivery's trace, or a trace of its own outside of one.
pub(crate) fn for_event() -> TraceParent {
    TRACE
        .try_with(TraceParent::child)
        .unwrap_or_else(|_| TraceParent::new_root())
}

/// Runs `work` as part of `trace`: the events it emits continue it.
pub(crate) async fn within<F: Future>(trace: TraceParent, work: F) -> F::Output {
    TRACE.scope(trace, work).await
}

/// The trace of a webhook delivery, derived from its source and delivery id: the request
/// that stored the delivery and the later processing of it (perhaps by another replica,
/// perhaps after a restart) log the same trace id without storing one, and so does a
/// redelivery of it.
pub(crate) fn of_delivery(source: &str, delivery: &str) -> TraceParent {
    let digest = Sha256::digest(format!("{source}:{delivery}").as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    // Parsing refuses the all-zero ids W3C forbids; a digest is practically never that.
    format!("00-{}-{}-01", &hex[..32], &hex[32..48])
        .parse()
        .unwrap_or_else(|_| TraceParent::new_root())
}

/// Makes `trace` the OpenTelemetry parent of `span`, so that the exported span belongs to
/// the trace its `trace_id` field names (and a collector shows the request, its delivery
/// and every service's handling of its events as one trace). Call it before the span has
/// children. Does nothing when no OpenTelemetry layer is installed (export is off).
pub(crate) fn continue_trace(span: &tracing::Span, trace: &TraceParent) {
    let carrier = HashMap::from([("traceparent".to_owned(), trace.to_string())]);
    // An error means export is off, or the span had started (a child came first) and keeps
    // a trace of its own.
    let _ = span.set_parent(TraceContextPropagator::new().extract(&carrier));
}

/// Middleware for `/api/v1`: a trace per request, in a `request` span with its method and
/// route (the route's pattern, not the path, so ids stay out of it). The trace is new,
/// unless the caller sent a W3C `traceparent` of its own: then the request continues it.
pub(crate) async fn api_request(request: Request, next: Next) -> Response {
    let trace = request
        .headers()
        .get("traceparent")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<TraceParent>().ok())
        .unwrap_or_else(TraceParent::new_root);
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("-", MatchedPath::as_str)
        .to_owned();
    let span = tracing::info_span!(
        "request",
        method = %request.method(),
        route,
        trace_id = trace.trace_id(),
    );
    continue_trace(&span, &trace);
    within(trace, next.run(request)).instrument(span).await
}

/// Middleware for the webhooks of `source`: times the request from its arrival to its
/// response (`gatehouse_webhook_duration_seconds{source}`) and runs it in a `webhook`
/// span, to which storing the delivery adds the delivery id and its trace id (and, when
/// spans are exported, that trace as the span's parent: [`continue_trace`]).
pub(crate) async fn webhook(
    State(source): State<&'static str>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let span = tracing::info_span!("webhook", source, delivery = Empty, trace_id = Empty);
    let response = next.run(request).instrument(span).await;
    metrics::histogram!("gatehouse_webhook_duration_seconds", "source" => source)
        .record(started.elapsed().as_secs_f64());
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_always_has_the_same_trace() {
        let a = of_delivery("github", "72d3162e-cc78-11e3-81ab-4c9367dc0958");
        let b = of_delivery("github", "72d3162e-cc78-11e3-81ab-4c9367dc0958");
        let other = of_delivery("slack", "72d3162e-cc78-11e3-81ab-4c9367dc0958");
        assert_eq!(a.trace_id(), b.trace_id());
        assert_ne!(a.trace_id(), other.trace_id());
        assert_eq!(a.trace_id().len(), 32);
    }

    #[tokio::test]
    async fn events_continue_the_trace_they_are_emitted_in() {
        let root = TraceParent::new_root();
        let (first, second) = within(root.clone(), async { (for_event(), for_event()) }).await;
        assert_eq!(first.trace_id(), root.trace_id());
        assert_eq!(second.trace_id(), root.trace_id());
        assert_ne!(first, second, "each event has a span of its own");
        assert_ne!(for_event().trace_id(), root.trace_id());
    }
}
