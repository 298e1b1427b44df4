//! Commands written to Gatehouse (GitHub comments now, chat mentions later) carried out for
//! a requirement: the same checks as the API, the person from `[[people]]` — never from
//! the command's text — and the resulting event appended to the caller's transaction.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use gatehouse_commands::{Command, GateRef};
use gatehouse_engine::{Input, apply};
use gatehouse_events::{Actor, Event, NodeStatus, RunCommand, RunCommandKind, RunRequested};
use gatehouse_store::{RequirementRow, Tx};
use uuid::Uuid;

use crate::gates::checked_decision;
use crate::views::{Decide, DecisionKind};
use crate::{ApiError, ApiState};

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

impl ApiState {
    /// Carries out one command for `requirement`. A refusal is an answer too; only a
    /// database failure is an error (the delivery is then processed again).
    pub(crate) async fn command(
        &self,
        tx: &mut Tx,
        requirement: &RequirementRow,
        actor: &Actor,
        command: Command,
    ) -> Result<Done, ApiError> {
        let verb = command.verb().name();
        let text = format!("`{command}`");
        if actor.person.is_none() {
            let why = format!(
                "`{}` is not one of the people configured for Gatehouse; ask an administrator to add you to [[people]]",
                actor.handle
            );
            return Ok(Done::answered(
                format!("{verb}: refused, {why}"),
                format!("{text}: refused: {why}."),
            ));
        }
        let result = match command {
            Command::Run { sop, params, .. } => {
                self.start(tx, requirement, actor, &sop, params).await
            }
            Command::Approve { gate, comment } => {
                let decide = decision(DecisionKind::Approve, None, comment);
                self.decide(tx, requirement, actor, gate, decide).await
            }
            Command::Reject { gate, comment } => {
                let decide = decision(DecisionKind::Reject, None, comment);
                self.decide(tx, requirement, actor, gate, decide).await
            }
            Command::SendBack {
                node,
                gate,
                comment,
            } => {
                let decide = decision(DecisionKind::SendBack, Some(node), comment);
                self.decide(tx, requirement, actor, gate, decide).await
            }
            Command::Cancel { run } => {
                let kind = RunCommandKind::Cancel;
                self.run_command(tx, requirement, actor, run, Input::Cancel, kind)
                    .await
            }
            Command::Retry { node } => {
                let input = Input::RetryFrom { node: node.clone() };
                let kind = RunCommandKind::Retry { node };
                self.run_command(tx, requirement, actor, None, input, kind)
                    .await
            }
            Command::Status { .. } | Command::Runs => {
                let answer = self.status(requirement).await?;
                return Ok(Done::answered(format!("{verb}: answered"), answer));
            }
            Command::Schedules => {
                let answer = self.schedule_list().await?;
                return Ok(Done::answered(format!("{verb}: answered"), answer));
            }
            Command::Help => {
                let answer = format!("```\n{}\n```", gatehouse_commands::help());
                return Ok(Done::answered(format!("{verb}: answered"), answer));
            }
        };
        match result {
            Ok(done) => Ok(Done::quiet(done)),
            Err(e) if e.status == StatusCode::SERVICE_UNAVAILABLE => Err(e),
            Err(e) => Ok(Done::answered(
                format!("{verb}: refused: {}", e.message),
                format!("{text}: refused: {}.", e.message),
            )),
        }
    }

    /// The requirement's runs, newest first, with the gates that wait and who may decide.
    async fn status(&self, requirement: &RequirementRow) -> Result<String, ApiError> {
        let runs = self.store.runs_of_requirement(requirement.id).await?;
        if runs.is_empty() {
            return Ok("No run works on this issue yet.".into());
        }
        let mut out = String::from("Runs on this issue:\n");
        for row in runs {
            let (row, sop, state) = self.decode(row).await?;
            out.push_str(&format!("- `{}` {} — {}", row.id, row.sop, row.status));
            for (node, n) in &state.nodes {
                if n.status != NodeStatus::WaitingApproval {
                    continue;
                }
                let approvers = match sop.node(node).map(|d| &d.kind) {
                    Some(gatehouse_sop::NodeKind::Gate(gate)) => gate.approvers.join(", "),
                    _ => String::new(),
                };
                out.push_str(&format!(
                    "; gate `{node}` (attempt {}) waits for {approvers}",
                    n.attempt
                ));
            }
            out.push('\n');
        }
        Ok(out)
    }

