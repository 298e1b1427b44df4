//! The commands that act (`run`, the gate decisions, `cancel`, `retry`), checked as the
//! API checks them; each appends its event to the caller's transaction.

use std::collections::BTreeMap;

use gatehouse_commands::{GateRef, IdRef};
use gatehouse_conversation::{Conversation, Workspace};
use gatehouse_engine::{Input, apply};
use gatehouse_events::{Actor, Event, RunCommand, RunCommandKind, RunRequested};
use gatehouse_store::ConversationRow;
use gatehouse_store::Tx;
use uuid::Uuid;

use super::Scope;
use super::targets::{in_scope, latest_run, waiting_gate};
use crate::gate_decision::checked_decision;
use crate::projects::Reader;
use crate::rights::may_start;
use crate::views::Decide;
use crate::{ApiError, ApiState, outbox, projects, run_request};
use gatehouse_project::{Request, Right};

pub(super) async fn start_run(
    api: &ApiState,
    tx: &mut Tx,
    scope: &Scope<'_>,
    actor: &Actor,
    groups: &[String],
    sop: &str,
    params: BTreeMap<String, String>,
) -> Result<String, ApiError> {
    let sop = api
        .catalog
        .get(sop)
        .ok_or_else(|| ApiError::NotFound(format!("no SOP named `{sop}`")))?;
    sop.check_start(&params).map_err(ApiError::Unprocessable)?;
    // `carry_out` answered anyone without a person already.
    if let Some(person) = &actor.person {
        may_start(&sop, person, groups)?;
    }
    // The code it works on: the conversation's project (a direct message's too), the
    // issue's repository (and project), or the channel's project.
    let issue_repo = projects::issue_repo(scope.requirement);
    let project = scope
        .conversation
        .map(|c| c.project.as_str())
        .or(scope.project);
    let request = Request {
        project,
        repositories: &[],
        issue_repo: issue_repo.as_deref(),
        sop: Some(&sop.name),
    };
    let mut workspace = projects::bind(api, request, actor.person.as_deref(), groups)?;
    if let Some(conversation) = scope.conversation {
        // The conversation's repositories, as it froze them; it must be free to hand over.
        handing_over(conversation)?;
        workspace = Some(serde_json::from_str(&conversation.workspace)?);
    }
    let requirement_id = scope.requirement.map(|r| r.id);
    projects::claim_for_requirement(tx, requirement_id, workspace.as_ref()).await?;
    let run_id = Uuid::now_v7();
    let request = RunRequested {
        run_id,
        sop: sop.name.clone(),
        params,
        requirement_id,
        requested_by: actor.clone(),
        schedule: None,
        parent: None,
        workspace,
    };
    run_request::request(tx, &sop, request).await?;
    if let Some(conversation) = scope.conversation {
        tx.record_conversation_run(run_id, conversation.id).await?;
        return Ok(format!(
            "run: started `{}` as run {run_id} on this conversation's workspace; messages here wait until it ends",
            sop.name
        ));
    }
    Ok(format!("run: started `{}` as run {run_id}", sop.name))
}

/// Refuses (409) to hand a conversation's workspace to a run while a turn or another run
/// holds it.
fn handing_over(conversation: &ConversationRow) -> Result<(), ApiError> {
    let state: Conversation = serde_json::from_str(&conversation.state)?;
    match &state.workspace {
        Workspace::Turn { seq } => Err(ApiError::Conflict(format!(
            "the assistant is working on turn {seq} here; wait for it or `stop` it first"
        ))),
        Workspace::Run { run } => Err(ApiError::Conflict(format!(
            "run {run} holds this conversation's workspace until it ends"
        ))),
        Workspace::None | Workspace::Kept | Workspace::Released => Ok(()),
    }
}

pub(super) async fn decide_gate(
    api: &ApiState,
    tx: &mut Tx,
    scope: &Scope<'_>,
    actor: &Actor,
    groups: &[String],
    gate: Option<GateRef>,
    decide: Decide,
) -> Result<String, ApiError> {
    let (run_id, node) = match gate {
        Some(gate) => {
            let reader = Reader::new(actor.person.as_deref().unwrap_or_default(), groups);
            (in_scope(api, scope, reader, &gate.run).await?.id, gate.node)
        }
        None => waiting_gate(api, scope).await?,
    };
    let kind = decide.decision;
    let decision = checked_decision(
        api,
        tx,
        run_id,
        node.clone(),
        decide,
        actor.clone(),
        groups.to_vec(),
    )
    .await?;
    outbox::append(tx, Event::GateDecision(decision)).await?;
    Ok(format!("{kind:?} {run_id}/{node}: decided").to_lowercase())
}

pub(super) async fn run_command(
    api: &ApiState,
    tx: &mut Tx,
    scope: &Scope<'_>,
    actor: &Actor,
    groups: &[String],
    run: Option<IdRef>,
    kind: RunCommandKind,
) -> Result<String, ApiError> {
    let run_id = match run {
        Some(run) => {
            let reader = Reader::new(actor.person.as_deref().unwrap_or_default(), groups);
            in_scope(api, scope, reader, &run).await?.id
        }
        None => latest_run(api, scope).await?,
    };
    send_run_command(api, tx, run_id, actor, groups, kind).await
}

/// Sends `kind` to a run once its project's `run` list lets `actor` (403 otherwise) and
/// the engine has checked that the run's state allows it (409 otherwise): the one path
/// for every run command written in chat or a comment.
pub(crate) async fn send_run_command(
    api: &ApiState,
    tx: &mut Tx,
    run_id: Uuid,
    actor: &Actor,
    groups: &[String],
    kind: RunCommandKind,
) -> Result<String, ApiError> {
    let (row, sop, mut state) = api.runs.load(run_id).await?;
    let person = actor.person.as_deref();
    projects::may_act(api, row.project.as_deref(), Right::Run, person, groups)?;
    let input = match &kind {
        RunCommandKind::Pause => Input::Pause,
        RunCommandKind::Resume => Input::Resume,
        RunCommandKind::Cancel => Input::Cancel,
        RunCommandKind::Retry { node } => Input::RetryFrom { node: node.clone() },
        RunCommandKind::Feedback { feedback } => Input::Feedback {
            feedback: feedback.clone(),
        },
    };
    apply(&sop, &mut state, input)?;
    let command = RunCommand {
        run_id,
        command: kind,
        actor: actor.clone(),
    };
    let note = format!("{:?} run {run_id}: sent", command.command).to_lowercase();
    outbox::append(tx, Event::RunCommand(command)).await?;
    Ok(note)
}
