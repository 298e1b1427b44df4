//! The notifier service.
//!
//! It keeps one status comment per run on the run's GitHub issue, edited in place as the
//! run moves, and posts the replies ingest wrote for commands. Writers only record what a
//! comment should say (in the same transaction as the change it reports); the notifier's
//! poster makes GitHub show it, one call at a time, so edits coalesce and rate limits are
//! waited out rather than hammered.
//!
//! In Slack and Discord it posts an approval card for every gate that waits — to the gate's
//! channels (default: `approvals_channel`) and into the requirement's thread — shows the
//! outcome on each card once the gate is decided, and keeps a run's progress as one message
//! in its requirement's thread. When an agent asks a person something (`question.asked`),
//! a question card goes to the run's or conversation's thread and where gate cards go, and
//! shows the answer once given; the status comment lists the questions the run waits on. Both name the hosts the egress proxy refused the run's
//! sandboxes and the budgets it used 80 % of or reached. Chat messages follow the same pattern as comments: wanted
//! in the consumer's transaction (`chat_messages`), posted by their own poster.

mod asked;
mod chat;
mod notes;
mod notifier;
mod poster;
mod questions;
mod status;

pub use asked::{ANSWERED_SHOWN, AskedQuestion, questions_markdown};
pub use chat::{ChatOutputs, DiscordOutput, SlackOutput};
pub use notes::{BUDGETS_SHOWN, BlockedHost, BudgetSpend, HOSTS_SHOWN, RunNotes, Style};
pub use notifier::Notifier;
pub use status::{Links, render_status};
