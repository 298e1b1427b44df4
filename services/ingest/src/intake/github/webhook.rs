//! `POST /webhooks/github`: signature first, then the delivery is stored, processed in
//! the same commit when nothing waits before it (else afterwards, by
//! [`super::process_deliveries`]), and answered.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use gatehouse_github::verify_signature;
use serde_json::{Value, json};

use crate::intake::deliveries::{self, utf8};
use crate::{ApiError, ApiState};

/// Receives a delivery: 401 for a bad signature (nothing stored, a counter counts it), 400
/// for a body that is not JSON or lacks GitHub's headers, 413 above the size limit (the
/// router's body limit), 202 once stored, 200 for a redelivery (which does nothing).
pub(crate) async fn receive(
    State(api): State<ApiState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let Some(github) = api.github.as_ref() else {
        return Err(ApiError::NotFound(
            "GitHub is not configured ([github])".into(),
        ));
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Err(why) = verify_signature(&github.secret_bytes(), header("x-hub-signature-256"), &body)
    {
        metrics::counter!("gatehouse_webhook_rejected_total", "source" => "github", "reason" => "signature")
            .increment(1);
        tracing::warn!(reason = %why, delivery = header("x-github-delivery").unwrap_or("-"), "GitHub delivery refused");
        return Err(ApiError::Unauthorized(why.to_string()));
    }
    let bad = |m: &str| ApiError::BadRequest(m.to_owned());
    let event = header("x-github-event").ok_or_else(|| bad("no X-GitHub-Event header"))?;
    let delivery = header("x-github-delivery").ok_or_else(|| bad("no X-GitHub-Delivery header"))?;
    let text = utf8(&body)?;
    serde_json::from_str::<Value>(text)
        .map_err(|e| ApiError::BadRequest(format!("the body is not JSON: {e}")))?;
    let stored = deliveries::store(&api, "github", delivery, event, text).await?;
    let status = if stored {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(json!({ "delivery": delivery, "duplicate": !stored })),
    ))
}
