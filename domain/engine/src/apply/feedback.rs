//! Feedback on the run's pull request: taken up by its deliver node's rule once the run
//! has succeeded (the work sent back, or past `max` a person asked), kept waiting while
//! the run still works, refused when the run ended otherwise or has heard it already.

use gatehouse_events::{Feedback, FeedbackKind, GateStatus, NodeStatus, RunStatus};

use super::Step;
use crate::{Effect, GateState, Rejection};

impl Step<'_> {
    /// [`crate::Input::Feedback`]: refused without a rule for its kind, when heard before
    /// or when the run failed or was cancelled; taken up at once on a succeeded run; else
    /// kept waiting. A review that could only be refused later is refused now.
    pub(super) fn feedback(&mut self, feedback: Feedback) -> Result<(), Rejection> {
        let rule_name = feedback.kind.rule();
        let Some((node, rule)) = self.sop.feedback_rule(feedback.kind) else {
            return Err(Rejection::NoFeedbackRule {
                rule: rule_name.to_owned(),
            });
        };
        if self.state.feedback_heard.contains(&feedback.key) {
            return Err(Rejection::FeedbackHeard { key: feedback.key });
        }
        match self.state.status {
            RunStatus::Succeeded => return self.take_up(feedback),
            status @ (RunStatus::Failed | RunStatus::Cancelled) => {
                return Err(Rejection::Ended(status));
            }
            _ => {}
        }
        if feedback.kind == FeedbackKind::Review {
            let waiting = (self.state.feedback_waiting.iter())
                .filter(|f| f.kind == FeedbackKind::Review)
                .count();
            let taken = self.sends(&node.id, rule_name) as usize + waiting;
            if taken >= rule.max as usize {
                return Err(Rejection::FeedbackLimit {
                    rule: rule_name.to_owned(),
                    max: rule.max,
                });
            }
        }
        self.state.feedback_heard.insert(feedback.key.clone());
        self.state.feedback_waiting.push(feedback);
        Ok(())
    }

    /// Takes up the oldest waiting feedback if the run has succeeded, and says whether it
    /// did. Waiting reviews were counted against `max` when they came, so none is refused
    /// here; one that somehow would be is dropped rather than kept forever.
    pub(super) fn take_up_waiting(&mut self) -> bool {
        if self.state.status != RunStatus::Succeeded || self.state.feedback_waiting.is_empty() {
            return false;
        }
        let feedback = self.state.feedback_waiting.remove(0);
        let _refused = self.take_up(feedback);
        true
    }

    /// Feedback on a succeeded run: within its rule's `max`, the work goes back to the
    /// rule's target with the feedback's [prompt](Feedback::prompt) as the rework comment
    /// and the deliver node answers it; past `max`, a review is refused, failing checks and
    /// conflicts open the deliver node's gate.
    fn take_up(&mut self, feedback: Feedback) -> Result<(), Rejection> {
        let rule_name = feedback.kind.rule();
        let Some((node, rule)) = self.sop.feedback_rule(feedback.kind) else {
            return Err(Rejection::NoFeedbackRule {
                rule: rule_name.to_owned(),
            });
        };
        let (id, target, max) = (node.id.clone(), rule.send_back.clone(), rule.max);
        if self.sends(&id, rule_name) >= max {
            if feedback.kind == FeedbackKind::Review {
                return Err(Rejection::FeedbackLimit {
                    rule: rule_name.to_owned(),
                    max,
                });
            }
            self.state.feedback_heard.insert(feedback.key.clone());
            self.ask(&id, feedback);
            return Ok(());
        }
        self.state.feedback_heard.insert(feedback.key.clone());
        let comment = feedback.prompt();
        let deliver = &mut self.state.nodes[id.as_str()];
        *deliver
            .feedback_sends
            .entry(rule_name.to_owned())
            .or_default() += 1;
        deliver.answering = Some(feedback);
        self.send_back(&target, &id, comment);
        Ok(())
    }

    /// Opens the deliver node's gate about `feedback`, as a new attempt of it, so a
    /// decision on an earlier opening is stale.
    fn ask(&mut self, id: &str, feedback: Feedback) {
        let node = &mut self.state.nodes[id];
        node.attempt += 1;
        node.status = NodeStatus::WaitingApproval;
        node.answering = Some(feedback);
        let gate = node.gate.get_or_insert_with(GateState::new);
        gate.status = GateStatus::Waiting;
        gate.approvals.clear();
        gate.opened_ms = None;
        self.effects.push(Effect::OpenGate {
            node: id.to_owned(),
            attempt: node.attempt,
        });
    }

    /// Send-backs `rule` of deliver node `id` has used.
    fn sends(&self, id: &str, rule: &str) -> u32 {
        self.node(id).feedback_sends.get(rule).copied().unwrap_or(0)
    }
}
