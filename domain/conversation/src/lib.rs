//! A chat thread's conversation with the assistant role: `(state, input) → (state, effects)`.
//!
//! Each message a person sends the bot in a thread is a turn of the project's assistant
//! role, run in the conversation's workspace. Turns, queues, steering, restarts and the
//! workspace's lease interleave in ways that are easy to get wrong with I/O in the way, so
//! the rules live here, without any: ingest, the runner and the notifier feed in what
//! happened, persist the state with the effects it returns, and carry those out. Every
//! rule is tested directly, including with random input sequences.
//!
//! Rules:
//! - one turn runs at a time; messages arriving meanwhile queue in arrival order, each
//!   acknowledged with how many are ahead, up to `max_queue` (then refused, saying so);
//! - `steer <text>` stops the running turn and puts its text first in the queue; `stop`
//!   stops the running turn; with nothing running both are answered and nothing changes;
//!   `status` is answered from the state alone;
//! - a turn resumes the CLI session the latest turn reported; `ask ROLE <text>` is a turn
//!   of that role, and `deliver [draft]` one that opens the pull requests, each queued like
//!   a message, neither resuming nor changing that session;
//! - feedback on a pull request the conversation delivered (a review, failing checks, a
//!   conflict) is a turn of the assistant queued like a message, whatever the queue's
//!   length; the thread is told it is being worked on or what it waits behind, and the
//!   turn carries the feedback so the runner pushes the work and answers on the pull
//!   request;
//! - a turn found running after a restart is told to the thread and run once more; a
//!   second interruption fails it;
//! - the workspace is held by the running turn or by an SOP run: while a run holds it,
//!   messages queue and start when it is given back; once nobody has held it for
//!   `idle_timeout` it is checkpointed and released, and the next turn restores it;
//! - every effect has a [`Effect::key`] no other effect of the conversation shares, and
//!   repeated or late inputs (a redelivered message, a second "finished") change nothing,
//!   so no reply is posted twice.

mod apply;
mod effect;
mod feedback;
mod input;
mod state;
mod text;

pub use apply::apply;
pub use effect::Effect;
pub use input::{Input, Outcome, Rejection, Settings};
pub use state::{Conversation, Turn, TurnStatus, Work, Workspace};
