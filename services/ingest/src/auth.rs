//! Bearer tokens.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use sha2::{Digest, Sha256};

use crate::{ApiError, ApiState};

/// The person a request acts as: the name the token was created with.
#[derive(Debug, Clone)]
pub struct Caller(pub String);

/// How a token is stored: its SHA-256, hex.
pub fn hash_token(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A new random token (256 bits, hex), prefixed so it is recognisable in a secret scanner.
pub fn new_token() -> String {
    format!(
        "gh_{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Refuses requests without a valid `Authorization: Bearer` token (401).
pub(crate) async fn require_token(
    State(state): State<ApiState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let token = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "missing bearer token"))?;
    let name = state
        .store
        .token_name(&hash_token(token))
        .await?
        .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "unknown token"))?;
    request.extensions_mut().insert(Caller(name));
    Ok(next.run(request).await)
}
