//! The ingest service's HTTP API under `/api/v1`.
//!
//! Requests are checked against the current state (unknown ids are 404, decisions the
//! engine would refuse are 409 or 422 with the engine's message) and then become events in
//! the outbox: `run.requested`, `run.command`, `gate.decision`. The scheduler applies them,
//! so the API never writes run state itself. Schedules are definitions the API writes;
//! their fires (manual triggers too) are decided by the scheduler. Every request needs a
//! bearer token; tokens are stored as SHA-256 hashes, act for one person and carry scopes;
//! the scope each route needs is in one table ([`required_scope`]).
//!
//! Beside the API: the GitHub, Slack and Discord webhooks (and the Discord gateway's
//! [`DiscordSink`]), whose requests are verified, stored and answered at once, then
//! processed by [`process_deliveries`] into requirements, runs, commands and gate
//! decisions. Every gate decision, whatever its channel, is claimed compare-and-set first.
//!
//! Where things are: [`ApiState`] holds what handlers share (`state.rs`); [`router`],
//! below, lists the routes. `api/` holds the API, one module per resource (`runs`,
//! `gates`, `schedules`, `requirements`, `conversations`, `tokens`, `people`, …), each with
//! its bodies in its `views.rs`, gathered in [`views`]. `intake/` holds the webhooks and
//! what their deliveries come to: `github/`, `chat/`, and `commands/`, the commands people
//! write there. `console/` holds the console's pages. Under them all, at the root, one core:
//! the state, rights (`rights.rs`, and the projects' decisions in `projects.rs`), errors,
//! the token check, the outbox, traces, and what the API and intake both write: a run asked
//! for (`run_request.rs`), a requirement (`new_requirement.rs`, `issue_requirement.rs`) and
//! a gate decision (`gate_decision.rs`). Failures are [`ApiError`]s, each with its status.

mod api;
mod auth;
mod console;
mod error;
mod gate_decision;
mod ids;
mod intake;
mod issue_requirement;
mod new_requirement;
mod outbox;
mod paging;
mod people_directory;
mod projects;
mod question_answer;
mod rights;
mod run_loader;
mod run_request;
mod state;
mod trace;

pub use api::views;
pub use auth::{hash_token, new_token};
pub use console::ConsoleSettings;
pub use error::ApiError;
pub use intake::chat::{Assistant, ChatSettings, DiscordSettings, DiscordSink, SlackSettings};
pub use intake::deliveries::process_deliveries;
pub use intake::github::{
    GithubSettings, ReconcileError, RepoPatternError, Repositories, Trigger, reconcile_github,
    reconcile_once,
};
pub use intake::webhook_limits::WebhookLimits;
pub use people_directory::{People, Person};
pub use rights::{ADMINS, BOOTSTRAP_ADMIN, Scope, Scopes, required_scope};
pub use state::ApiState;

use api::{
    artifacts, conversations, gates, login_links, openapi, people, questions, reports,
    requirements, runs, schedules, sops, tokens,
};
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{delete, get, post};
use intake::{chat, github, webhook_limits};

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
        .route("/runs/{id}/graph.svg", get(runs::graph))
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
        .route("/questions", get(questions::list))
        .route("/questions/{id}", get(questions::show))
        .route("/questions/{id}/answer", post(questions::answer))
        .route("/sops", get(sops::list))
        .route("/sops/invalid", get(sops::invalid))
        .route("/sops/reload", post(sops::reload))
        .route("/schedules", post(schedules::create).get(schedules::list))
        .route(
            "/schedules/{name}",
            get(schedules::show).delete(schedules::delete),
        )
        .route("/schedules/{name}/pause", post(schedules::pause))
        .route("/schedules/{name}/resume", post(schedules::resume))
        .route("/schedules/{name}/trigger", post(schedules::trigger))
        .route("/schedules/{name}/backfill", post(schedules::backfill))
        .route("/login-links", post(login_links::create))
        .route("/tokens", post(tokens::create).get(tokens::list))
        .route("/tokens/{name}", delete(tokens::revoke))
        .route("/whoami", get(tokens::whoami))
        .route("/people", post(people::add).get(people::list))
        .route("/people/{id}", delete(people::remove))
        .route("/reports/usage", get(reports::usage))
        .route("/projects", get(api::projects::list))
        .route("/requirements", get(requirements::list))
        .route("/requirements/{id}", get(requirements::show))
        .route("/conversations", get(conversations::list))
        .route("/conversations/{id}", get(conversations::show))
        .route("/conversations/{id}/stop", post(conversations::stop))
        .route("/deliveries", get(api::deliveries::list))
        .route("/deliveries/{id}", get(api::deliveries::show))
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
        .merge(console::router())
        .route("/healthz", get(|| async { "ok" }))
        .with_state(state)
}
