//! The notifier service.
//!
//! It keeps one status comment per run on the run's GitHub issue, edited in place as the
//! run moves, and posts the replies ingest wrote for commands. Writers only record what a
//! comment should say (in the same transaction as the change it reports); the notifier's
//! poster makes GitHub show it, one call at a time, so edits coalesce and rate limits are
//! waited out rather than hammered. Approval cards in Slack and Discord come with issue 5.

mod notifier;
mod poster;
mod status;

pub use notifier::Notifier;
pub use status::{Links, render_status};
