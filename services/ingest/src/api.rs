//! The HTTP API under `/api/v1`: one module per resource, each with its handlers, its
//! request and response bodies (`views.rs`, gathered for the OpenAPI document and the CLI
//! in [`views`]) and how its stored rows are shown.

pub(crate) mod artifacts;
pub(crate) mod connections;
pub(crate) mod conversations;
pub(crate) mod deliveries;
pub(crate) mod gates;
pub(crate) mod login_links;
pub(crate) mod names;
pub(crate) mod openapi;
pub(crate) mod people;
pub(crate) mod projects;
pub(crate) mod questions;
pub(crate) mod reports;
pub(crate) mod requirements;
pub(crate) mod runs;
pub(crate) mod schedules;
pub(crate) mod sops;
pub(crate) mod tokens;
pub mod views;
