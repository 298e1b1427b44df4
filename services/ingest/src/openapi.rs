//! The OpenAPI document at `/api/v1/openapi.json`.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::{artifacts, gates, people, runs, schedules, tokens};

#[derive(OpenApi)]
#[openapi(
    info(title = "Gatehouse API", description = "Runs, gates, schedules, people and tokens. Every call needs `Authorization: Bearer <token>`."),
    servers((url = "/api/v1")),
    paths(runs::start, runs::list, runs::show, runs::logs, artifacts::download, runs::cancel, runs::pause, runs::resume, runs::retry, runs::sops, gates::list, gates::decide, schedules::create, schedules::list, schedules::show, schedules::pause, schedules::resume, schedules::trigger, schedules::backfill, schedules::delete, tokens::create, tokens::list, tokens::revoke, people::list, people::add, people::remove),
    modifiers(&Bearer),
    security(("bearer" = []))
)]
struct ApiDoc;

struct Bearer;

impl Modify for Bearer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The document, generated from the handlers' annotations.
pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
