//! The transition function: an input handled, ready nodes started, the run's status
//! derived, waiting feedback taken up. Deciding gates is in [`gate`]; stopping, resetting
//! and redoing work in [`reset`]; feedback on the run's pull request in [`feedback`].

mod feedback;
mod gate;
mod reset;

use std::collections::BTreeSet;

use gatehouse_events::{GateStatus, NodeStatus, RunStatus};
use gatehouse_sop::{Node, NodeKind, OnInterrupt, Sop};

use crate::{Effect, GateState, Input, NodeState, Outcome, Rejection, RunState};

/// Applies one input to a run of `sop`. On success the state is updated (its revision
/// raised if anything changed) and the effects to carry out are returned; on refusal the
/// state is untouched.
pub fn apply(sop: &Sop, state: &mut RunState, input: Input) -> Result<Vec<Effect>, Rejection> {
    if state.status == RunStatus::Requested {
        // Only the row shown until the scheduler creates the run: nothing to act on yet.
        return Err(Rejection::NotCreated);
    }
    let mut step = Step {
        sop,
        state: state.clone(),
        effects: Vec::new(),
    };
    step.handle(input)?;
    step.advance();
    step.refresh_status();
    // Feedback that waited for the run is taken up once it succeeds, one at a time.
    while step.take_up_waiting() {
        step.advance();
        step.refresh_status();
    }
    if step.state != *state {
        step.state.revision = state.revision + 1;
        *state = step.state;
    }
    Ok(step.effects)
}

/// One application: a working copy of the state and the effects so far.
struct Step<'a> {
    sop: &'a Sop,
    state: RunState,
    effects: Vec<Effect>,
}

