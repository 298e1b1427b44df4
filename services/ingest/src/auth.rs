//! Bearer tokens: who a request acts for, and whether its token may use the route.

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::rights::{Caller, Scopes, required_scope};
use crate::{ApiError, ApiState};

/// How a token is stored: its SHA-256, hex.
pub fn hash_token(token: &str) -> String {
    sha256_hex(token.as_bytes())
}

/// Hex SHA-256, as tokens and artifacts are recorded.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
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

/// Refuses requests without a valid `Authorization: Bearer` token (401: missing,
/// unknown, revoked, expired, or acting for someone no longer known) and requests whose
/// token lacks the route's scope (403). The [`Caller`] goes to the handler.
pub(crate) async fn require_token(
    State(api): State<ApiState>,
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
        .ok_or_else(|| ApiError::Unauthorized("missing bearer token".into()))?;
    let row = api
        .store
        .token_by_hash(&hash_token(token))
        .await?
        .ok_or_else(|| ApiError::Unauthorized("unknown token".into()))?;
    if row.revoked_at.is_some() {
        return Err(ApiError::Unauthorized(format!(
            "token `{}` was revoked",
            row.name
        )));
    }
    if row.expires_at.is_some_and(|at| at <= Utc::now()) {
        return Err(ApiError::Unauthorized(format!(
            "token `{}` has expired",
            row.name
        )));
    }
    let person = api.people.known(&api.store, &row.person).await?;
    let person = person.ok_or_else(|| {
        ApiError::Unauthorized(format!(
            "token `{}` acts for `{}`, who is no longer one of the people known to Gatehouse",
            row.name, row.person
        ))
    })?;
    let caller = Caller {
        person: person.id.clone(),
        groups: person.groups.clone(),
        scopes: Scopes::parse_stored(&row.scopes),
        token: row.name,
        for_agent: row.for_agent,
    };
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().trim_start_matches("/api/v1").to_owned())
        .unwrap_or_default();
    caller.require(required_scope(request.method(), &route))?;
    request.extensions_mut().insert(caller);
    Ok(next.run(request).await)
}

/// `ttl` from now, or why that moment cannot be (a configured lifetime past year 262,143).
pub(crate) fn from_now(ttl: std::time::Duration) -> Result<DateTime<Utc>, ApiError> {
    chrono::Duration::from_std(ttl)
        .ok()
        .and_then(|ttl| Utc::now().checked_add_signed(ttl))
        .ok_or_else(|| ApiError::Internal(format!("a lifetime of {ttl:?} is too long")))
}
