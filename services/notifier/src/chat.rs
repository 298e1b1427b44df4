//! Slack and Discord: approval cards for every gate that waits (in the gate's channels and
//! the requirement's thread), the outcome on every card once decided, and a run's progress
//! as one message in its requirement's thread, edited in place; and a card for each
//! question an agent asks a person, showing the answer once given.

mod cards;
mod github;
mod outcome;
mod poster;
mod progress;
mod questions;
mod targets;

pub use targets::{ChatOutputs, DiscordOutput, SlackOutput};
