//! Stopping and redoing work: what is in flight stopped, nodes reset for a send-back or a
//! retry, and a run that fails stopping everything.

use std::collections::BTreeSet;

use gatehouse_events::{GateStatus, NodeStatus};

use super::Step;
use crate::{Effect, Rejection};

impl Step<'_> {
    /// Stops whatever is in flight for a node; its status is set by the caller.
    pub(super) fn stop(&mut self, id: &str) {
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
    pub(super) fn send_back(&mut self, target: &str, from: &str, comment: String) {
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
        node.interruptions = 0;
        node.over_budget = None;
        if let Some(gate) = node.gate.as_mut() {
            gate.approvals.clear();
        }
    }

    /// Ends the run as failed, stopping what is in flight and skipping what never ran.
    pub(super) fn fail(&mut self, reason: String) {
        self.state.failure = Some(reason);
        self.stop_all(NodeStatus::Skipped);
    }

    /// Stops every node in flight (it becomes cancelled) and gives nodes that had not
    /// started `not_started`.
    pub(super) fn stop_all(&mut self, not_started: NodeStatus) {
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

    pub(super) fn retry_from(&mut self, id: &str) -> Result<(), Rejection> {
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
}
