//! What every consumer's handling of a delivery is logged and counted under, shared by the
//! [`Consumer`](crate::Consumer) loop and the runner's own job loop so both read the same.

use std::collections::HashMap;

use gatehouse_events::{Envelope, TraceParent};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::field::{Empty, display};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::{Delivery, Outcome};

/// The span one delivery is handled in. Every log line of its handling carries the trace
/// id the event came with, so one requirement's work can be followed through every service
/// and across NATS; the run and node (from the envelope's correlation) say what it is about.
///
/// The trace is the envelope's; the `traceparent` header (the same value, set by the relay)
/// stands in when the payload does not decode. When spans are exported (OpenTelemetry), the
/// trace is also the span's parent, so a collector shows it in the same trace.
pub fn event_span(
    consumer: &str,
    delivery: &Delivery,
    envelope: Option<&Envelope>,
) -> tracing::Span {
    let event = envelope.map_or(delivery.topic.as_str(), |e| e.event_type.as_str());
    let span = tracing::info_span!(
        "event",
        consumer,
        event,
        trace_id = Empty,
        run_id = Empty,
        node = Empty,
    );
    let header = || {
        delivery
            .traceparent
            .as_deref()
            .and_then(|t| t.parse::<TraceParent>().ok())
    };
    if let Some(trace) = envelope.and_then(|e| e.trace.clone()).or_else(header) {
        span.record("trace_id", trace.trace_id());
        continue_trace(&span, &trace);
    }
    if let Some(correlation) = envelope.map(|e| &e.correlation) {
        if let Some(run) = correlation.run_id {
            span.record("run_id", display(run));
        }
        if let Some(node) = &correlation.node_id {
            span.record("node", node.as_str());
        }
    }
    span
}

/// Makes `trace` the OpenTelemetry parent of `span`, so that the exported span belongs to
/// the trace its `trace_id` field names. Does nothing when no OpenTelemetry layer is
/// installed (export is off).
fn continue_trace(span: &tracing::Span, trace: &TraceParent) {
    let carrier = HashMap::from([("traceparent".to_owned(), trace.to_string())]);
    // An error means export is off, which is fine.
    let _ = span.set_parent(TraceContextPropagator::new().extract(&carrier));
}

/// Counts a delivery that comes again (`gatehouse_events_redelivered_total`): a handler
/// failed, a lease ran out, or a consumer died before acknowledging.
pub fn count_received(consumer: &str, delivery: &Delivery) {
    if delivery.deliveries > 1 {
        metrics::counter!("gatehouse_events_redelivered_total", "consumer" => consumer.to_owned())
            .increment(1);
    }
}

/// Counts how a delivery's handling ended (`gatehouse_events_consumed_total`, and
/// `gatehouse_events_dead_lettered_total` for a parked one). `None`: the bus or the store
/// failed, so the delivery comes back; that counts as `failed`, like a failing handler.
pub fn count_handled(consumer: &str, outcome: Option<&Outcome>) {
    let label = match outcome {
        Some(Outcome::Applied) => "applied",
        Some(Outcome::Duplicate) => "duplicate",
        Some(Outcome::Retrying { .. } | Outcome::DeadLettered { .. }) | None => "failed",
    };
    metrics::counter!("gatehouse_events_consumed_total",
        "consumer" => consumer.to_owned(), "outcome" => label)
    .increment(1);
    if let Some(Outcome::DeadLettered { .. }) = outcome {
        metrics::counter!("gatehouse_events_dead_lettered_total", "consumer" => consumer.to_owned())
            .increment(1);
    }
}
