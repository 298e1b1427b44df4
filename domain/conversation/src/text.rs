//! What the conversation says in the thread. Short, and each says what to do next.

use crate::{Conversation, Settings, Workspace};

pub(crate) const EMPTY: &str = "That message is empty; say what you need.";
pub(crate) const NOTHING_TO_STEER: &str = "Nothing is running; send it as a message.";
pub(crate) const STEERING: &str = "Stopping the current turn; this runs next.";
pub(crate) const ALREADY_STOPPING: &str = "Already stopping the current turn.";
pub(crate) const NO_REPLY: &str = "Done; the agent wrote no reply.";
pub(crate) const INTERRUPTED: &str =
    "Gatehouse restarted during this turn; running it again, continuing its session.";
pub(crate) const INTERRUPTED_TWICE: &str = "Gatehouse restarted twice during this turn, so it \
    is not run again. Send the message again to retry.";
pub(crate) const INTERRUPTED_TWICE_REASON: &str = "interrupted twice by a restart";

pub(crate) fn queued(ahead: usize, state: &Conversation) -> String {
    match &state.workspace {
        Workspace::Run { run } if ahead == 0 => {
            format!("Queued; it starts when run {run} gives the workspace back.")
        }
        Workspace::Run { run } => format!("Queued, {ahead} ahead; run {run} has the workspace."),
        _ => format!("Queued, {ahead} ahead."),
    }
}

/// A pull request's feedback is being worked on: `Review of acme/api#7 by @alice: working
/// on it`.
pub(crate) fn feedback_working(label: &str) -> String {
    format!("{label}: working on it.")
}

/// A pull request's feedback waits: behind turn `behind`, or for the run holding the
/// workspace.
pub(crate) fn feedback_queued(label: &str, behind: Option<u64>, state: &Conversation) -> String {
    match (behind, &state.workspace) {
        (Some(turn), _) => format!("{label}: queued behind turn {turn}."),
        (None, Workspace::Run { run }) => {
            format!("{label}: queued; it starts when run {run} gives the workspace back.")
        }
        (None, _) => format!("{label}: queued."),
    }
}

pub(crate) fn took_over(run: &str) -> String {
    format!("Took over run {run}'s workspace; it stays paused. The next message here works on it.")
}

pub(crate) fn cannot_take_over(run: &str, refused: &crate::Rejection) -> String {
    format!("Cannot take over run {run}: {refused}.")
}

pub(crate) fn queue_full(settings: &Settings) -> String {
    format!(
        "Not queued: {} messages are already waiting (max_queue). Send it again once one \
         has run.",
        settings.max_queue
    )
}

pub(crate) fn failed(reason: &str) -> String {
    format!("That turn failed: {reason}")
}

pub(crate) fn stopping(queued: usize) -> String {
    match queued {
        0 => "Stopping the current turn.".to_owned(),
        1 => "Stopping the current turn; 1 queued message runs after it.".to_owned(),
        n => format!("Stopping the current turn; {n} queued messages run after it."),
    }
}

pub(crate) fn nothing_to_stop(state: &Conversation) -> String {
    match &state.workspace {
        Workspace::Run { run } => format!("Nothing is running here; run {run} has the workspace."),
        _ => "Nothing is running.".to_owned(),
    }
}

/// The answer to `status`: the running turn, the queue, the CLI session, the workspace.
pub(crate) fn status(state: &Conversation, settings: &Settings) -> String {
    let running = match state.running() {
        Some(turn) => format!(
            "Working on turn {} for {} (attempt {}{}).",
            turn.seq,
            turn.person,
            turn.attempts,
            if turn.stopping { ", stopping" } else { "" }
        ),
        None => "Nothing is running.".to_owned(),
    };
    let queue = match state.queue.len() {
        0 => "Nothing queued.".to_owned(),
        n => format!("{n} queued (at most {}).", settings.max_queue),
    };
    let session = match &state.session_id {
        Some(id) => format!("CLI session {id}."),
        None => "No CLI session yet.".to_owned(),
    };
    let workspace = match &state.workspace {
        Workspace::None => "Workspace: not created yet.".to_owned(),
        Workspace::Kept => "Workspace: kept, free.".to_owned(),
        Workspace::Turn { seq } => format!("Workspace: held by turn {seq}."),
        Workspace::Run { run } => format!("Workspace: held by run {run}; messages wait for it."),
        Workspace::Released => {
            "Workspace: released after being idle; the next message restores it.".to_owned()
        }
    };
    [running, queue, session, workspace].join("\n")
}
