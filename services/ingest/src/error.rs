//! API errors: a status and one sentence, as JSON.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use gatehouse_engine::Rejection;
use serde::Serialize;
use utoipa::ToSchema;

/// What a request came to when it did not succeed: each outcome answers with its own
/// status and its message as `{"error": ...}`.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the request cannot be read (a body that is not UTF-8 or JSON, a malformed
    /// webhook payload, missing webhook headers).
    #[error("{0}")]
    BadRequest(String),
    /// 401: no credentials, or ones that do not check out (token, webhook signature).
    #[error("{0}")]
    Unauthorized(String),
    /// 403: the caller is known but may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// 404: nothing by that id or name, or a platform that is not configured.
    #[error("{0}")]
    NotFound(String),
    /// 409: the request does not apply to the current state (it may later).
    #[error("{0}")]
    Conflict(String),
    /// 409: an id prefix that names more than one thing; the body lists them.
    #[error("{message}")]
    Ambiguous {
        /// What was asked and how to choose.
        message: String,
        /// What the prefix names, as far as the caller may read.
        candidates: Vec<Candidate>,
    },
    /// 410: it existed, and is used up or expired (a one-time sign-in link).
    #[error("{0}")]
    Gone(String),
    /// 422: the request can never apply as it is.
    #[error("{0}")]
    Unprocessable(String),
    /// 500: Gatehouse's own data or code failed.
    #[error("{0}")]
    Internal(String),
    /// 503: the database (or the blob store) could not be used; the request may be tried
    /// again.
    #[error("storage is not available; try again")]
    Unavailable,
}

/// The JSON body of every error.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: String,
    /// For an id prefix that names several things (409): each of them, to choose from.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<Candidate>,
}

/// One of the things an ambiguous id prefix names.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Candidate {
    /// Its whole id.
    pub id: uuid::Uuid,
    /// What it is: a run's SOP and status, a requirement's title.
    pub what: String,
}

impl ApiError {
    /// The status the outcome answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) | Self::Ambiguous { .. } => StatusCode::CONFLICT,
            Self::Gone(_) => StatusCode::GONE,
            Self::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let error = self.to_string();
        let candidates = match self {
            Self::Ambiguous { candidates, .. } => candidates,
            _ => Vec::new(),
        };
        (status, Json(ErrorBody { error, candidates })).into_response()
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
    let body = ErrorBody {
        error,
        candidates: Vec::new(),
    };
    let mut rewritten = (parts.status, Json(body)).into_response();
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
        Self::Unavailable
    }
}

impl From<gatehouse_events::EventError> for ApiError {
    fn from(err: gatehouse_events::EventError) -> Self {
        Self::Internal(err.to_string())
    }
}

impl From<serde_json::Error> for ApiError {
    fn from(e: serde_json::Error) -> Self {
        Self::Internal(format!("serialising failed: {e}"))
    }
}

/// The engine's refusals: a wrong id is 404, a request that can never apply is 422, one
/// that does not apply now is 409, a forbidden approval is 403.
impl From<Rejection> for ApiError {
    fn from(rejection: Rejection) -> Self {
        let outcome = match &rejection {
            Rejection::UnknownNode(_) => Self::NotFound,
            Rejection::NotAGate(_)
            | Rejection::NotASendBackTarget { .. }
            | Rejection::CommentRequired
            | Rejection::NoFeedbackRule { .. } => Self::Unprocessable,
            Rejection::RequesterMayNotApprove(_)
            | Rejection::AuthorMayNotApprove(_)
            | Rejection::OwnerMayNotApprove(_)
            | Rejection::NotAnApprover { .. } => Self::Forbidden,
            Rejection::NotWaiting { .. }
            | Rejection::StaleAttempt { .. }
            | Rejection::ReworkLimit { .. }
            | Rejection::AlreadyApproved { .. }
            | Rejection::Ended(_)
            | Rejection::PauseState(_)
            | Rejection::NotCreated
            | Rejection::InFlight(_)
            | Rejection::FeedbackLimit { .. }
            | Rejection::FeedbackHeard { .. } => Self::Conflict,
        };
        outcome(rejection.to_string())
    }
}