impl Step<'_> {
    fn handle(&mut self, input: Input) -> Result<(), Rejection> {
        match input {
            Input::Start => Ok(()),
            Input::NodeStarted { node, attempt } => {
                let n = self.node_mut(&node)?;
                if n.attempt == attempt && n.status == NodeStatus::Dispatched {
                    n.status = NodeStatus::Running;
                }
                Ok(())
            }
            Input::NodeFinished {
                node,
                attempt,
                outcome,
            } => self.finished(&node, attempt, outcome),
            Input::RetryDue { node, attempt } => {
                let n = self.node_mut(&node)?;
                if n.retry_pending && n.attempt == attempt {
                    // Ready again; `advance` starts it unless the run is paused.
                    n.retry_pending = false;
                }
                Ok(())
            }
            Input::Decide {
                node,
                attempt,
                decision,
                comment,
                person,
                groups,
            } => {
                let gate = self.open_gate(&node, attempt)?;
                if !gate.allows(&person, &groups) {
                    return Err(Rejection::NotAnApprover {
                        gate: node,
                        person,
                        approvers: gate.approvers.join(", "),
                    });
                }
                self.decide(&node, attempt, decision, comment, person)
            }
            Input::GateExpired { node, attempt } => self.expired(&node, attempt),
            Input::Pause => {
                self.refuse_if_ended()?;
                if self.state.paused {
                    return Err(Rejection::PauseState("already paused"));
                }
                self.state.paused = true;
                Ok(())
            }
            Input::Resume => {
                self.refuse_if_ended()?;
                if !self.state.paused {
                    return Err(Rejection::PauseState("not paused"));
                }
                self.state.paused = false;
                Ok(())
            }
            Input::Cancel => {
                self.refuse_if_ended()?;
                self.state.cancelled = true;
                self.stop_all(NodeStatus::Cancelled);
                Ok(())
            }
            Input::RetryFrom { node } => self.retry_from(&node),
            Input::Feedback { feedback } => self.feedback(feedback),
        }
    }

    fn refuse_if_ended(&self) -> Result<(), Rejection> {
        if self.state.is_terminal() {
            Err(Rejection::Ended(self.state.status))
        } else {
            Ok(())
        }
    }

    fn def(&self, id: &str) -> &Node {
        // Node ids in the state come from the same definition.
        self.sop
            .node(id)
            .unwrap_or_else(|| unreachable!("node `{id}` is in the state but not the SOP"))
    }

    fn node_mut(&mut self, id: &str) -> Result<&mut NodeState, Rejection> {
        self.state
            .nodes
            .get_mut(id)
            .ok_or_else(|| Rejection::UnknownNode(id.to_owned()))
    }

    fn node(&self, id: &str) -> &NodeState {
        &self.state.nodes[id]
    }

    /// Nodes `id` needs, directly or through others.
    fn upstream(&self, id: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<String> = self.def(id).needs.clone();
        while let Some(n) = stack.pop() {
            if seen.insert(n.clone()) {
                stack.extend(self.def(&n).needs.iter().cloned());
            }
        }
        seen
    }

    /// Nodes that need `id`, directly or through others.
    fn downstream(&self, id: &str) -> BTreeSet<String> {
        self.sop
            .nodes
            .iter()
            .filter(|n| self.upstream(&n.id).contains(id))
            .map(|n| n.id.clone())
            .collect()
    }

    /// Marks pending nodes whose needs all succeeded as ready, and starts ready nodes
    /// unless the run is paused or has ended.
    fn advance(&mut self) {
        if self.state.cancelled || self.state.failure.is_some() {
            return;
        }
        let ids: Vec<String> = self.state.nodes.keys().cloned().collect();
        for id in &ids {
            let needs_met = self
                .def(id)
                .needs
                .iter()
                .all(|n| self.node(n).status == NodeStatus::Succeeded);
            let node = &mut self.state.nodes[id.as_str()];
            if node.status == NodeStatus::Pending && needs_met {
                node.status = NodeStatus::Ready;
            }
        }
        if self.state.paused {
            return;
        }
        for id in &ids {
            let node = self.node(id);
            if node.status == NodeStatus::Ready && !node.retry_pending {
                self.start(id);
            }
        }
    }

    /// Begins the next attempt of a ready node.
    fn start(&mut self, id: &str) {
        let kind = &self.sop.node(id).map(|n| &n.kind);
        let node = &mut self.state.nodes[id];
        node.attempt += 1;
        let (node_id, attempt) = (id.to_owned(), node.attempt);
        let effect = match kind {
            Some(NodeKind::Gate(_)) => {
                node.status = NodeStatus::WaitingApproval;
                if let Some(gate) = node.gate.as_mut() {
                    gate.status = GateStatus::Waiting;
                    gate.approvals.clear();
                }
                Effect::OpenGate {
                    node: node_id,
                    attempt,
                }
            }
            Some(NodeKind::Sop { .. }) => {
                node.status = NodeStatus::Dispatched;
                Effect::StartChild {
                    node: node_id,
                    attempt,
                }
            }
            _ => {
                node.status = NodeStatus::Dispatched;
                Effect::Dispatch {
                    node: node_id,
                    attempt,
                }
            }
        };
        self.effects.push(effect);
    }

    fn finished(&mut self, id: &str, attempt: u32, outcome: Outcome) -> Result<(), Rejection> {
        let retry_interrupted = self
            .sop
            .node(id)
            .is_some_and(|def| def.on_interrupt == OnInterrupt::Retry);
        let asks_for_budget = self.sop.node(id).is_some_and(|def| def.on_budget.is_some());
        let node = self.node_mut(id)?;
        let in_flight = matches!(node.status, NodeStatus::Dispatched | NodeStatus::Running);
        if node.attempt != attempt || !in_flight {
            // A late or repeated report for an attempt that is no longer current.
            return Ok(());
        }
        let reason = match outcome {
            Outcome::Succeeded => {
                node.status = NodeStatus::Succeeded;
                node.last_error = None;
                node.rework_comment = None;
                // The deliver node has answered the feedback on the pull request.
                node.answering = None;
                return Ok(());
            }
            Outcome::Failed(reason) => reason,
            Outcome::TimedOut => "timed out".to_owned(),
            Outcome::Interrupted { reason, retries } => {
                if retry_interrupted && node.interruptions < retries {
                    // Not the node's failure: a new attempt at once, no backoff, and its
                    // `retry` left whole.
                    node.interruptions += 1;
                    node.status = NodeStatus::Ready;
                    node.last_error = Some(reason);
                    return Ok(());
                }
                reason
            }
            Outcome::OverBudget { reason, budget } => {
                node.last_error = Some(reason.clone());
                if asks_for_budget {
                    node.status = NodeStatus::WaitingApproval;
                    node.over_budget = Some(budget);
                    let gate = node.gate.get_or_insert_with(GateState::new);
                    gate.status = GateStatus::Waiting;
                    gate.approvals.clear();
                    gate.opened_ms = None;
                    self.effects.push(Effect::OpenGate {
                        node: id.to_owned(),
                        attempt,
                    });
                } else {
                    node.failures += 1;
                    node.status = NodeStatus::Failed;
                    self.fail(format!("node `{id}` failed: {reason}"));
                }
                return Ok(());
            }
        };
        node.failures += 1;
        node.last_error = Some(reason.clone());
        let (failures, failure_sends) = (node.failures, node.failure_sends);
        let def = self.def(id);
        let (retry, on_failure) = (def.retry, def.on_failure.clone());
        if failures <= retry.max {
            let doublings = (failures - 1).min(16);
            let after = retry.backoff.saturating_mul(1 << doublings);
            let node = &mut self.state.nodes[id];
            node.status = NodeStatus::Ready;
            node.retry_pending = true;
            self.effects.push(Effect::ScheduleRetry {
                node: id.to_owned(),
                attempt,
                after,
            });
            return Ok(());
        }
        if let Some(rule) = on_failure
            && failure_sends < rule.max
        {
            self.state.nodes[id].failure_sends += 1;
            let comment = format!("`{id}` failed: {reason}");
            self.send_back(&rule.send_back, id, comment);
            return Ok(());
        }
        self.state.nodes[id].status = NodeStatus::Failed;
        self.fail(format!("node `{id}` failed: {reason}"));
        Ok(())
    }

    fn refresh_status(&mut self) {
        let nodes = || self.state.nodes.values();
        let any = |s: &[NodeStatus]| nodes().any(|n| s.contains(&n.status));
        self.state.status = if self.state.cancelled {
            RunStatus::Cancelled
        } else if self.state.failure.is_some() {
            RunStatus::Failed
        } else if nodes().all(|n| n.status == NodeStatus::Succeeded) {
            RunStatus::Succeeded
        } else if self.state.paused {
            RunStatus::Paused
        } else if any(&[
            NodeStatus::Dispatched,
            NodeStatus::Running,
            NodeStatus::Ready,
        ]) {
            RunStatus::Running
        } else if any(&[NodeStatus::WaitingApproval]) {
            RunStatus::Waiting
        } else if nodes().all(|n| n.attempt == 0) {
            RunStatus::Queued
        } else {
            RunStatus::Running
        };
    }
}
