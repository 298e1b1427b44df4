//! What Gatehouse shows in Slack and Discord, independent of either: the approval card and
//! the progress message as plain values, and the ids its buttons carry. The notifier fills
//! the values; each adapter turns them into its platform's message format (Block Kit,
//! Discord embeds and components); ingest reads the ids back when someone clicks.
//!
//! A button id names the gate *and its attempt* (`gh:approve:RUN:ATTEMPT:NODE`), so a click
//! on a card of an earlier attempt is recognised and refused rather than deciding a later one.
#![warn(missing_docs)]

mod action;
mod card;

pub use action::{ActionError, CardAction, Verb};
pub use card::{Body, Card, DM_PREFIX, Outcome, Output, Progress, RAISE_EFFECT, login_link_text};
