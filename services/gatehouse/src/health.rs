//! `/healthz` and `/readyz`, which every service answers, and the hand-over to the
//! service's own routes once it runs.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use gatehouse_bus::Bus;
use gatehouse_store::Store;
use tower::ServiceExt;

/// `/healthz`: the process answers. `/readyz`: the service runs (`routes` are set: ingest's
/// API, an empty router for the others), its database answers with every migration applied
/// and its bus answers (503 with the reason otherwise). Every other path goes to `routes`,
/// 503 before they are set.
pub fn router(store: Store, bus: Arc<dyn Bus>, routes: Arc<OnceLock<Router>>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route(
            "/readyz",
            get({
                let routes = routes.clone();
                move || {
                    let (store, bus, started) =
                        (store.clone(), bus.clone(), routes.get().is_some());
                    async move { readiness(&store, bus.as_ref(), started).await }
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

/// How long `/readyz` waits for the database or the bus: probes give up after a second or
/// a few, and an answer that says why beats a probe timeout.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

async fn readiness(store: &Store, bus: &dyn Bus, started: bool) -> Response {
    let unavailable = |what: &str, why: String| {
        (StatusCode::SERVICE_UNAVAILABLE, format!("{what}: {why}\n")).into_response()
    };
    let no_answer = || format!("no answer within {READY_TIMEOUT:?}");
    match tokio::time::timeout(READY_TIMEOUT, store.check_ready()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return unavailable("database", e.to_string()),
        Err(_) => return unavailable("database", no_answer()),
    }
    match tokio::time::timeout(READY_TIMEOUT, bus.check_ready()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return unavailable("bus", e.to_string()),
        Err(_) => return unavailable("bus", no_answer()),
    }
    if !started {
        return (StatusCode::SERVICE_UNAVAILABLE, "starting\n").into_response();
    }
    (StatusCode::OK, "ready\n").into_response()
}
