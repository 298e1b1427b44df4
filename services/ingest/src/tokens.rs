//! `/tokens`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;

use crate::error::ErrorBody;
use crate::views::{CreateToken, TokenCreated};
use crate::{ApiError, ApiState, hash_token, new_token};

/// Creates a token acting as `name`; the token is shown once.
#[utoipa::path(post, path = "/tokens", request_body = CreateToken, responses((status = 201, body = TokenCreated), (status = 422, body = ErrorBody)))]
pub async fn create(
    State(state): State<ApiState>,
    Json(body): Json<CreateToken>,
) -> Result<(StatusCode, Json<TokenCreated>), ApiError> {
    let name = body.name.trim();
    if name.is_empty() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "a token needs a name",
        ));
    }
    let token = new_token();
    state.store.create_token(name, &hash_token(&token)).await?;
    Ok((
        StatusCode::CREATED,
        Json(TokenCreated {
            name: name.to_owned(),
            token,
        }),
    ))
}
