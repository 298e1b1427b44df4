//! What the scheduler consumes: each event, inside the consumer's transaction, turned into
//! the engine's input for its run (a run request creates the run; a gate decision is also
//! audited), with the step's measurements held until the transaction commits.

use async_trait::async_trait;
use gatehouse_bus::{Handler, HandlerError};
use gatehouse_engine::{Decision, Input, Outcome};
use gatehouse_events::{Envelope, Event, GateDecisionKind, NodeOutcome, RunCommandKind, RunStatus};
use gatehouse_store::{DecisionRow, Tx};

use crate::Scheduler;
use crate::observe::Measured;

#[async_trait]
impl Handler for Scheduler {
    async fn handle(&self, tx: &mut Tx, envelope: &Envelope) -> Result<(), HandlerError> {
        let mut measured = Measured::default();
        let applied = self.apply_event(tx, envelope, &mut measured).await;
        match applied {
            Ok(()) => self.meter.hold(envelope.id, measured),
            Err(_) => self.meter.drop_held(envelope.id),
        }
        applied
    }

    async fn committed(&self, envelope: &Envelope) {
        self.meter.committed(envelope.id);
    }
}

impl Scheduler {
    /// Applies one consumed event inside `tx`.
    async fn apply_event(
        &self,
        tx: &mut Tx,
        envelope: &Envelope,
        measured: &mut Measured,
    ) -> Result<(), HandlerError> {
        let event = match envelope.decode() {
            Ok(event) => event,
            Err(gatehouse_events::EventError::UnknownType(t)) => {
                tracing::debug!(event_type = %t, "not for the scheduler");
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let trace = envelope.trace.as_ref();
        // What a refused feedback is logged with: ingest answers the pull request.
        let mut feedback = None;
        let (run_id, input) = match event {
            Event::RunRequested(request) => {
                return Ok(self.create(tx, &request, trace, measured).await?);
            }
            // A command can overtake the request that creates its run (a schedule cancelling
            // a run it has just requested, a label removed just after it was added): retry
            // until the run exists. The row ingest shows a requested run by is not the run.
            Event::RunCommand(c)
                if tx
                    .load_run(c.run_id)
                    .await?
                    .is_none_or(|row| row.status == RunStatus::Requested) =>
            {
                return Err(format!("run {} does not exist (yet)", c.run_id).into());
            }
            Event::RunCommand(c) => (
                c.run_id,
                match c.command {
                    RunCommandKind::Pause => Input::Pause,
                    RunCommandKind::Resume => Input::Resume,
                    RunCommandKind::Cancel => Input::Cancel,
                    RunCommandKind::Retry { node } => Input::RetryFrom { node },
                    RunCommandKind::Feedback { feedback: f } => {
                        feedback = Some((f.key.clone(), f.kind, f.pull.to_string()));
                        Input::Feedback { feedback: f }
                    }
                },
            ),
            Event::GateDecision(d) => {
                let person = d
                    .actor
                    .person
                    .clone()
                    .unwrap_or_else(|| d.actor.handle.clone());
                let (decision, target) = match &d.decision {
                    GateDecisionKind::Approve => (Decision::Approve, None),
                    GateDecisionKind::SendBack { to } => {
                        (Decision::SendBack { to: to.clone() }, Some(to.clone()))
                    }
                    GateDecisionKind::Reject => (Decision::Reject, None),
                };
                let input = Input::Decide {
                    node: d.node.clone(),
                    attempt: d.attempt,
                    decision,
                    comment: d.comment.clone(),
                    person: person.clone(),
                    groups: d.groups.clone(),
                };
                let attempt = i32::try_from(d.attempt).unwrap_or(i32::MAX);
                let outcome = match self.advance(tx, d.run_id, input, trace, measured).await? {
                    Ok(()) => "applied".to_owned(),
                    Err(rejection) => format!("refused: {rejection}"),
                };
                // An approval is of the work as it stands: delivery pushes nothing else.
                if outcome == "applied" && matches!(d.decision, GateDecisionKind::Approve) {
                    tx.bind_approved_trees(d.run_id, &d.node, attempt).await?;
                }
                tx.record_decision(&DecisionRow {
                    run_id: d.run_id,
                    node: d.node,
                    attempt,
                    decision: d.decision.name().into(),
                    target,
                    comment: d.comment,
                    person,
                    channel: d.actor.channel.as_str().to_owned(),
                    outcome,
                    decided_at: envelope.occurred_at,
                })
                .await?;
                return Ok(());
            }
            Event::ConversationInput(said) => {
                return Ok(self.conversation_input(tx, said, trace).await?);
            }
            Event::TurnProgress(p) => return Ok(self.turn_progress(tx, p, trace).await?),
            Event::TurnFinished(f) => return Ok(self.turn_finished(tx, f, trace).await?),
            Event::NodeProgress(p) => (
                p.run_id,
                Input::NodeStarted {
                    node: p.node,
                    attempt: p.attempt,
                },
            ),
            Event::NodeFinished(f) => (
                f.run_id,
                Input::NodeFinished {
                    node: f.node,
                    attempt: f.attempt,
                    outcome: match (f.outcome, f.over_budget) {
                        (NodeOutcome::Succeeded, _) => Outcome::Succeeded,
                        (NodeOutcome::Failed { reason }, _) if f.interrupted => {
                            Outcome::Interrupted {
                                reason,
                                retries: self.interrupt_retries,
                            }
                        }
                        (NodeOutcome::Failed { reason }, Some(budget)) => {
                            Outcome::OverBudget { reason, budget }
                        }
                        (NodeOutcome::Failed { reason }, None) => Outcome::Failed(reason),
                        (NodeOutcome::TimedOut, _) => Outcome::TimedOut,
                        (NodeOutcome::Cancelled, _) => Outcome::Failed("cancelled".into()),
                    },
                },
            ),
            other => {
                tracing::debug!(event_type = %other.event_type(), "not for the scheduler");
                return Ok(());
            }
        };
        if let Err(rejection) = self.advance(tx, run_id, input, trace, measured).await? {
            match feedback {
                Some((key, kind, pull)) => {
                    tracing::info!(run = %run_id, %key, %kind, %pull, %rejection, "feedback refused")
                }
                None => tracing::info!(run = %run_id, %rejection, "refused"),
            }
        }
        Ok(())
    }
}
