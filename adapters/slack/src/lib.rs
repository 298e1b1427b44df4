//! Slack for Gatehouse: checks that requests really come from Slack, reads the Events API
//! and interactivity payloads ingest receives, renders approval cards, agents' question cards and
//! progress messages as Block Kit, and talks to the Web API for the notifier.
//!
//! Callers see only this crate's small types; slack-morphism does the HTTP underneath, so
//! upgrading it never ripples into ingest or the notifier.
#![warn(missing_docs)]

mod blocks;
mod client;
mod error;
mod events;
mod interactions;
mod pace;
mod questions;
mod read;
mod signature;
mod transport;

pub use blocks::{Message, card_message, progress_message, send_back_modal, text_message};
pub use client::SlackClient;
pub use error::{PayloadError, SlackError};
pub use events::{Callback, CallbackEvent, EventsRequest, Mention, parse_events};
pub use gatehouse_webhook::SignatureError;
pub use interactions::{BlockAction, Interaction, ViewSubmission, parse_interaction};
pub use questions::{deny_modal, question_message};
pub use signature::{MAX_SKEW_SECONDS, sign_request, verify_request};
