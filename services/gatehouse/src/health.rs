//! `/healthz` and `/readyz`, which every service answers, and the hand-over to the
//! service's own routes once it runs.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use gatehouse_blobs::Blobs;
use gatehouse_bus::Bus;
use gatehouse_store::Store;
use tower::ServiceExt;

/// What a service needs answering before it is ready: its database, its bus and its blob
/// store.
#[derive(Clone)]
pub struct Backends {
    pub store: Store,
    pub bus: Arc<dyn Bus>,
    pub blobs: Blobs,
}

impl Backends {
    /// The first of them that is not ready, and why; each is given `within` to answer.
    pub async fn problem(&self, within: Duration) -> Option<(&'static str, String)> {
        if let Err(why) = answers(within, self.store.check_ready()).await {
            return Some(("database", why));
        }
        if let Err(why) = answers(within, self.bus.check_ready()).await {
            return Some(("bus", why));
        }
        if let Err(why) = answers(within, self.blobs.check_ready()).await {
            return Some(("blob store", why));
        }
        None
    }
}

/// `check`'s answer, or that it gave none within `within`.
async fn answers<E: std::fmt::Display>(
    within: Duration,
    check: impl Future<Output = Result<(), E>>,
) -> Result<(), String> {
    match tokio::time::timeout(within, check).await {
        Ok(answer) => answer.map_err(|e| e.to_string()),
        Err(_) => Err(format!("no answer within {within:?}")),
    }
}

/// `/healthz`: the process answers. `/readyz`: the service runs (`routes` are set: ingest's
/// API, an empty router for the others), its database answers with every migration
/// applied, and its bus and blob store answer (503 with the reason otherwise). Every other
/// path goes to `routes`, 503 before they are set.
pub fn router(backends: Backends, routes: Arc<OnceLock<Router>>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route(
            "/readyz",
            get({
                let routes = routes.clone();
                move || {
                    let (backends, started) = (backends.clone(), routes.get().is_some());
                    async move { readiness(&backends, started).await }
                }
            }),
        )
        .fallback(move |request: Request| {
            let routes = routes.clone();
            async move {
                match routes.get() {
                    Some(routes) => match routes.clone().oneshot(request).await {
                        Ok(response) => response,
                        Err(never) => match never {},
                    },
                    None => (StatusCode::SERVICE_UNAVAILABLE, "starting\n").into_response(),
                }
            }
        })
}

/// How long `/readyz` waits for the database, the bus or the blob store: probes give up
/// after a second or a few, and an answer that says why beats a probe timeout.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

async fn readiness(backends: &Backends, started: bool) -> Response {
    if let Some((what, why)) = backends.problem(READY_TIMEOUT).await {
        return (StatusCode::SERVICE_UNAVAILABLE, format!("{what}: {why}\n")).into_response();
    }
    if !started {
        return (StatusCode::SERVICE_UNAVAILABLE, "starting\n").into_response();
    }
    (StatusCode::OK, "ready\n").into_response()
}
