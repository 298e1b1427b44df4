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

/// Installs the process-wide recorder; call once, before the services start.
pub fn install() -> anyhow::Result<PrometheusHandle> {
    Ok(PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full("gatehouse_schedule_lateness_seconds".into()),
            LATENESS_BUCKETS,
        )?
        .install_recorder()?)
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
