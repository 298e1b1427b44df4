//! API errors: a status and one sentence, as JSON.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use gatehouse_engine::Rejection;
use serde::Serialize;
use utoipa::ToSchema;

/// An error response.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// What went wrong, for people.
    pub message: String,
}

/// The JSON body of every error.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: String,
}

impl ApiError {
    /// An error with a status.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    /// 404.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(ErrorBody {
                error: self.message,
            }),
        )
            .into_response()
    }
}

/// Every error of the API answers `{"error": ...}`: axum's own refusals (a path, query or
/// body that does not parse, a wrong content type, a body over the limit, a method the
/// route does not have) come as plain text, and are rewritten here with their wording.
pub(crate) async fn as_json(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, 64 * 1024).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        Err(_) => String::new(),
    };
    let error = if text.is_empty() {
        parts
            .status
            .canonical_reason()
            .unwrap_or("error")
            .to_owned()
    } else {
        text
    };
    let mut rewritten = (parts.status, Json(ErrorBody { error })).into_response();
    for (name, value) in &parts.headers {
        if name != axum::http::header::CONTENT_TYPE && name != axum::http::header::CONTENT_LENGTH {
            rewritten.headers_mut().insert(name, value.clone());
        }
    }
    rewritten
}

impl From<gatehouse_store::StoreError> for ApiError {
    fn from(err: gatehouse_store::StoreError) -> Self {
        tracing::error!(error = %err, "store error in the API");
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the database is not available; try again",
        )
    }
}

impl From<gatehouse_events::EventError> for ApiError {
    fn from(err: gatehouse_events::EventError) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, err.to_string())
    }
}

/// The engine's refusals: a wrong id is 404, a request that can never apply is 422, one
/// that does not apply now is 409, a forbidden approval is 403.
impl From<serde_json::Error> for ApiError {
    fn from(e: serde_json::Error) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("serialising failed: {e}"),
        )
    }
}

impl From<Rejection> for ApiError {
    fn from(rejection: Rejection) -> Self {
        let status = match &rejection {
            Rejection::UnknownNode(_) => StatusCode::NOT_FOUND,
            Rejection::NotAGate(_)
            | Rejection::NotASendBackTarget { .. }
            | Rejection::CommentRequired => StatusCode::UNPROCESSABLE_ENTITY,
            Rejection::RequesterMayNotApprove(_)
            | Rejection::AuthorMayNotApprove(_)
            | Rejection::OwnerMayNotApprove(_)
            | Rejection::NotAnApprover { .. } => StatusCode::FORBIDDEN,
            Rejection::NotWaiting { .. }
            | Rejection::StaleAttempt { .. }
            | Rejection::ReworkLimit { .. }
            | Rejection::AlreadyApproved { .. }
            | Rejection::Ended(_)
            | Rejection::PauseState(_)
            | Rejection::InFlight(_) => StatusCode::CONFLICT,
        };
        Self::new(status, rejection.to_string())
    }
}
