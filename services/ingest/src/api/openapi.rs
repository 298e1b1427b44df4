//! The OpenAPI document at `/api/v1/openapi.json`.

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::{
    artifacts, conversations, deliveries, gates, login_links, people, projects, questions, reports,
    requirements, runs, schedules, sops, tokens,
};

#[derive(OpenApi)]
#[openapi(
    info(title = "Gatehouse API", description = "Runs, gates, agents' questions, projects, requirements, conversations, deliveries (what became of each webhook and chat event), reports, schedules, people, tokens and console sign-in links. Every call needs `Authorization: Bearer <token>`."),
    servers((url = "/api/v1")),
    paths(runs::start, runs::list, runs::show, runs::logs, runs::graph, artifacts::download, runs::cancel, runs::pause, runs::resume, runs::retry, sops::list, sops::invalid, sops::reload, gates::list, gates::decide, questions::list, questions::show, questions::answer, schedules::create, schedules::list, schedules::show, schedules::pause, schedules::resume, schedules::trigger, schedules::backfill, schedules::delete, login_links::create, tokens::create, tokens::list, tokens::revoke, tokens::whoami, people::list, people::add, people::remove, projects::list, requirements::list, requirements::show, conversations::list, conversations::show, conversations::stop, deliveries::list, deliveries::show, reports::usage),
    modifiers(&Bearer, &Refusals),
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

/// Declares on every operation what the edge can answer besides what its handler
/// documents: every path parameter (as a string when the handler names none), 401 and 403
/// (the token check), 400 (a path or query that does not parse), 404 on paths with
/// parameters, and 413, 415 and 422 on those with a body. Clients and schemathesis then
/// meet no undocumented status.
struct Refusals;

impl Modify for Refusals {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
        use utoipa::openapi::{
            ContentBuilder, ObjectBuilder, Ref, Required, ResponseBuilder, Type,
        };
        let refusal = |why: &str| {
            ResponseBuilder::new()
                .description(why)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build()
        };
        for (path, item) in openapi.paths.paths.iter_mut() {
            let placeholders: Vec<String> = path
                .split('/')
                .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
                .map(str::to_owned)
                .collect();
            let operations = [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.delete,
                &mut item.patch,
            ];
            for operation in operations.into_iter().flatten() {
                let parameters = operation.parameters.get_or_insert_with(Vec::new);
                for name in &placeholders {
                    let declared = parameters
                        .iter()
                        .any(|p| &p.name == name && p.parameter_in == ParameterIn::Path);
                    if !declared {
                        parameters.push(
                            ParameterBuilder::new()
                                .name(name)
                                .parameter_in(ParameterIn::Path)
                                .required(Required::True)
                                .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
                                .build(),
                        );
                    }
                }
                let mut add = |status: &str, why: &str| {
                    operation
                        .responses
                        .responses
                        .entry(status.to_owned())
                        .or_insert_with(|| refusal(why).into());
                };
                add("400", "The path or query does not parse");
                add(
                    "401",
                    "No token, or one that is unknown, revoked or expired",
                );
                add("403", "The token lacks the scope, or the person the right");
                if !placeholders.is_empty() {
                    add("404", "Nothing by that id or name");
                }
                if operation.request_body.is_some() {
                    add("413", "The body is too large");
                    add("415", "The body is not JSON");
                    add(
                        "422",
                        "The body does not fit the schema or is refused as it is",
                    );
                }
            }
        }
    }
}

/// The document, generated from the handlers' annotations.
pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Egress connections are documented under both kinds of attempt, every field
    /// required, so schemathesis checks the bodies against the real shape.
    #[test]
    fn connections_are_documented_under_node_and_turn_attempts() {
        let doc = serde_json::to_value(ApiDoc::openapi()).unwrap();
        let schemas = &doc["components"]["schemas"];
        let view = &schemas["ConnectionView"];
        let mut required: Vec<&str> = view["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        required.sort_unstable();
        assert_eq!(
            required,
            [
                "bytes_down",
                "bytes_up",
                "duration_ms",
                "host",
                "port",
                "started_at",
                "verdict"
            ],
            "{view:#}"
        );
        assert_eq!(view["properties"]["port"]["minimum"], 0, "{view:#}");
        for attempt in ["AttemptView", "TurnAttemptView"] {
            let connections = &schemas[attempt]["properties"]["connections"];
            assert_eq!(
                connections["items"]["$ref"], "#/components/schemas/ConnectionView",
                "{attempt}: {connections:#}"
            );
            assert!(
                schemas[attempt]["required"]
                    .as_array()
                    .unwrap()
                    .contains(&"connections".into()),
                "{attempt}"
            );
        }
    }
}
