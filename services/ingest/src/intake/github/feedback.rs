//! Feedback on a pull request Gatehouse opened, turned into work for whoever delivered it:
//! the SOP run sent back by its deliver node's rule, or a turn of the conversation that
//! delivered. One path for reviews, mentions, failing checks and conflicts, each piece
//! once (by its key), each refusal answered on the pull request.

use gatehouse_engine::{Input, Rejection, apply};
use gatehouse_events::{
    Actor, Event, Feedback, RequirementState, RunCommand, RunCommandKind, RunStatus, Said,
};
use gatehouse_project::Right;
use gatehouse_store::{PullRequestRow, RequirementRow, Tx};

use crate::{ApiError, ApiState, outbox, projects};

/// A piece of feedback heard on one of Gatehouse's pull requests.
pub(crate) struct Heard<'a> {
    /// The delivery it came in: replies are keyed by it.
    pub delivery: &'a str,
    pub pull: &'a PullRequestRow,
    pub requirement: &'a RequirementRow,
    /// Who asked: a reviewer or commenter, held to the project's `run` right; `None` for
    /// CI, whose failures the delivery's own work caused.
    pub asker: Option<&'a Actor>,
    pub feedback: Feedback,
}

/// Turns feedback into work, or says why not (on the pull request, to whoever asked, and
/// in the returned note the delivery and the pull request's history keep).
pub(crate) async fn start(
    api: &ApiState,
    tx: &mut Tx,
    heard: Heard<'_>,
) -> Result<String, ApiError> {
    if let Some(why) = closed(heard.requirement) {
        return Ok(format!("ignored: {why}"));
    }
    let person = match heard.asker {
        Some(asker) => match may_ask(api, heard.requirement, asker).await? {
            Ok(person) => person,
            Err(why) => {
                reply(tx, &heard, &format!("@{} {why}", asker.handle)).await?;
                return Ok(format!("refused: {why}"));
            }
        },
        None => "github".to_owned(),
    };
    let owner = heard.pull.run_id;
    let outcome = match api.store.conversation(owner).await? {
        Some(_) => to_conversation(tx, &heard, &person).await?,
        None => to_run(api, tx, &heard).await?,
    };
    Ok(outcome)
}

/// Why feedback on a requirement starts nothing: it is closed or delivered.
fn closed(requirement: &RequirementRow) -> Option<String> {
    match requirement.state {
        RequirementState::Open => None,
        state => Some(format!("requirement {} is {state}", requirement.source_key)),
    }
}

/// The person `asker` is, when they may ask for rework on the requirement's project (its
/// `run` right, as starting a run would need); else why not, to answer them with.
async fn may_ask(
    api: &ApiState,
    requirement: &RequirementRow,
    asker: &Actor,
) -> Result<Result<String, String>, ApiError> {
    let Some(person) = asker.person.clone() else {
        return Ok(Err(format!(
            "Gatehouse does not know the GitHub account `{}`, so it cannot rework this pull request for it; ask someone with the project's `run` right.",
            asker.handle
        )));
    };
    let groups = api.people.groups_now(&api.store, &person).await?;
    let project = requirement.project.as_deref();
    match projects::may_act(api, project, Right::Run, Some(&person), &groups) {
        Ok(()) => Ok(Ok(person)),
        Err(ApiError::Forbidden(why)) => Ok(Err(format!(
            "only people with the `run` right in this project can ask Gatehouse to rework its pull request: {why}"
        ))),
        Err(other) => Err(other),
    }
}

/// The run that delivered the pull request goes back by its deliver node's rule (or keeps
/// the feedback until its current work is done): checked against the run as it stands, so
/// a refusal is answered here rather than lost in the scheduler.
async fn to_run(api: &ApiState, tx: &mut Tx, heard: &Heard<'_>) -> Result<String, ApiError> {
    let run_id = heard.pull.run_id;
    let (_, sop, mut state) = match api.runs.load(run_id).await {
        Ok(loaded) => loaded,
        Err(ApiError::NotFound(_)) => {
            return Ok(format!(
                "ignored: run {run_id}, which delivered it, is gone"
            ));
        }
        Err(other) => return Err(other),
    };
    let working = state.status != RunStatus::Succeeded;
    let input = Input::Feedback {
        feedback: heard.feedback.clone(),
    };
    if let Err(refused) = apply(&sop, &mut state, input) {
        if let Rejection::FeedbackHeard { .. } = refused {
            return Ok(heard_before(&heard.feedback));
        }
        let note = format!("run {run_id} takes no {}: {refused}", heard.feedback.kind);
        // Failing checks and conflicts nobody will rework are reported where people look.
        let text = match heard.asker {
            Some(_) => format!("@{} {note}", heard.feedback.from),
            None => format!(
                "Gatehouse heard of {} on this pull request, and {note}.",
                heard.feedback.kind
            ),
        };
        reply(tx, heard, &text).await?;
        return Ok(format!("refused: {note}"));
    }
    if !tx
        .claim_feedback(&heard.feedback.key, heard.delivery)
        .await?
    {
        return Ok(heard_before(&heard.feedback));
    }
    let actor = heard.asker.cloned().unwrap_or_else(|| Actor {
        channel: gatehouse_events::Channel::Github,
        handle: "github".into(),
        person: None,
    });
    let command = RunCommand {
        run_id,
        command: RunCommandKind::Feedback {
            feedback: heard.feedback.clone(),
        },
        actor,
    };
    outbox::append(tx, Event::RunCommand(command)).await?;
    Ok(if working {
        format!("queued for run {run_id}, which is still working")
    } else {
        format!(
            "sent run {run_id} back by its `{}`",
            heard.feedback.kind.rule()
        )
    })
}

/// A turn of the conversation that delivered the pull request; it waits behind a turn
/// that is running, as messages do.
async fn to_conversation(tx: &mut Tx, heard: &Heard<'_>, person: &str) -> Result<String, ApiError> {
    let conversation = heard.pull.run_id;
    if !tx
        .claim_feedback(&heard.feedback.key, heard.delivery)
        .await?
    {
        return Ok(heard_before(&heard.feedback));
    }
    let said = Said::Feedback {
        feedback: heard.feedback.clone(),
    };
    let seq = outbox::say_to_conversation(tx, conversation, person, said).await?;
    Ok(format!(
        "a turn of conversation {conversation} (message {seq})"
    ))
}

fn heard_before(feedback: &Feedback) -> String {
    format!(
        "ignored: {} `{}` was turned into work already, by another delivery",
        feedback.kind, feedback.key
    )
}

/// Answers on the pull request, once per delivery.
async fn reply(tx: &mut Tx, heard: &Heard<'_>, text: &str) -> Result<(), ApiError> {
    let key = format!("feedback:{}", heard.delivery);
    let pull = &heard.feedback.pull;
    tx.want_comment(&key, &pull.repo, pull.number, text).await?;
    Ok(())
}
