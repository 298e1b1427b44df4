//! `/healthz` and `/readyz`, which every service answers, and the hand-over to the
//! service's own routes once it runs.

use std::sync::{Arc, OnceLock};

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

async fn readiness(store: &Store, bus: &dyn Bus, started: bool) -> Response {
    if let Err(e) = store.check_ready().await {
        return (StatusCode::SERVICE_UNAVAILABLE, format!("database: {e}\n")).into_response();
    }
    if let Err(e) = bus.check_ready().await {
        return (StatusCode::SERVICE_UNAVAILABLE, format!("bus: {e}\n")).into_response();
    }
    if !started {
        return (StatusCode::SERVICE_UNAVAILABLE, "starting\n").into_response();
    }
    (StatusCode::OK, "ready\n").into_response()
}
