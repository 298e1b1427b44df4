//! Prometheus metrics at `/metrics`: the services record through the `metrics` facade and
//! this process renders them. They carry counts and timings, never names or content, but
//! they do tell an outsider how busy the deployment is and what fails: so `/metrics` can be
//! moved to a listener of its own (`server.metrics_listen`, a port only the scraper
//! reaches) or require a bearer token (`server.metrics_token`), or both.

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};

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

/// `GET /metrics` in the Prometheus text format; with `token`, only for requests that
/// carry `Authorization: Bearer <token>` (401 otherwise).
pub fn router(handle: PrometheusHandle, token: Option<SecretString>) -> Router {
    let token = token.map(|t| Sha256::digest(t.expose_secret().as_bytes()));
    Router::new().route(
        "/metrics",
        get(move |headers: HeaderMap| {
            let handle = handle.clone();
            async move {
                if let Some(expected) = token
                    && !bearer_matches(&headers, &expected)
                {
                    return (
                        StatusCode::UNAUTHORIZED,
                        [(header::WWW_AUTHENTICATE, "Bearer")],
                        "/metrics needs Authorization: Bearer <server.metrics_token>\n",
                    )
                        .into_response();
                }
                handle.render().into_response()
            }
        }),
    )
}

/// The main listener's `/metrics` when `server.metrics_listen` serves it instead: 404, as
/// for any path that is not there (and not the 503 other paths answer while starting).
pub fn elsewhere() -> Router {
    Router::new().route("/metrics", get(|| async { StatusCode::NOT_FOUND }))
}

/// Whether the request's bearer token is the expected one. The digests are compared, all
/// of their bytes every time, so the answer's timing says nothing about the token.
fn bearer_matches(headers: &HeaderMap, expected: &[u8]) -> bool {
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let given = Sha256::digest(given.trim().as_bytes());
    given
        .iter()
        .zip(expected)
        .fold(0u8, |diff, (a, b)| diff | (a ^ b))
        == 0
}
