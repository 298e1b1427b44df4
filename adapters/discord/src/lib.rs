//! Discord for Gatehouse: interactions arrive signed with Ed25519 (over HTTP) or through the
//! gateway, mentions of the bot arrive through the gateway, and approval cards go out as
//! messages with an embed and components through the REST API.
//!
//! Everything a caller handles is this crate's own small types and `serde_json::Value`
//! message bodies, so only the gateway connection depends on serenity's model.
#![warn(missing_docs)]

mod client;
mod components;
mod error;
mod gateway;
mod interactions;
mod questions;
mod signature;
mod text;

pub use client::DiscordClient;
pub use components::{card_message, progress_message, text_message};
pub use error::{DiscordError, PayloadError};
pub use gatehouse_webhook::SignatureError;
pub use gateway::{GatewaySink, Mention, mention_from_message, run_gateway};
pub use interactions::{
    Component, Interaction, ModalSubmit, deferred_update, deny_modal, ephemeral_reply,
    parse_interaction, pong, reject_modal, send_back_modal,
};
pub use questions::question_message;
pub use signature::{MAX_SKEW_SECONDS, PublicKey, sign_interaction, verify_interaction};
