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
//! Where things are: [`ApiState`] holds what handlers share (`state.rs`); [`router`] lists
//! the routes; the handlers are free functions, one file per resource (`runs`, `gates`,
//! `schedules`, `tokens`, `people`, `artifacts`) with their bodies in [`views`]; the
//! webhooks and what their deliveries come to are in `github` and `chat`, the commands
//! people write there in `written`. Failures are [`ApiError`]s, each with its status.

mod artifacts;
mod auth;
mod chat;
mod deliveries;
mod error;
mod gates;
mod github;
mod openapi;
mod outbox;
mod people;
mod requirements;
mod rights;
mod router;
mod run_loader;
mod runs;
mod schedules;
mod state;
mod tokens;
mod trace;
pub mod views;
mod webhook_limits;
mod written;

pub use auth::{hash_token, new_token};
pub use chat::{ChatSettings, DiscordSettings, DiscordSink, SlackSettings};
pub use deliveries::process_deliveries;
pub use error::ApiError;
pub use github::{
    GithubSettings, ReconcileError, RepoPatternError, Repositories, Trigger, reconcile_github,
};
pub use people::{People, Person};
pub use rights::{ADMINS, BOOTSTRAP_ADMIN, Scope, Scopes, required_scope};
pub use router::{router, router_with};
pub use state::ApiState;
pub use webhook_limits::WebhookLimits;
