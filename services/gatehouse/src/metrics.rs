//! Prometheus metrics at `/metrics`: the services record through the `metrics` facade and
//! this process renders them. Unauthenticated, like most scrape targets: it carries
//! counts and timings, never names or content.

use axum::Router;
use axum::routing::get;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Lateness buckets (seconds): a healthy scheduler fires within milliseconds; a minute or
/// more means it was down or overloaded.
const LATENESS_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 3600.0,
];

/// Webhook request to response (seconds): verified and stored, never processed inline, so
/// milliseconds; Slack and Discord give up after 3 s.
const WEBHOOK_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0,
];

/// A sandbox getting going (seconds): a process starts in milliseconds, a container in
/// under a second or two, an image pull or a repository clone takes longer.
const SANDBOX_START_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// One node attempt (seconds): scripts from a second to minutes, agents up to hours.
const NODE_BUCKETS: &[f64] = &[
    0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 14400.0,
];

/// A whole run, or a gate waiting for people (seconds): minutes to days.
const LONG_BUCKETS: &[f64] = &[
    1.0, 10.0, 30.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0, 86400.0,
    172800.0, 604800.0,
];

/// Installs the process-wide recorder; call once, before the services start.
pub fn install() -> anyhow::Result<PrometheusHandle> {
    let buckets = [
        ("gatehouse_schedule_lateness_seconds", LATENESS_BUCKETS),
        ("gatehouse_webhook_duration_seconds", WEBHOOK_BUCKETS),
        ("gatehouse_sandbox_start_seconds", SANDBOX_START_BUCKETS),
        ("gatehouse_node_duration_seconds", NODE_BUCKETS),
        ("gatehouse_run_duration_seconds", LONG_BUCKETS),
        ("gatehouse_gate_wait_seconds", LONG_BUCKETS),
    ];
    let mut builder = PrometheusBuilder::new();
    for (name, bounds) in buckets {
        builder = builder.set_buckets_for_metric(Matcher::Full(name.into()), bounds)?;
    }
    Ok(builder.install_recorder()?)
}

/// `GET /metrics` in the Prometheus text format.
pub fn router(handle: PrometheusHandle) -> Router {
    Router::new().route(
        "/metrics",
        get(move || {
            let handle = handle.clone();
            async move { handle.render() }
        }),
    )
}
