//! Conversation turns: `turn.dispatch` jobs from the work queue, on a consumer of their
//! own (`runner-turns`), taken by the queue as node jobs are ([`crate::work`]). A turn's
//! attempt runs the role's CLI in the conversation's workspace (kept across turns under the
//! data directory, restored from its checkpoint after a release), continuing the CLI's
//! session, and reports `turn.progress` and `turn.finished`, keeping one progress message
//! in the thread up to date meanwhile. As with nodes, an attempt begun before is reported
//! interrupted and never run again, so the scheduler resumes it as a new attempt. A
//! `deliver` said in the thread is a turn too, whose attempt delivers the workspace as a
//! `deliver` node would. A release checkpoints an idle workspace and frees its disk.
//!
//! The turn a job asks for is [`turn`]; the steps of an attempt are in [`attempt`] and
//! [`prepare`]; the workspace in
//! [`workspace`] and [`dirs`]; the CLI's home following the conversation between runners
//! in [`home`]; reading the CLI's output in [`output`]; judging its end in
//! [`verdict`]; the message's text in [`progress`]; what is reported in [`report`];
//! stopping in [`cancel`]; a run's workspace taken back from the SOP run it was handed to
//! in [`handoff`]; the `command` executor's transcript in [`transcript`]; a delivery's
//! attempt in [`deliver`], and what it says in [`delivered`].

mod attempt;
mod budget;
mod cancel;
mod confined;
mod deliver;
mod delivered;
mod dirs;
mod handoff;
mod home;
mod output;
mod prepare;
mod progress;
mod report;
mod transcript;
mod turn;
mod verdict;
mod workspace;

use std::sync::Arc;

use async_trait::async_trait;
use gatehouse_bus::{Bus, Delivery, HandlerError};
use gatehouse_events::{Envelope, Event, EventType, TurnDispatch, TurnTask};
use gatehouse_store::TurnKey;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::runner::Runner;
use crate::running::Running;
use crate::work::{Reported, Work};
use deliver::Delivering;

/// The durable consumer of turn jobs, shared by every runner.
const TURNS: &str = "runner-turns";

/// An attempt as the store keys it.
fn key(conversation_id: Uuid, seq: u64, attempt: u32) -> TurnKey {
    TurnKey {
        conversation_id,
        seq: i64::try_from(seq).unwrap_or(i64::MAX),
        attempt: i32::try_from(attempt).unwrap_or(i32::MAX),
    }
}

/// The runner's conversation turns: cheap to clone.
#[derive(Clone)]
pub(crate) struct Turns {
    runner: Runner,
    /// Turn attempts running here, so a `turn.cancel` can stop them.
    running: Running<TurnKey>,
}

impl Turns {
    pub(crate) fn new(runner: &Runner) -> Self {
        Self {
            runner: runner.clone(),
            running: Running::default(),
        }
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
                let cancel = self.runner.halted.child_token();
                let _running = self.running.register(key, cancel.clone());
                match &job.task {
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
                }
            }
            TurnTask::Release { timer } => {
                self.release(job, *timer).await;
                Ok(true)
            }
        }
    }
}

#[async_trait]
impl Work for Turns {
    const CONSUMER: &'static str = TURNS;
    const JOB: EventType = EventType::TurnDispatch;
    type Job = TurnDispatch;

    fn job(event: Event) -> Result<TurnDispatch, EventType> {
        match event {
            Event::TurnDispatch(job) => Ok(job),
            other => Err(other.event_type()),
        }
    }

    /// Watches `turn.cancel` ([`cancel`]).
    fn watch(&self, bus: Arc<dyn Bus>, stop: CancellationToken) -> Option<JoinHandle<()>> {
        Some(cancel::watch_cancels(self, bus, stop))
    }

    async fn run(
        &self,
        envelope: &Envelope,
        job: &TurnDispatch,
        _delivery: &Delivery,
    ) -> Result<Reported, HandlerError> {
        let first = self.turn_job(envelope, job).await?;
        Ok(Reported {
            first,
            acked: false,
        })
    }
}
