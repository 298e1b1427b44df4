//! Conversation turns: `turn.dispatch` jobs from the work queue, on a consumer of their
//! own (`runner-turns`) sharing the node jobs' slots and their lease, ack and park
//! handling. A turn's attempt runs the role's CLI in the conversation's workspace (kept
//! across turns under the data directory, restored from its checkpoint after a release),
//! continuing the CLI's session, and reports `turn.progress` and `turn.finished`, keeping one progress
//! message in the thread up to date meanwhile. As with nodes, an attempt begun before is
//! reported interrupted and never run again, so the scheduler resumes it as a new attempt.
//! A `deliver` said in the thread is a turn too, whose attempt delivers the workspace as a
//! `deliver` node would. A release checkpoints an idle workspace and frees its disk.
//!
//! The steps of an attempt are in [`attempt`] and [`prepare`]; the workspace in
//! [`workspace`] and [`dirs`]; reading the CLI's output in [`output`]; judging its end in
//! [`verdict`]; the message's text in [`progress`]; what is reported in [`report`];
//! stopping in [`cancel`]; the workspace handed to and from SOP runs in [`handoff`]; the `command` executor's transcript in [`transcript`]; a
//! delivery's attempt in [`deliver`], and what it says in [`delivered`].

mod attempt;
mod cancel;
mod confined;
mod deliver;
mod delivered;
mod dirs;
mod handoff;
mod output;
mod prepare;
mod progress;
mod report;
mod transcript;
mod verdict;
mod workspace;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatehouse_bus::{ConsumerSpec, Delivery, HandlerError, count_received, event_span};
use gatehouse_events::{Envelope, Event, EventError, TurnDispatch, TurnTask};
use gatehouse_store::TurnKey;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use uuid::Uuid;

pub(crate) use cancel::watch_cancels;

use crate::observe::InFlight;
use crate::runner::{Reported, Runner};
use deliver::Delivering;

/// The durable consumer of turn jobs, shared by every runner.
const TURNS: &str = "runner-turns";

/// Turn attempts running here, so a cancel can stop them.
pub(crate) type Running = Arc<Mutex<HashMap<TurnKey, CancellationToken>>>;

/// The turn jobs' consumer, with the runner's lease.
pub(crate) fn spec(ack_wait: Duration) -> ConsumerSpec {
    ConsumerSpec {
        ack_wait,
        ..ConsumerSpec::new(TURNS, "turn.dispatch")
    }
}

/// An attempt as the store keys it.
fn key(conversation_id: Uuid, seq: u64, attempt: u32) -> TurnKey {
    TurnKey {
        conversation_id,
        seq: i64::try_from(seq).unwrap_or(i64::MAX),
        attempt: i32::try_from(attempt).unwrap_or(i32::MAX),
    }
}

impl Runner {
    /// Runs one turn job to its end in its event span, renewing its lease meanwhile, and
    /// settles it; counted like a consumer's delivery under `runner-turns`.
    pub(crate) async fn take_turn(&self, delivery: Delivery) {
        let _in_flight = InFlight::start();
        let envelope = Envelope::from_slice(&delivery.payload);
        let span = event_span(TURNS, &delivery, envelope.as_ref().ok());
        count_received(TURNS, &delivery);
        self.settle_turn(delivery, envelope).instrument(span).await;
    }

    async fn settle_turn(&self, delivery: Delivery, envelope: Result<Envelope, EventError>) {
        let envelope = match envelope {
            Ok(e) => e,
            Err(err) => return self.park(TURNS, delivery, err.to_string()).await,
        };
        let job = match envelope.decode() {
            Ok(Event::TurnDispatch(job)) => job,
            Ok(other) => {
                let reason = format!("expected turn.dispatch, got {}", other.event_type());
                return self.park(TURNS, delivery, reason).await;
            }
            Err(err) => return self.park(TURNS, delivery, err.to_string()).await,
        };
        let result = self.leased(&delivery, self.turn_job(&envelope, &job)).await;
        let reported = result.map(|first| Reported {
            first,
            acked: false,
        });
        self.settled(TURNS, delivery, reported).await;
    }

    /// `false`: the job had been reported by an earlier delivery.
    async fn turn_job(
        &self,
        envelope: &Envelope,
        job: &TurnDispatch,
    ) -> Result<bool, HandlerError> {
        match &job.task {
            TurnTask::Turn { seq, attempt, .. } | TurnTask::Deliver { seq, attempt, .. } => {
                let key = key(job.conversation_id, *seq, *attempt);
                // Registered before anything is looked up, so a cancel that follows
                // cannot miss it; a child of the halt, so the end of the shutdown grace
                // stops it too.
                let cancel = self.halted.child_token();
                self.turns
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key, cancel.clone());
                let result = match &job.task {
                    TurnTask::Deliver { draft, .. } => {
                        let delivery = Delivering {
                            seq: *seq,
                            attempt: *attempt,
                            draft: *draft,
                        };
                        self.deliver_turn(envelope, job, key, &delivery, &cancel)
                            .await
                    }
                    _ => self.turn(envelope, job, key, &cancel).await,
                };
                self.turns
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&key);
                result
            }
            TurnTask::Release { timer } => {
                self.release(job, *timer).await;
                Ok(true)
            }
        }
    }
}