    /// The schedules, for `schedules`.
    async fn schedule_list(&self) -> Result<String, ApiError> {
        let schedules = self.store.schedules(None, 50).await?;
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

    async fn start(
        &self,
        tx: &mut Tx,
        requirement: &RequirementRow,
        actor: &Actor,
        sop: &str,
        params: BTreeMap<String, String>,
    ) -> Result<String, ApiError> {
        let sop = self
            .catalog
            .get(sop)
            .ok_or_else(|| ApiError::not_found(format!("no SOP named `{sop}`")))?;
        sop.check_start(&params)
            .map_err(|m| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, m))?;
        let run_id = Uuid::now_v7();
        let request = RunRequested {
            run_id,
            sop: sop.name.clone(),
            params,
            requirement_id: Some(requirement.id),
            requested_by: actor.clone(),
            schedule: None,
            parent: None,
        };
        self.append(tx, Event::RunRequested(request)).await?;
        Ok(format!("run: started `{}` as run {run_id}", sop.name))
    }

    async fn decide(
        &self,
        tx: &mut Tx,
        requirement: &RequirementRow,
        actor: &Actor,
        gate: Option<GateRef>,
        decide: Decide,
    ) -> Result<String, ApiError> {
        let (run_id, node) = match gate {
            Some(gate) => {
                self.of_requirement(requirement, gate.run).await?;
                (gate.run, gate.node)
            }
            None => self.waiting_gate(requirement).await?,
        };
        let kind = decide.decision;
        let decision = checked_decision(self, run_id, node.clone(), decide, actor.clone()).await?;
        self.append(tx, Event::GateDecision(decision)).await?;
        Ok(format!("{kind:?} {run_id}/{node}: decided").to_lowercase())
    }

    async fn run_command(
        &self,
        tx: &mut Tx,
        requirement: &RequirementRow,
        actor: &Actor,
        run: Option<Uuid>,
        input: Input,
        kind: RunCommandKind,
    ) -> Result<String, ApiError> {
        let run_id = match run {
            Some(run) => {
                self.of_requirement(requirement, run).await?;
                run
            }
            None => self.latest_run(requirement).await?,
        };
        let (_, sop, mut state) = self.load(run_id).await?;
        apply(&sop, &mut state, input)?;
        let command = RunCommand {
            run_id,
            command: kind,
            actor: actor.clone(),
        };
        let note = format!("{:?} run {run_id}: sent", command.command).to_lowercase();
        self.append(tx, Event::RunCommand(command)).await?;
        Ok(note)
    }

    /// Refuses a run that does not work on this requirement: a comment acts on its own
    /// issue's runs only.
    async fn of_requirement(
        &self,
        requirement: &RequirementRow,
        run: Uuid,
    ) -> Result<(), ApiError> {
        let row = self
            .store
            .run(run)
            .await?
            .ok_or_else(|| ApiError::not_found(format!("no run {run}")))?;
        if row.requirement_id != Some(requirement.id) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                format!("run {run} does not work on this issue"),
            ));
        }
        Ok(())
    }

    /// The requirement's newest run.
    async fn latest_run(&self, requirement: &RequirementRow) -> Result<Uuid, ApiError> {
        self.store
            .runs_of_requirement(requirement.id)
            .await?
            .first()
            .map(|r| r.id)
            .ok_or_else(|| ApiError::not_found("no run works on this issue"))
    }

    /// The one gate waiting in the requirement's runs; several must be named.
    async fn waiting_gate(&self, requirement: &RequirementRow) -> Result<(Uuid, String), ApiError> {
        let mut waiting = Vec::new();
        for row in self.store.runs_of_requirement(requirement.id).await? {
            if row.status != "waiting" {
                continue;
            }
            let (row, _, state) = self.decode(row).await?;
            for (node, n) in &state.nodes {
                if n.status == NodeStatus::WaitingApproval {
                    waiting.push((row.id, node.clone()));
                }
            }
        }
        match waiting.len() {
            0 => Err(ApiError::new(
                StatusCode::CONFLICT,
                "no gate is waiting on this issue",
            )),
            1 => Ok(waiting.remove(0)),
            _ => Err(ApiError::new(
                StatusCode::CONFLICT,
                format!(
                    "several gates wait on this issue; name one: {}",
                    waiting
                        .iter()
                        .map(|(run, node)| format!("{run}/{node}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
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
