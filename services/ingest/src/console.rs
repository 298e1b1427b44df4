//! The console: web pages for every run, requirement, SOP, schedule and waiting decision,
//! served by ingest beside the API.
//!
//! Server-rendered HTML that works without JavaScript; a small script only follows a
//! running run's logs and state (server-sent events). People sign in with a one-time
//! link (`gatehouse login`, `@gatehouse login`) or with GitHub; the session then acts as
//! the person would through the API: reads go through the API's handlers, and every
//! action — a gate decision, pausing a run, triggering a schedule — is the API's own
//! handler called with the person's rights, after the form's CSRF token is checked.
//!
//! Where things are: `session` (cookie, CSRF, the `Viewer`), `signin` (links, signing
//! out), `github` (signing in with GitHub), `page` (the frame and shared pieces), one file
//! per page (`inbox`, `run`, `requirements`, `conversations`, `sops`, `schedules`,
//! `reports`, `deliveries`), `actions` (what forms post), `logs` (paged and live output), `artifacts`
//! (shown safely).

mod actions;
mod artifacts;
mod budgets;
mod conversations;
mod deliveries;
mod evidence;
mod github;
mod inbox;
mod logs;
mod markdown;
mod network;
mod page;
mod page_error;
mod reports;
mod requirements;
mod run;
mod runs;
mod schedules;
mod session;
mod signin;
mod sops;
mod statics;

use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};

use crate::ApiState;

/// How the console signs people in.
#[derive(Clone)]
pub struct ConsoleSettings {
    /// Where people reach Gatehouse (`server.public_url`), without a trailing slash;
    /// links are built on it, and an `https` address makes the cookie `Secure`.
    pub public_url: Option<String>,
    /// How long a session lasts after signing in.
    pub session_ttl: Duration,
    /// How long a login link may wait before it is used.
    pub login_link_ttl: Duration,
    /// Signing in with GitHub, when an OAuth App is configured (and `public_url`, which
    /// GitHub sends people back to).
    pub github: Option<gatehouse_github::OAuthApp>,
}

impl Default for ConsoleSettings {
    fn default() -> Self {
        Self {
            public_url: None,
            session_ttl: Duration::from_secs(7 * 24 * 3600),
            login_link_ttl: Duration::from_secs(15 * 60),
            github: None,
        }
    }
}

impl ConsoleSettings {
    /// Whether people reach the console over HTTPS, so its cookie must be `Secure`.
    pub(crate) fn secure(&self) -> bool {
        self.public_url
            .as_deref()
            .is_some_and(|u| u.starts_with("https://"))
    }
}

/// The console's pages, at the root of ingest's listener.
pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/", get(inbox::page))
        .route("/signin", get(signin::page))
        .route("/login/{secret}", get(signin::confirm))
        .route("/login", post(signin::sign_in))
        .route("/signout", post(signin::sign_out))
        .route("/auth/github", get(github::start))
        .route(github::CALLBACK, get(github::callback))
        .route("/runs", get(runs::list))
        .route("/runs/{id}", get(run::page))
        .route("/runs/{id}/graph.svg", get(run::graph))
        .route("/runs/{id}/logs", get(logs::page))
        .route("/runs/{id}/events", get(logs::events))
        .route(
            "/runs/{id}/artifacts/{node}/{attempt}/{*name}",
            get(artifacts::show),
        )
        .route(
            "/runs/{id}/download/{node}/{attempt}/{*name}",
            get(artifacts::download),
        )
        .route("/runs/{id}/gates/{node}/decide", post(actions::decide))
        .route("/runs/{id}/command", post(actions::command))
        .route("/questions/{id}/answer", post(actions::answer))
        .route("/conversations/{id}", get(conversations::page))
        .route("/requirements", get(requirements::list))
        .route("/requirements/{id}", get(requirements::page))
        .route("/sops", get(sops::list))
        .route("/sops/{name}", get(sops::page))
        .route("/sops/{name}/graph.svg", get(sops::graph))
        .route("/sops/{name}/start", post(sops::start))
        .route("/schedules", get(schedules::list))
        .route("/schedules/{name}", get(schedules::page))
        .route("/schedules/{name}/command", post(schedules::command))
        .route("/deliveries", get(deliveries::list))
        .route("/deliveries/{id}", get(deliveries::page))
        .route("/reports", get(reports::page))
        .route("/reports.csv", get(reports::csv))
        .route("/static/{file}", get(statics::file))
        .layer(axum::middleware::map_response(page::headers))
}
