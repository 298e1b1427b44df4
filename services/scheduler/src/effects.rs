//! Carrying out the engine's effects: the events and timers they mean.

use std::collections::{BTreeMap, BTreeSet};

use chrono::Utc;
use gatehouse_engine::{Effect, RunState, gate_in_force};
use gatehouse_events::{
    Actor, AgentSpec, Artifact, Channel, DeliverSpec, Envelope, Event, GateClosed, GateOpened,
    NodeDispatch, NodeFinished, NodeOutcome, NodeSnapshot, NodeSpec, ParentNode, RunRequested,
    RunUpdated, SandboxWork, ScriptSpec, TraceParent,
};
use gatehouse_sop::{Gate, Node, NodeKind, Sop};
use gatehouse_store::{BudgetRaise, RunRow, TimerKind, TimerRow, Tx};
use uuid::Uuid;

use crate::SchedulerError;

/// Where the scheduler's events say they come from.
const SOURCE: &str = "scheduler";

/// Everything needed to carry out one step's effects.
pub(crate) struct Context<'a> {
    pub run: &'a RunRow,
    pub sop: &'a Sop,
    pub state: &'a RunState,
    pub params: &'a BTreeMap<String, String>,
    /// For a child run that succeeded: the artifacts imported into its parent's node, or
    /// why the import failed.
    pub imports: Option<Result<Vec<Artifact>, String>>,
    pub trace: Option<&'a TraceParent>,
}

