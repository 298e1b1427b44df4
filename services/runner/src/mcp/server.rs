//! Serving the tools: an HTTP router whose every request must carry a live attempt's token
//! (`Authorization: Bearer`), Gatehouse's MCP server at [`super::GATEHOUSE_PATH`], served
//! on whichever listeners the runner gives it until shutdown.

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Extension, Path, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use gatehouse_agent::permission::MAX_PERMISSION_REQUEST_BYTES;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::tools::{GatehouseTools, MAX_ARTIFACT_BYTES};
use super::{AttemptTools, Desk, GATEHOUSE_PATH};

/// Who the events this module writes come from.
pub(crate) const SOURCE: &str = "runner";

/// The router for the tools of the attempts `desk` serves.
fn router(desk: Desk, shutdown: CancellationToken) -> Router {
    // Stateless: every request is answered on its own, so nothing is kept per session
    // across the many attempts a runner serves; the token says which attempt it is.
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_allowed_hosts(["127.0.0.1", "localhost"])
        // An artifact's text, escaped as JSON, and the rest of the request.
        .with_max_request_body_bytes(MAX_ARTIFACT_BYTES * 6 + 64 * 1024)
        .with_cancellation_token(shutdown);
    let gatehouse = StreamableHttpService::new(
        || Ok(GatehouseTools::new()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new()
        .nest_service(GATEHOUSE_PATH, gatehouse)
        .route(
            "/permission",
            post(permission).layer(DefaultBodyLimit::max(MAX_PERMISSION_REQUEST_BYTES)),
        )
        .route("/mcp/{name}", any(remote))
        .route("/mcp/{name}/{*rest}", any(remote))
        .with_state(desk.clone())
        .layer(axum::middleware::from_fn_with_state(desk, authorize))
}

/// A permission request the ACP shim could not decide by itself (an `ask` rule), as
/// `{"tool", "input"}`; answered `{"decision", "reason", "by"}` once decided.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PermissionAsked {
    tool: String,
    #[serde(default)]
    input: serde_json::Value,
}

/// `POST /permission`, which long-polls while a person decides.
async fn permission(
    Extension(attempt): Extension<Arc<AttemptTools>>,
    body: Result<axum::Json<PermissionAsked>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let asked = match body {
        Ok(axum::Json(asked)) if !asked.tool.is_empty() && asked.tool.len() <= 256 => asked,
        Ok(_) => {
            return refusal(
                StatusCode::UNPROCESSABLE_ENTITY,
                "`tool` must name the tool, in at most 256 bytes",
            );
        }
        Err(rejection) => return refusal(rejection.status(), &rejection.body_text()),
    };
    let call = gatehouse_agent::ToolUse {
        tool: asked.tool,
        input: asked.input,
    };
    let decided = super::permission::decide(&attempt, &call).await;
    axum::Json(serde_json::json!({
        "decision": if decided.allow { "allow" } else { "deny" },
        "reason": decided.reason,
        "by": decided.by,
    }))
    .into_response()
}

fn refusal(status: StatusCode, why: &str) -> Response {
    (status, axum::Json(serde_json::json!({ "error": why }))).into_response()
}

/// A remote `[mcp.NAME]` server's request, forwarded with its secret if the attempt's role
/// or project attaches it.
async fn remote(
    State(desk): State<Desk>,
    Path(path): Path<Vec<(String, String)>>,
    Extension(attempt): Extension<Arc<AttemptTools>>,
    request: Request,
) -> Response {
    let name = path
        .iter()
        .find(|(key, _)| key == "name")
        .map(|(_, value)| value.as_str())
        .unwrap_or_default();
    let rest = path
        .iter()
        .find(|(key, _)| key == "rest")
        .map(|(_, value)| format!("/{value}"))
        .unwrap_or_default();
    match desk.remote(name) {
        Some(server) if attempt.remotes.iter().any(|r| r == name) => {
            server.forward(request, &rest).await.into_response()
        }
        _ => {
            let attached = if attempt.remotes.is_empty() {
                "none".to_owned()
            } else {
                attempt.remotes.join(", ")
            };
            (
                StatusCode::NOT_FOUND,
                axum::Json(serde_json::json!({
                    "error": format!(
                        "no MCP server `{}` is attached to this agent's role or project (remote servers attached: {attached})",
                        name.escape_default()
                    )
                })),
            )
                .into_response()
        }
    }
}

/// Lets a request through with its attempt, or answers 401.
async fn authorize(State(desk): State<Desk>, mut request: Request, next: Next) -> Response {
    let attempt = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .and_then(|token| desk.attempt(token));
    match attempt {
        Some(attempt) => {
            request.extensions_mut().insert(attempt);
            next.run(request).await
        }
        None => (
            StatusCode::UNAUTHORIZED,
            axum::Json(serde_json::json!({
                "error": "no attempt has this token: Gatehouse's tools serve an attempt only while it runs"
            })),
        )
            .into_response(),
    }
}

/// Serves the tools of `desk` on `listener` until `shutdown`.
pub(crate) fn serve<L>(desk: &Desk, listener: L, shutdown: &CancellationToken)
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    let app = router(desk.clone(), shutdown.clone());
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await;
        if let Err(error) = served {
            tracing::warn!(%error, "Gatehouse's MCP server for agents stopped");
        }
    });
}
