//! Gates: a decision checked against the gate (open, current attempt, who may decide,
//! send-back targets and limits) and carried out; an expiry; a gate closing.

use std::borrow::Cow;

use gatehouse_events::{GateStatus, NodeStatus};
use gatehouse_sop::{Gate, OnExpire};

use super::Step;
use crate::{Decision, Effect, Rejection, gate_in_force};

impl Step<'_> {
    /// The gate at `id` as this opening is decided ([`gate_in_force`]), if it is open at
    /// `attempt`.
    pub(super) fn open_gate(&self, id: &str, attempt: u32) -> Result<Gate, Rejection> {
        let def = self
            .sop
            .node(id)
            .ok_or_else(|| Rejection::UnknownNode(id.to_owned()))?;
        if !def.has_gate() {
            return Err(Rejection::NotAGate(id.to_owned()));
        }
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
        // A deliver node waits for people only while it asks about what it answers, so a
        // node that waits has a gate in force.
        gate_in_force(def, node)
            .map(Cow::into_owned)
            .ok_or_else(|| Rejection::NotAGate(id.to_owned()))
    }

    pub(super) fn decide(
        &mut self,
        id: &str,
        attempt: u32,
        decision: Decision,
        comment: Option<String>,
        person: String,
    ) -> Result<(), Rejection> {
        let gate = self.open_gate(id, attempt)?;
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
                    self.approved(id, attempt);
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
                // At a deliver node's gate, what came back is still what is to be fixed.
                let comment = match &self.node(id).answering {
                    Some(feedback) => {
                        format!("{}\n\n{person} sent it back: {comment}", feedback.prompt())
                    }
                    None => comment,
                };
                self.send_back(&to, id, comment);
            }
            Decision::Reject => {
                self.close_gate(id, GateStatus::Rejected);
                let why = comment.map(|c| format!(": {c}")).unwrap_or_default();
                let failure = match self.node(id).budget_ask().map(str::to_owned) {
                    Some(reason) => {
                        format!("node `{id}` failed: {reason}; {person} declined to raise it{why}")
                    }
                    None => format!("gate `{id}` was rejected by {person}{why}"),
                };
                self.state.nodes[id].status = NodeStatus::Failed;
                self.fail(failure);
            }
        }
        Ok(())
    }

    pub(super) fn expired(&mut self, id: &str, attempt: u32) -> Result<(), Rejection> {
        // An expiry for a gate that was decided meanwhile is simply late.
        let Ok(gate) = self.open_gate(id, attempt) else {
            return Ok(());
        };
        let on_expire = gate.on_expire;
        self.close_gate(id, GateStatus::Expired);
        match (on_expire, self.node(id).budget_ask().map(str::to_owned)) {
            // An ask for money is never granted by the clock.
            (_, Some(reason)) => {
                self.state.nodes[id].status = NodeStatus::Failed;
                self.fail(format!(
                    "node `{id}` failed: {reason}; nobody raised it before the ask expired"
                ));
            }
            (OnExpire::Approve, None) => self.approved(id, attempt),
            (OnExpire::Reject, None) => {
                self.state.nodes[id].status = NodeStatus::Failed;
                self.fail(format!("gate `{id}` expired without a decision"));
            }
        }
        Ok(())
    }

    /// An approved gate: a gate node succeeds; an agent node that asked for its budget
    /// gets it raised once and becomes ready for its next attempt; a deliver node that
    /// asked about its pull request succeeds again, the pull request taken as it is.
    fn approved(&mut self, id: &str, attempt: u32) {
        let node = &mut self.state.nodes[id];
        match node.over_budget.take() {
            Some(budget) => {
                node.status = NodeStatus::Ready;
                self.effects.push(Effect::RaiseBudget {
                    node: id.to_owned(),
                    attempt,
                    budget,
                });
            }
            None => {
                node.status = NodeStatus::Succeeded;
                node.answering = None;
            }
        }
    }

    pub(super) fn close_gate(&mut self, id: &str, status: GateStatus) {
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
}
