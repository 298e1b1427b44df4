//! What Gatehouse shows in Slack and Discord, independent of either: the approval card and
//! the progress message as plain values, and the ids its buttons carry. The notifier fills
//! the values; each adapter turns them into its platform's message format (Block Kit,
//! Discord embeds and components); ingest reads the ids back when someone clicks.
//!
//! A button id names the gate *and its attempt* (`gh:approve:RUN:ATTEMPT:NODE`), so a click
//! on a card of an earlier attempt is recognised and refused rather than deciding a later one.
//! A question card's buttons name the agent's question (`gq:approve:QUESTION`): a question
//! is answered once, whichever attempt asked it.
#![warn(missing_docs)]

mod action;
mod card;
mod question;
mod question_action;

pub use action::{ActionError, CardAction, Verb};
pub use card::{
    Body, Card, DM_PREFIX, FEEDBACK_EFFECT, Outcome, Output, Progress, RAISE_EFFECT,
    login_link_text,
};
pub use question::{Asker, EVIDENCE_SHOWN, QUESTION_SHOWN, QuestionCard, QuestionKind};
pub use question_action::{Control, QuestionAction, QuestionVerb};
