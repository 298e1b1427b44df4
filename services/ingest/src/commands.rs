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

impl ApiState {
    /// Carries out one command for `requirement`; returns what happened, in a sentence.
    /// A refusal is a sentence too; only a database failure is an error (the delivery
    /// is then processed again).
    pub(crate) async fn command(
        &self,
        tx: &mut Tx,
        requirement: &RequirementRow,
        actor: &Actor,
        command: Command,
    ) -> Result<String, ApiError> {
        let verb = command.verb().name();
        if actor.person.is_none() {
            return Ok(format!(
                "{verb}: refused, `{}` is not one of the configured [[people]]",
                actor.handle
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
            Command::Status { .. } | Command::Runs | Command::Schedules | Command::Help => {
                Ok(format!("{verb}: answered in a reply"))
            }
        };
        match result {
            Ok(done) => Ok(done),
            Err(e) if e.status == StatusCode::SERVICE_UNAVAILABLE => Err(e),
            Err(e) => Ok(format!("{verb}: refused: {}", e.message)),
        }
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