impl Context<'_> {
    /// Appends the events and timers that follow from `effects`, then the run's snapshot,
    /// and, when a child run has ended, its result for the parent's node.
    pub(crate) async fn carry_out(
        &self,
        tx: &mut Tx,
        effects: &[Effect],
    ) -> Result<(), SchedulerError> {
        for effect in effects {
            match effect {
                Effect::Dispatch { node, attempt } => {
                    self.emit(tx, Event::NodeDispatch(self.dispatch(node, *attempt)?))
                        .await?
                }
                Effect::StartChild { node, attempt } => {
                    self.start_child(tx, node, *attempt).await?
                }
                Effect::OpenGate { node, attempt } => self.open_gate(tx, node, *attempt).await?,
                Effect::CloseGate {
                    node,
                    attempt,
                    status,
                } => {
                    let decided_by = self.approvals(node).iter().map(|p| person(p)).collect();
                    let event = GateClosed {
                        run_id: self.run.id,
                        node: node.clone(),
                        attempt: *attempt,
                        status: *status,
                        decided_by,
                        comment: None,
                    };
                    self.emit(tx, Event::GateClosed(event)).await?;
                }
                Effect::ScheduleRetry {
                    node,
                    attempt,
                    after,
                } => {
                    let due = Utc::now()
                        .timestamp_millis()
                        .saturating_add(i64::try_from(after.as_millis()).unwrap_or(i64::MAX));
                    tx.set_timer(&self.timer(node, *attempt, TimerKind::Retry, due))
                        .await?;
                }
                Effect::RaiseBudget {
                    node,
                    attempt,
                    budget,
                } => {
                    let raised_by = self.approvals(node);
                    let raise = BudgetRaise {
                        run_id: self.run.id,
                        node,
                        attempt: *attempt,
                        budget,
                        raised_by: &raised_by,
                        raised_ms: Utc::now().timestamp_millis(),
                    };
                    tx.raise_budget(&raise).await?;
                }
                // Runners watch run snapshots and stop attempts that are no longer current.
                Effect::CancelAttempt { .. } => {}
            }
        }
        self.emit(tx, Event::RunUpdated(self.snapshot())).await?;
        if self.state.is_terminal()
            && let (Some(parent), Some(node), Some(attempt)) = (
                self.run.parent_run,
                &self.run.parent_node,
                self.run.parent_attempt,
            )
        {
            let failed = |reason: String| (NodeOutcome::Failed { reason }, Vec::new());
            let (outcome, artifacts) = match (&self.state.failure, &self.imports) {
                (Some(reason), _) => failed(format!("child run {}: {reason}", self.run.id)),
                (None, Some(Ok(imported))) => (NodeOutcome::Succeeded, imported.clone()),
                (None, Some(Err(reason))) => failed(reason.clone()),
                (None, None) => failed(format!("child run {} was cancelled", self.run.id)),
            };
            let event = NodeFinished {
                run_id: parent,
                node: node.clone(),
                attempt: u32::try_from(attempt).unwrap_or(0),
                outcome,
                exit_code: None,
                duration_ms: u64::try_from((Utc::now() - self.run.created_at).num_milliseconds())
                    .unwrap_or(0),
                artifacts,
                interrupted: false,
                over_budget: None,
            };
            self.emit(tx, Event::NodeFinished(event)).await?;
        }
        Ok(())
    }

    async fn emit(&self, tx: &mut Tx, event: Event) -> Result<(), SchedulerError> {
        emit(tx, event, self.trace).await
    }

    fn timer(&self, node: &str, attempt: u32, kind: TimerKind, due_ms: i64) -> TimerRow {
        TimerRow {
            run_id: self.run.id,
            node: node.to_owned(),
            attempt: i32::try_from(attempt).unwrap_or(i32::MAX),
            kind,
            due_ms,
        }
    }

    /// A job with everything a runner needs: the script, agent or delivery, what to keep,
    /// where its inputs come from, the reviewer's comment, and the environment.
    fn dispatch(&self, node: &str, attempt: u32) -> Result<NodeDispatch, SchedulerError> {
        let def = self
            .sop
            .node(node)
            .unwrap_or_else(|| unreachable!("effects name nodes of the SOP"));
        let work = || SandboxWork {
            artifacts: def.artifacts.clone(),
            inputs: self.inputs(def),
            rework_comment: self.state.nodes[node].rework_comment.clone(),
            params: self.params.clone(),
        };
        let spec = match &def.kind {
            NodeKind::Script { run } => NodeSpec::Script(ScriptSpec {
                run: run.clone(),
                work: work(),
            }),
            NodeKind::Agent { role, prompt } => NodeSpec::Agent(AgentSpec {
                role: role.clone(),
                prompt: prompt.clone(),
                work: work(),
            }),
            NodeKind::Deliver { mode, branch, .. } => NodeSpec::Deliver(DeliverSpec {
                mode: *mode,
                branch: branch.clone(),
                // Sent back by feedback on its pull request: the push answers it there.
                answer: self.state.nodes[node].answering.clone(),
            }),
            NodeKind::Gate(_) | NodeKind::Sop { .. } => {
                return Err(SchedulerError::Corrupt {
                    run: self.run.id,
                    message: format!(
                        "`{node}` is a {} node, which runners do not run",
                        def.kind.name()
                    ),
                });
            }
        };
        Ok(NodeDispatch {
            run_id: self.run.id,
            node: node.to_owned(),
            attempt,
            sandbox: def
                .sandbox
                .clone()
                .unwrap_or_else(|| self.sop.sandbox.clone()),
            spec,
            env: def.env.clone(),
            secrets: def.secrets.clone(),
            timeout_secs: def.timeout.map(|t| t.as_secs().max(1)),
        })
    }

    /// Every node upstream of `def` but gates, at its latest attempt: their artifacts are
    /// its inputs.
    fn inputs(&self, def: &Node) -> BTreeMap<String, u32> {
        let mut inputs = BTreeMap::new();
        let mut seen = BTreeSet::new();
        let mut stack = def.needs.clone();
        while let Some(up) = stack.pop() {
            if !seen.insert(up.clone()) {
                continue;
            }
            let Some(up_def) = self.sop.node(&up) else {
                continue;
            };
            if !up_def.is_gate() {
                inputs.insert(up.clone(), self.state.nodes[up.as_str()].attempt);
            }
            stack.extend(up_def.needs.iter().cloned());
        }
        inputs
    }

    async fn start_child(
        &self,
        tx: &mut Tx,
        node: &str,
        attempt: u32,
    ) -> Result<(), SchedulerError> {
        let Some(NodeKind::Sop { sop, params, .. }) = self.sop.node(node).map(|n| &n.kind) else {
            return Ok(());
        };
        let request = RunRequested {
            run_id: Uuid::now_v7(),
            sop: sop.clone(),
            params: params.clone(),
            requirement_id: None,
            requested_by: self
                .run
                .requested_by
                .as_deref()
                .map(person)
                .unwrap_or_else(|| person("scheduler")),
            schedule: None,
            parent: Some(ParentNode {
                run_id: self.run.id,
                node: node.to_owned(),
                attempt,
            }),
            // A child run works on its parent's code, checked out afresh in its own
            // workspace.
            workspace: self
                .run
                .workspace
                .as_deref()
                .and_then(|w| serde_json::from_str(w).ok()),
        };
        self.emit(tx, Event::RunRequested(request)).await
    }

    /// Who approved the current opening of `node`'s gate.
    fn approvals(&self, node: &str) -> Vec<String> {
        self.state.nodes[node]
            .gate
            .as_ref()
            .map(|g| g.approvals.clone())
            .unwrap_or_default()
    }

    /// The gate `node` opens, as this opening is decided ([`gate_in_force`]): what the
    /// engine holds its decisions to and cards show.
    fn opening(&self, node: &str) -> Option<Gate> {
        let gate = gate_in_force(self.sop.node(node)?, self.state.nodes.get(node)?)?;
        Some(gate.into_owned())
    }

    async fn open_gate(&self, tx: &mut Tx, node: &str, attempt: u32) -> Result<(), SchedulerError> {
        let Some(gate) = self.opening(node) else {
            return Ok(());
        };
        // An agent node's gate asks to lift the refusal its attempt met.
        let raise = self.state.nodes[node].budget_ask().map(str::to_owned);
        let expires_at = gate
            .expires_in
            .and_then(|d| chrono::Duration::from_std(d).ok())
            .map(|d| Utc::now() + d);
        if let Some(at) = expires_at {
            tx.set_timer(&self.timer(node, attempt, TimerKind::Expire, at.timestamp_millis()))
                .await?;
        }
        let event = GateOpened {
            run_id: self.run.id,
            node: node.to_owned(),
            attempt,
            approvers: gate.approvers,
            min_approvals: gate.min_approvals,
            send_back_targets: gate.send_back,
            artifacts: Vec::new(),
            expires_at,
            raise,
        };
        self.emit(tx, Event::GateOpened(event)).await
    }

    fn snapshot(&self) -> RunUpdated {
        RunUpdated {
            run_id: self.run.id,
            sop: self.run.sop.clone(),
            sop_version: self.run.sop_version.clone(),
            requirement_id: self.run.requirement_id,
            status: self.state.status,
            nodes: self
                .state
                .nodes
                .iter()
                .map(|(id, n)| NodeSnapshot {
                    node: id.clone(),
                    status: n.status,
                    attempt: n.attempt,
                    rework_count: n.rework_count,
                })
                .collect(),
            revision: self.state.revision,
        }
    }
}

#[cfg(test)]
mod tests;

/// A configured person as an actor.
fn person(id: &str) -> Actor {
    Actor {
        channel: Channel::System,
        handle: id.to_owned(),
        person: Some(id.to_owned()),
    }
}

/// Appends one of the scheduler's events to the outbox, continuing `trace` if given.
pub(crate) async fn emit(
    tx: &mut Tx,
    event: Event,
    trace: Option<&TraceParent>,
) -> Result<(), SchedulerError> {
    let trace = trace
        .map(TraceParent::child)
        .unwrap_or_else(TraceParent::new_root);
    tx.append_outbox(&Envelope::new(SOURCE, &event, Some(trace))?)
        .await?;
    Ok(())
}
