//! Commands written to Gatehouse (GitHub comments, Slack and Discord mentions) carried out
//! in a [`Scope`]: the same checks as the API, the person from `[[people]]` — never from
//! the command's text — and the resulting event appended to the caller's transaction.

mod actions;
mod queries;
mod targets;

use gatehouse_commands::Command;
use gatehouse_events::{Actor, RunCommandKind};
use gatehouse_store::{RequirementRow, Tx};

pub(crate) use actions::send_run_command;
use actions::{decide_gate, run_command, start_run};
use queries::{active_runs, schedule_list, sop_list, status};

use crate::projects::Reader;
use crate::views::{Decide, DecisionKind};
use crate::{ApiError, ApiState};

/// Where a command was written: what it acts on when it names nothing, and what it may name.
pub(crate) struct Scope<'a> {
    /// The requirement of the issue or chat thread, when there is one.
    pub requirement: Option<&'a RequirementRow>,
    /// Whether named runs and gates may belong to other requirements. A comment acts on
    /// its own issue's runs only; a chat channel is a control room for all of them.
    pub anywhere: bool,
    /// What the place is called in answers ("issue", "thread").
    pub place: &'static str,
    /// The project the place works on (a project's chat channel), when it is one.
    pub project: Option<&'a str>,
    /// The conversation of the chat thread, when it has one: a run started there works on
    /// its workspace.
    pub conversation: Option<&'a gatehouse_store::ConversationRow>,
}

/// What a command came to: a sentence for the audit trail, and the answer its author
/// should see, when there is one (a refusal, a question answered). Commands that worked
/// need no answer: the run's status comment shows their effect.
pub(crate) struct Done {
    /// For the delivery's record.
    pub note: String,
    /// For the author.
    pub reply: Option<String>,
}

impl Done {
    fn quiet(note: String) -> Self {
        Self { note, reply: None }
    }

    fn answered(note: String, reply: String) -> Self {
        Self {
            note,
            reply: Some(reply),
        }
    }
}

/// Carries out one command for `requirement`. A refusal is an answer too; only a
/// database failure is an error (the delivery is then processed again).
pub(crate) async fn carry_out(
    api: &ApiState,
    tx: &mut Tx,
    scope: &Scope<'_>,
    actor: &Actor,
    command: Command,
) -> Result<Done, ApiError> {
    let verb = command.verb().name();
    let text = format!("`{command}`");
    let Some(person) = &actor.person else {
        let why = format!(
            "`{}` is not one of the people configured for Gatehouse; ask an administrator to add you to [[people]]",
            actor.handle
        );
        return Ok(Done::answered(
            format!("{verb}: refused, {why}"),
            format!("{text}: refused: {why}."),
        ));
    };
    let groups = api.people.groups_now(&api.store, person).await?;
    let reader = Reader::new(person, &groups);
    let result = match command {
        Command::Run { sop, params, .. } => {
            start_run(api, tx, scope, actor, &groups, &sop, params).await
        }
        Command::Approve { gate, comment } => {
            let decide = decision(DecisionKind::Approve, None, comment);
            decide_gate(api, tx, scope, actor, &groups, gate, decide).await
        }
        Command::Reject { gate, comment } => {
            let decide = decision(DecisionKind::Reject, None, comment);
            decide_gate(api, tx, scope, actor, &groups, gate, decide).await
        }
        Command::SendBack {
            node,
            gate,
            comment,
        } => {
            let decide = decision(DecisionKind::SendBack, Some(node), comment);
            decide_gate(api, tx, scope, actor, &groups, gate, decide).await
        }
        Command::Cancel { run } => {
            let kind = RunCommandKind::Cancel;
            run_command(api, tx, scope, actor, &groups, run, kind).await
        }
        Command::Retry { node } => {
            let kind = RunCommandKind::Retry { node };
            run_command(api, tx, scope, actor, &groups, None, kind).await
        }
        Command::Status { run } => {
            let answer = status(api, scope, reader, run).await?;
            return Ok(Done::answered(format!("{verb}: answered"), answer));
        }
        Command::Runs => {
            let answer = match (scope.anywhere, scope.requirement) {
                (false, Some(_)) => status(api, scope, reader, None).await?,
                _ => active_runs(api, reader).await?,
            };
            return Ok(Done::answered(format!("{verb}: answered"), answer));
        }
        Command::Schedules => {
            let answer = schedule_list(api, reader).await?;
            return Ok(Done::answered(format!("{verb}: answered"), answer));
        }
        Command::Sops => {
            let answer = sop_list(api, scope, person, &groups);
            return Ok(Done::answered(format!("{verb}: answered"), answer));
        }
        // The chat path takes these in a conversation's thread before they get here.
        Command::Steer { .. }
        | Command::Stop
        | Command::Ask { .. }
        | Command::Deliver { .. }
        | Command::TakeOver { .. } => {
            let answer = format!(
                "{text} works in a conversation's thread: mention me with a request in a project's chat channel to start one."
            );
            return Ok(Done::answered(
                format!("{verb}: no conversation here"),
                answer,
            ));
        }
        // The chat path sends the link before it gets here; a comment has no one to send
        // it to privately.
        Command::Login => {
            let answer = format!(
                "{text} works in Slack and Discord, where I can send you the link by direct message; in a terminal, `gatehouse login` prints one."
            );
            return Ok(Done::answered(format!("{verb}: not here"), answer));
        }
        Command::Help => {
            let answer = format!("```\n{}\n```", gatehouse_commands::help());
            return Ok(Done::answered(format!("{verb}: answered"), answer));
        }
    };
    match result {
        Ok(done) => Ok(Done::quiet(done)),
        Err(ApiError::Unavailable) => Err(ApiError::Unavailable),
        Err(e) => Ok(Done::answered(
            format!("{verb}: refused: {e}"),
            format!("{text}: refused: {e}."),
        )),
    }
}

fn decision(decision: DecisionKind, to: Option<String>, comment: Option<String>) -> Decide {
    Decide {
        decision,
        to,
        comment,
        attempt: None,
    }
}
