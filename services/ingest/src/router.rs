//! The routes: the API under `/api/v1` behind the token check, the webhooks behind their
//! admission limits, and `/healthz`.

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, post};

use crate::{
    ApiState, WebhookLimits, artifacts, auth, chat, error, gates, github, openapi, people, runs,
    schedules, tokens, trace, webhook_limits,
};

/// The API's routes, under `/api/v1`, plus `/healthz`, with the default webhook limits.
pub fn router(state: ApiState) -> Router {
    router_with(state, WebhookLimits::default())
}

/// [`router`], with `limits` on the webhooks' unverified bodies.
pub fn router_with(state: ApiState, limits: WebhookLimits) -> Router {
    let api = Router::new()
        .route("/runs", post(runs::start).get(runs::list))
        .route("/runs/{id}", get(runs::show))
        .route("/runs/{id}/logs", get(runs::logs))
        .route(
            "/runs/{id}/artifacts/{node}/{attempt}/{*name}",
            get(artifacts::download),
        )
        .route("/runs/{id}/cancel", post(runs::cancel))
        .route("/runs/{id}/pause", post(runs::pause))
        .route("/runs/{id}/resume", post(runs::resume))
        .route("/runs/{id}/retry", post(runs::retry))
        .route("/gates", get(gates::list))
        .route("/runs/{id}/gates/{node}/decision", post(gates::decide))
        .route("/sops", get(runs::sops))
        .route("/schedules", post(schedules::create).get(schedules::list))
        .route(
            "/schedules/{name}",
            get(schedules::show).delete(schedules::delete),
        )
        .route("/schedules/{name}/pause", post(schedules::pause))
        .route("/schedules/{name}/resume", post(schedules::resume))
        .route("/schedules/{name}/trigger", post(schedules::trigger))
        .route("/schedules/{name}/backfill", post(schedules::backfill))
        .route("/tokens", post(tokens::create).get(tokens::list))
        .route("/tokens/{name}", delete(tokens::revoke))
        .route("/people", post(people::add).get(people::list))
        .route("/people/{id}", delete(people::remove))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_token,
        ))
        // Outside the token check, so a refused request is logged in its trace too.
        .route_layer(axum::middleware::from_fn(trace::api_request))
        // Outermost, so extractor refusals and unknown routes answer JSON too.
        .layer(axum::middleware::map_response(error::as_json))
        .route("/openapi.json", get(openapi::document));
    // Every webhook route reads its body before the signature can be checked: one set of
    // slots bounds how many are read at once, each route's limit how large they may be.
    let admission = webhook_limits::Admission::new(limits);
    let body_limit =
        |configured: Option<usize>| configured.unwrap_or(webhook_limits::UNCONFIGURED_BODY_BYTES);
    let github_limit = body_limit(state.github.as_ref().map(|g| g.max_body_bytes));
    let webhooks = Router::new()
        .route("/webhooks/github", post(github::receive))
        .layer(DefaultBodyLimit::max(github_limit))
        .layer(axum::middleware::from_fn_with_state(
            admission.rule("github", github_limit),
            webhook_limits::admit,
        ))
        .layer(axum::middleware::from_fn_with_state(
            "github",
            trace::webhook,
        ));
    let slack_limit = body_limit(state.chat.slack.as_ref().map(|s| s.max_body_bytes));
    let slack = Router::new()
        .route("/webhooks/slack/events", post(chat::slack_events))
        .route(
            "/webhooks/slack/interactions",
            post(chat::slack_interactions),
        )
        .layer(DefaultBodyLimit::max(slack_limit))
        .layer(axum::middleware::from_fn_with_state(
            admission.rule("slack", slack_limit),
            webhook_limits::admit,
        ))
        .layer(axum::middleware::from_fn_with_state(
            "slack",
            trace::webhook,
        ));
    let discord_limit = body_limit(state.chat.discord.as_ref().map(|d| d.max_body_bytes));
    let discord = Router::new()
        .route(
            "/webhooks/discord/interactions",
            post(chat::discord_interactions),
        )
        .layer(DefaultBodyLimit::max(discord_limit))
        .layer(axum::middleware::from_fn_with_state(
            admission.rule("discord", discord_limit),
            webhook_limits::admit,
        ))
        .layer(axum::middleware::from_fn_with_state(
            "discord",
            trace::webhook,
        ));
    Router::new()
        .nest("/api/v1", api)
        .merge(webhooks)
        .merge(slack)
        .merge(discord)
        .route("/healthz", get(|| async { "ok" }))
        .with_state(state)
}
