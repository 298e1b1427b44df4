//! The transition function.

use std::collections::BTreeSet;

use gatehouse_events::{GateStatus, NodeStatus, RunStatus};
use gatehouse_sop::{Node, NodeKind, OnExpire, Sop};

use crate::{Decision, Effect, Input, NodeState, Outcome, Rejection, RunState};

/// Applies one input to a run of `sop`. On success the state is updated (its revision
/// raised if anything changed) and the effects to carry out are returned; on refusal the
/// state is untouched.
pub fn apply(sop: &Sop, state: &mut RunState, input: Input) -> Result<Vec<Effect>, Rejection> {
    let mut step = Step {
        sop,
        state: state.clone(),
        effects: Vec::new(),
    };
    step.handle(input)?;
    step.advance();
    step.refresh_status();
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
                return Ok(());
            }
            Outcome::Failed(reason) => reason,
            Outcome::TimedOut => "timed out".to_owned(),
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

    fn open_gate(&self, id: &str, attempt: u32) -> Result<&gatehouse_sop::Gate, Rejection> {
        let NodeKind::Gate(gate) = &self
            .sop
            .node(id)
            .ok_or_else(|| Rejection::UnknownNode(id.to_owned()))?
            .kind
        else {
            return Err(Rejection::NotAGate(id.to_owned()));
        };
        self.refuse_if_ended()?;
        let node = self.node(id);
        if node.status != NodeStatus::WaitingApproval {
            return Err(Rejection::NotWaiting {
                node: id.to_owned(),
                status: node.status,
            });
        }
        if node.attempt != attempt {
            return Err(Rejection::StaleAttempt {
                node: id.to_owned(),
                given: attempt,
                current: node.attempt,
            });
        }
        Ok(gate)
    }

    fn decide(
        &mut self,
        id: &str,
        attempt: u32,
        decision: Decision,
        comment: Option<String>,
        person: String,
    ) -> Result<(), Rejection> {
        let gate = self.open_gate(id, attempt)?.clone();
        match decision {
            Decision::Approve => {
                if !gate.allow_requester && self.state.requested_by.as_deref() == Some(&person) {
                    return Err(Rejection::RequesterMayNotApprove(id.to_owned()));
                }
                if !gate.allow_requester
                    && self.state.requirement_author.as_deref() == Some(&person)
                {
                    return Err(Rejection::AuthorMayNotApprove(id.to_owned()));
                }
                if !gate.allow_requester && self.state.schedule_owner.as_deref() == Some(&person) {
                    return Err(Rejection::OwnerMayNotApprove(id.to_owned()));
                }
                let approvals = match self.state.nodes[id].gate.as_mut() {
                    Some(g) => &mut g.approvals,
                    None => return Err(Rejection::NotAGate(id.to_owned())),
                };
                if approvals.contains(&person) {
                    return Err(Rejection::AlreadyApproved {
                        gate: id.to_owned(),
                        person,
                    });
                }
                approvals.push(person);
                if approvals.len() >= gate.min_approvals as usize {
                    self.close_gate(id, GateStatus::Approved);
                    self.state.nodes[id].status = NodeStatus::Succeeded;
                }
            }
            Decision::SendBack { to } => {
                if !gate.send_back.contains(&to) {
                    return Err(Rejection::NotASendBackTarget {
                        gate: id.to_owned(),
                        target: to,
                        allowed: gate.send_back,
                    });
                }
                let comment = comment
                    .filter(|c| !c.trim().is_empty())
                    .ok_or(Rejection::CommentRequired)?;
                let sent = self.node(id).gate.as_ref().map_or(0, |g| g.sent_back);
                if sent >= gate.max_rework {
                    return Err(Rejection::ReworkLimit {
                        gate: id.to_owned(),
                        max: gate.max_rework,
                    });
                }
                self.close_gate(id, GateStatus::SentBack);
                if let Some(g) = self.state.nodes[id].gate.as_mut() {
                    g.sent_back += 1;
                }
                self.send_back(&to, id, comment);
            }
            Decision::Reject => {
                self.close_gate(id, GateStatus::Rejected);
                self.state.nodes[id].status = NodeStatus::Failed;
                let why = comment.map(|c| format!(": {c}")).unwrap_or_default();
                self.fail(format!("gate `{id}` was rejected by {person}{why}"));
            }
        }
        Ok(())
    }

    fn expired(&mut self, id: &str, attempt: u32) -> Result<(), Rejection> {
        // An expiry for a gate that was decided meanwhile is simply late.
        let Ok(gate) = self.open_gate(id, attempt) else {
            return Ok(());
        };
        let on_expire = gate.on_expire;
        self.close_gate(id, GateStatus::Expired);
        match on_expire {
            OnExpire::Approve => self.state.nodes[id].status = NodeStatus::Succeeded,
            OnExpire::Reject => {
                self.state.nodes[id].status = NodeStatus::Failed;
                self.fail(format!("gate `{id}` expired without a decision"));
            }
        }
        Ok(())
    }

    fn close_gate(&mut self, id: &str, status: GateStatus) {
        let node = &mut self.state.nodes[id];
        if let Some(gate) = node.gate.as_mut() {
            gate.status = status;
        }
        self.effects.push(Effect::CloseGate {
            node: id.to_owned(),
            attempt: node.attempt,
            status,
        });
    }

    /// Stops whatever is in flight for a node; its status is set by the caller.
    fn stop(&mut self, id: &str) {
        let node = &self.state.nodes[id];
        match node.status {
            NodeStatus::Dispatched | NodeStatus::Running => {
                self.effects.push(Effect::CancelAttempt {
                    node: id.to_owned(),
                    attempt: node.attempt,
                })
            }
            NodeStatus::WaitingApproval => self.close_gate(id, GateStatus::Cancelled),
            _ => {}
        }
    }

    /// Redoes `target`: resets it and every node between it and `from` (inclusive), and
    /// stops work in flight or about to start downstream of it.
    fn send_back(&mut self, target: &str, from: &str, comment: String) {
        let before_from = self.upstream(from);
        let after_target = self.downstream(target);
        let ids: Vec<String> = self.state.nodes.keys().cloned().collect();
        for id in ids {
            let between = (id == target || after_target.contains(&id))
                && (id == from || before_from.contains(&id));
            let node = self.node(&id);
            let stale = after_target.contains(&id)
                && (node.is_active() || node.status == NodeStatus::Ready);
            if between || stale {
                // The sender's own attempt has already concluded.
                if id != from {
                    self.stop(&id);
                }
                self.reset(&id);
            }
        }
        let node = &mut self.state.nodes[target];
        node.rework_count += 1;
        node.rework_comment = Some(comment);
    }

    fn reset(&mut self, id: &str) {
        let node = &mut self.state.nodes[id];
        node.status = NodeStatus::Pending;
        node.retry_pending = false;
        node.failures = 0;
        if let Some(gate) = node.gate.as_mut() {
            gate.approvals.clear();
        }
    }

    /// Ends the run as failed, stopping what is in flight and skipping what never ran.
    fn fail(&mut self, reason: String) {
        self.state.failure = Some(reason);
        self.stop_all(NodeStatus::Skipped);
    }

    /// Stops every node in flight (it becomes cancelled) and gives nodes that had not
    /// started `not_started`.
    fn stop_all(&mut self, not_started: NodeStatus) {
        let ids: Vec<String> = self.state.nodes.keys().cloned().collect();
        for id in ids {
            let status = self.node(&id).status;
            if self.node(&id).is_active() {
                self.stop(&id);
                self.state.nodes[id.as_str()].status = NodeStatus::Cancelled;
            } else if matches!(status, NodeStatus::Pending | NodeStatus::Ready) {
                let node = &mut self.state.nodes[id.as_str()];
                node.status = not_started;
                node.retry_pending = false;
            }
        }
    }

    fn retry_from(&mut self, id: &str) -> Result<(), Rejection> {
        self.node_mut(id)?;
        let mut reset: BTreeSet<String> = self.downstream(id);
        reset.insert(id.to_owned());
        reset.extend(
            self.state
                .nodes
                .iter()
                .filter(|(_, n)| {
                    matches!(
                        n.status,
                        NodeStatus::Failed | NodeStatus::Cancelled | NodeStatus::Skipped
                    )
                })
                .map(|(k, _)| k.clone()),
        );
        if let Some(busy) = reset.iter().find(|n| self.node(n).is_active()) {
            return Err(Rejection::InFlight(busy.clone()));
        }
        for n in &reset {
            self.reset(n);
            self.state.nodes[n.as_str()].failure_sends = 0;
        }
        self.state.cancelled = false;
        self.state.failure = None;
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
