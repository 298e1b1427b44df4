//! What arrives from outside the API: the GitHub, Slack and Discord webhooks (verified,
//! stored and answered at once, bounded by [`webhook_limits`]), and what their stored
//! deliveries come to when [`deliveries`] processes them: requirements, runs, commands
//! ([`commands`], the same for comments and chat) and gate decisions.

pub(crate) mod chat;
pub(crate) mod commands;
pub(crate) mod deliveries;
pub(crate) mod github;
pub(crate) mod webhook_limits;
