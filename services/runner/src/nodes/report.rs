//! What an attempt tells the rest of Gatehouse: `node.progress` when it starts and
//! `node.finished` when it ends, each continuing the trace of the dispatch that asked for
//! it; an attempt begun before (its runner died) reported as interrupted, never run twice;
//! and the records of attempts that end early and of the lines they log.

use std::time::Instant;

use gatehouse_bus::{BusError, Delivery, HandlerError};
use gatehouse_events::{
    Artifact, Envelope, Event, EventError, NodeDispatch, NodeFinished, NodeProgress, TraceParent,
};
use gatehouse_store::{AttemptEnd, AttemptStatus};
use tokio_util::sync::CancellationToken;

use super::{JOBS, Nodes};
use crate::durably::durably;
use crate::observe;
use crate::outcome::Verdict;
use crate::work::Reported;

/// How an attempt ended: what its row records, and the `node.finished` that reports it,
/// recorded and reported in one commit.
pub(super) struct Ended {
    pub(super) end: AttemptEnd,
    pub(super) finished: NodeFinished,
}

impl Ended {
    /// `job`'s attempt ended by `verdict` after `duration_ms` (`None`: unknown, for one
    /// whose runner died), with the artifacts it stored.
    pub(super) fn new(
        job: &NodeDispatch,
        verdict: Verdict,
        duration_ms: Option<u64>,
        artifacts: Vec<Artifact>,
    ) -> Self {
        Self {
            end: AttemptEnd {
                status: verdict.status,
                exit_code: verdict.exit_code,
                error: verdict.error().map(str::to_owned),
                duration_ms: duration_ms.map(|ms| i64::try_from(ms).unwrap_or(i64::MAX)),
            },
            finished: NodeFinished {
                run_id: job.run_id,
                node: job.node.clone(),
                attempt: job.attempt,
                exit_code: verdict.exit_code,
                duration_ms: duration_ms.unwrap_or(0),
                artifacts,
                interrupted: verdict.status == AttemptStatus::Interrupted,
                over_budget: verdict.over_budget,
                outcome: verdict.outcome,
            },
        }
    }
}

/// Where the runner's events say they come from.
const SOURCE: &str = "runner";

impl Nodes {
    /// Begins the attempt and reports its start, runs it, and reports its end; or, when it
    /// was begun before, records and reports it as interrupted. `false`: the inbox had the
    /// job already, so its result had been reported before.
    pub(super) async fn report(
        &self,
        envelope: &Envelope,
        job: &NodeDispatch,
        attempt: i32,
        cancel: CancellationToken,
        delivery: &Delivery,
    ) -> Result<Reported, HandlerError> {
        // What this attempt reports continues the trace of the dispatch that asked for it.
        let trace = envelope.trace.as_ref();
        let started = NodeProgress {
            run_id: job.run_id,
            node: job.node.clone(),
            attempt: job.attempt,
            message: "started".into(),
        };
        let started = envelope_of(Event::NodeProgress(started), trace)?;
        // The attempt's start is recorded before anything of it happens; the event
        // announcing it goes out as its work starts ([`Nodes::report_started`]).
        let begun_here = durably("beginning an attempt", || async {
            self.runner
                .store
                .begin_attempt(job.run_id, &job.node, attempt)
                .await
        })
        .await?;
        let Ended { end, finished } = if begun_here {
            let begun = Instant::now();
            let ended = self.attempt(job, &started, cancel, begun).await?;
            observe::node_finished(job.spec.kind(), &ended.finished.outcome, begun);
            ended
        } else {
            // Begun before: its runner died (or this is a repeat). Never run an attempt
            // twice; the engine decides whether a new attempt follows. Not measured: how
            // long it ran is unknown.
            let reason = "interrupted: the runner stopped during this attempt";
            Ended::new(job, Verdict::interrupted(reason.into()), None, Vec::new())
        };
        let finished = envelope_of(Event::NodeFinished(finished), trace)?;
        // The attempt's end recorded with the event reporting it and the job's
        // acknowledgement (where the bus lives in the store), in one commit.
        let reported = durably("reporting an attempt's end", || async {
            let mut tx = self.runner.store.begin().await?;
            let first = tx.record_inbox(JOBS, envelope.id).await?;
            if first {
                tx.finish_attempt(job.run_id, &job.node, attempt, &end)
                    .await?;
                tx.append_outbox(&finished).await?;
            }
            let acked = match delivery.ack_within(&mut tx).await {
                Ok(acked) => acked,
                Err(BusError::Store(err)) => return Err(err),
                // Acknowledged after the commit instead.
                Err(_) => false,
            };
            tx.commit().await?;
            Ok(Reported { first, acked })
        })
        .await?;
        Ok(reported)
    }

    /// Reports the attempt's start (`node.progress`) as its work starts, beside the
    /// process being spawned rather than before it: on SQLite, the scheduler's commit of
    /// the start would otherwise take the one writer's turn from the attempt's own
    /// writes on its way to the process. An attempt that fails before its work starts
    /// reports only its end.
    pub(super) async fn report_started(&self, started: &Envelope) -> Result<(), HandlerError> {
        durably("reporting an attempt's start", || async {
            let mut tx = self.runner.store.begin().await?;
            tx.append_outbox(started).await?;
            tx.commit().await
        })
        .await?;
        Ok(())
    }

    /// What tells the rest of Gatehouse of the attempt's progress while it runs (its CLI
    /// retrying a model request): a `node.progress` with the text, continuing the trace of
    /// `started`, written to the outbox off the attempt's way; a failure is logged.
    pub(super) fn progress_reporter(
        &self,
        job: &NodeDispatch,
        started: &Envelope,
    ) -> Box<dyn Fn(String) + Send + Sync> {
        let store = self.runner.store.clone();
        let (run_id, node, attempt) = (job.run_id, job.node.clone(), job.attempt);
        let trace = started.trace.clone();
        Box::new(move |message: String| {
            let progress = NodeProgress {
                run_id,
                node: node.clone(),
                attempt,
                message,
            };
            let envelope = match envelope_of(Event::NodeProgress(progress), trace.as_ref()) {
                Ok(envelope) => envelope,
                Err(err) => {
                    tracing::warn!(error = %err, "a node's progress could not be written");
                    return;
                }
            };
            let store = store.clone();
            tokio::spawn(async move {
                let written = async {
                    let mut tx = store.begin().await?;
                    tx.append_outbox(&envelope).await?;
                    tx.commit().await
                };
                if let Err(err) = written.await {
                    tracing::warn!(error = %err, "reporting a node's progress failed");
                }
            });
        })
    }

    /// Ends an attempt that failed before or instead of running a process.
    pub(super) fn failed(
        &self,
        job: &NodeDispatch,
        reason: String,
        started: std::time::Instant,
    ) -> Ended {
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ended::new(job, Verdict::failed(reason), Some(duration_ms), Vec::new())
    }

    /// Appends lines to the attempt's log; a failure to store them is logged, not fatal.
    pub(super) async fn store_log(&self, job: &NodeDispatch, lines: &[String]) {
        let attempt = i32::try_from(job.attempt).unwrap_or(i32::MAX);
        for line in lines {
            if let Err(err) = self
                .runner
                .store
                .append_log(job.run_id, &job.node, attempt, "stdout", line)
                .await
            {
                tracing::warn!(error = %err, "storing a log line failed");
            }
        }
    }
}

/// The envelope of an event this runner reports, continuing `trace` (the dispatch's).
fn envelope_of(event: Event, trace: Option<&TraceParent>) -> Result<Envelope, EventError> {
    Envelope::new(SOURCE, &event, trace.map(TraceParent::child))
}
