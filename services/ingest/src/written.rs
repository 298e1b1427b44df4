//! Commands written to Gatehouse (GitHub comments, Slack and Discord mentions) carried out
//! in a [`Scope`]: the same checks as the API, the person from `[[people]]` — never from
//! the command's text — and the resulting event appended to the caller's transaction.

use std::collections::BTreeMap;

use gatehouse_commands::{Command, GateRef};
use gatehouse_engine::{Input, apply};
use gatehouse_events::{Actor, Event, NodeStatus, RunCommand, RunCommandKind, RunRequested};
use gatehouse_store::{RequirementRow, RunRow, Tx};
use uuid::Uuid;

use crate::gates::checked_decision;
use crate::rights::may_start;
use crate::views::{Decide, DecisionKind};
use crate::{ApiError, ApiState, outbox};

/// Where a command was written: what it acts on when it names nothing, and what it may name.
pub(crate) struct Scope<'a> {
    /// The requirement of the issue or chat thread, when there is one.
    pub requirement: Option<&'a RequirementRow>,
    /// Whether named runs and gates may belong to other requirements. A comment acts on
    /// its own issue's runs only; a chat channel is a control room for all of them.
    pub anywhere: bool,
    /// What the place is called in answers ("issue", "thread").
    pub place: &'static str,
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
    let groups = api.people.current(&api.store).await?.groups(person);
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
            run_command(api, tx, scope, actor, run, Input::Cancel, kind).await
        }
        Command::Retry { node } => {
            let input = Input::RetryFrom { node: node.clone() };
            let kind = RunCommandKind::Retry { node };
            run_command(api, tx, scope, actor, None, input, kind).await
        }
        Command::Status { run } => {
            let answer = status(api, scope, run).await?;
            return Ok(Done::answered(format!("{verb}: answered"), answer));
        }
        Command::Runs => {
            let answer = match (scope.anywhere, scope.requirement) {
                (false, Some(_)) => status(api, scope, None).await?,
                _ => active_runs(api).await?,
            };
            return Ok(Done::answered(format!("{verb}: answered"), answer));
        }
        Command::Schedules => {
            let answer = schedule_list(api).await?;
            return Ok(Done::answered(format!("{verb}: answered"), answer));
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

/// Runs with the gates that wait and who may decide: the one named, or the scope's
/// requirement's runs, newest first.
async fn status(api: &ApiState, scope: &Scope<'_>, run: Option<Uuid>) -> Result<String, ApiError> {
    let runs = match (run, scope.requirement) {
        (Some(run), _) => {
            let row = in_scope(api, scope, run).await?;
            vec![row]
        }
        (None, Some(requirement)) => api.store.runs_of_requirement(requirement.id).await?,
        (None, None) => {
            return Ok(format!(
                "No run works on this {}; name one: `status RUN`.",
                scope.place
            ));
        }
    };
    if runs.is_empty() {
        return Ok(format!("No run works on this {} yet.", scope.place));
    }
    let mut out = String::from("Runs:\n");
    for row in runs {
        out.push_str(&run_line(api, row).await?);
    }
    Ok(out)
}

/// The runs not finished yet, anywhere (`runs` in chat).
async fn active_runs(api: &ApiState) -> Result<String, ApiError> {
    let mut out = String::new();
    for status in ["running", "waiting", "paused", "queued"] {
        for row in api.store.runs(Some(status), 20).await? {
            out.push_str(&run_line(api, row).await?);
        }
    }
    if out.is_empty() {
        return Ok("No run is active.".into());
    }
    Ok(format!("Active runs:\n{out}"))
}

/// One run as a list line: status, and each gate that waits with who may decide.
async fn run_line(api: &ApiState, row: RunRow) -> Result<String, ApiError> {
    let (row, sop, state) = api.runs.decode(row).await?;
    let mut out = format!("- `{}` {} — {}", row.id, row.sop, row.status);
    for (node, n) in &state.nodes {
        if n.status != NodeStatus::WaitingApproval {
            continue;
        }
        let approvers = match sop.node(node).map(|d| &d.kind) {
            Some(gatehouse_sop::NodeKind::Gate(gate)) if !gate.approvers.is_empty() => {
                gate.approvers.join(", ")
            }
            _ => "anyone configured".into(),
        };
        out.push_str(&format!(
            "; gate `{}/{node}` (attempt {}) waits for {approvers}",
            row.id, n.attempt
        ));
    }
    out.push('\n');
    Ok(out)
}

/// The schedules, for `schedules`.
async fn schedule_list(api: &ApiState) -> Result<String, ApiError> {
    let schedules = api.store.schedules(None, 50).await?;
    if schedules.is_empty() {
        return Ok("No schedules.".into());
    }
    let mut out = String::from("Schedules:\n");
    for s in schedules {
        let state = if s.paused { " (paused)" } else { "" };
        out.push_str(&format!(
            "- `{}`: `{}` {} → {}{state}\n",
            s.name, s.cron, s.timezone, s.sop
        ));
    }
    Ok(out)
}

async fn start_run(
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
        may_start(sop, person, groups)?;
    }
    let run_id = Uuid::now_v7();
    let request = RunRequested {
        run_id,
        sop: sop.name.clone(),
        params,
        requirement_id: scope.requirement.map(|r| r.id),
        requested_by: actor.clone(),
        schedule: None,
        parent: None,
    };
    outbox::append(tx, Event::RunRequested(request)).await?;
    Ok(format!("run: started `{}` as run {run_id}", sop.name))
}

async fn decide_gate(
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
            in_scope(api, scope, gate.run).await?;
            (gate.run, gate.node)
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

async fn run_command(
    api: &ApiState,
    tx: &mut Tx,
    scope: &Scope<'_>,
    actor: &Actor,
    run: Option<Uuid>,
    input: Input,
    kind: RunCommandKind,
) -> Result<String, ApiError> {
    let run_id = match run {
        Some(run) => in_scope(api, scope, run).await?.id,
        None => latest_run(api, scope).await?,
    };
    let (_, sop, mut state) = api.runs.load(run_id).await?;
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

/// A named run, refused when the scope does not reach it: a comment acts on its own
/// issue's runs only.
async fn in_scope(api: &ApiState, scope: &Scope<'_>, run: Uuid) -> Result<RunRow, ApiError> {
    let row = api
        .store
        .run(run)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no run {run}")))?;
    if !scope.anywhere && row.requirement_id != scope.requirement.map(|r| r.id) {
        return Err(ApiError::Forbidden(format!(
            "run {run} does not work on this {}",
            scope.place
        )));
    }
    Ok(row)
}

/// The scope requirement's runs, newest first; none without a requirement.
async fn scope_runs(api: &ApiState, scope: &Scope<'_>) -> Result<Vec<RunRow>, ApiError> {
    match scope.requirement {
        Some(requirement) => Ok(api.store.runs_of_requirement(requirement.id).await?),
        None => Ok(Vec::new()),
    }
}

/// The scope's newest run.
async fn latest_run(api: &ApiState, scope: &Scope<'_>) -> Result<Uuid, ApiError> {
    scope_runs(api, scope)
        .await?
        .first()
        .map(|r| r.id)
        .ok_or_else(|| {
            ApiError::NotFound(format!("no run works on this {}; name one", scope.place))
        })
}

/// The one gate waiting in the scope's runs; several must be named.
async fn waiting_gate(api: &ApiState, scope: &Scope<'_>) -> Result<(Uuid, String), ApiError> {
    let mut waiting = Vec::new();
    for row in scope_runs(api, scope).await? {
        if row.status != "waiting" {
            continue;
        }
        let (row, _, state) = api.runs.decode(row).await?;
        for (node, n) in &state.nodes {
            if n.status == NodeStatus::WaitingApproval {
                waiting.push((row.id, node.clone()));
            }
        }
    }
    match waiting.len() {
        0 => Err(ApiError::Conflict(format!(
            "no gate is waiting on this {}; name one: RUN/NODE",
            scope.place
        ))),
        1 => Ok(waiting.remove(0)),
        _ => Err(ApiError::Conflict(format!(
            "several gates wait on this {}; name one: {}",
            scope.place,
            waiting
                .iter()
                .map(|(run, node)| format!("{run}/{node}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
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
