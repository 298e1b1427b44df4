//! The scheduler's metrics: how long runs take (`gatehouse_run_duration_seconds`) and how
//! long gates wait for people (`gatehouse_gate_wait_seconds`).
//!
//! A step measures while its transaction is open and records once it has committed, so a
//! step that is rolled back and retried counts once.
//!
//! Gate waits are timed by this process: neither the engine's state nor the run row says
//! when a gate opened, so the scheduler notes the moment it commits a `gate.opened` and
//! measures from there to the step that closes the gate (decided, expired, or cancelled
//! with its run). A gate closed by another scheduler replica, or after this process
//! restarted, is not measured: the samples come from the gates one process saw open and
//! close. Storing the time in the gate's state would measure every gate, but that state
//! belongs to the engine.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use chrono::Utc;
use gatehouse_engine::{Command, RunState};
use gatehouse_events::{GateStatus, RunStatus};
use gatehouse_store::RunRow;
use uuid::Uuid;

/// A gate attempt: run, node, attempt.
type GateKey = (Uuid, String, u32);

/// Open gates remembered at most; past it the oldest is forgotten, so gates closed by
/// other replicas cannot make the map grow without end.
const GATES_KEPT: usize = 10_000;

/// Steps waiting for their commit at most; a step whose commit failed leaves its entry
/// behind (its retry replaces it), so the map is emptied rather than left to grow.
const PENDING_KEPT: usize = 1_000;

/// What one step measured.
#[derive(Debug, Default)]
pub(crate) struct Measured {
    /// The run reached a terminal status: that status, and seconds since it was created.
    run_ended: Option<(&'static str, f64)>,
    /// Gates the step opened.
    opened: Vec<GateKey>,
    /// Gates the step closed, with how.
    closed: Vec<(GateKey, &'static str)>,
}

impl Measured {
    /// Notes what a step of `run` did: `before` was its status, `state` is the new one and
    /// `commands` what the engine asked for.
    pub(crate) fn step(
        &mut self,
        run: &RunRow,
        before: RunStatus,
        state: &RunState,
        commands: &[Command],
    ) {
        for command in commands {
            match command {
                Command::OpenGate { node, attempt } => {
                    self.opened.push((run.id, node.clone(), *attempt));
                }
                Command::CloseGate {
                    node,
                    attempt,
                    status,
                } => self
                    .closed
                    .push(((run.id, node.clone(), *attempt), gate_outcome(*status))),
                _ => {}
            }
        }
        // A run retried after it failed ends again: each end is measured from creation.
        if state.status.is_terminal() && !before.is_terminal() {
            let took = (Utc::now() - run.created_at)
                .to_std()
                .unwrap_or_default()
                .as_secs_f64();
            self.run_ended = Some((state.status.as_str(), took));
        }
    }

    fn is_empty(&self) -> bool {
        self.run_ended.is_none() && self.opened.is_empty() && self.closed.is_empty()
    }
}

fn gate_outcome(status: GateStatus) -> &'static str {
    match status {
        GateStatus::Waiting => "waiting",
        GateStatus::Approved => "approved",
        GateStatus::SentBack => "sent_back",
        GateStatus::Rejected => "rejected",
        GateStatus::Expired => "expired",
        GateStatus::Cancelled => "cancelled",
    }
}

/// The scheduler's measurements: open gates and the steps waiting for their commit.
/// Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct Meter {
    opened: Arc<Mutex<HashMap<GateKey, Instant>>>,
    pending: Arc<Mutex<HashMap<Uuid, Measured>>>,
}

impl Meter {
    /// Keeps what the step applying `event` measured until [`Meter::committed`].
    pub(crate) fn hold(&self, event: Uuid, measured: Measured) {
        if measured.is_empty() {
            return;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if pending.len() >= PENDING_KEPT {
            pending.clear();
        }
        pending.insert(event, measured);
    }

    /// Forgets what the step applying `event` measured: it failed and was rolled back.
    pub(crate) fn drop_held(&self, event: Uuid) {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&event);
    }

    /// Records what the step applying `event` measured, now that it has committed.
    pub(crate) fn committed(&self, event: Uuid) {
        let held = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&event);
        if let Some(measured) = held {
            self.record(measured);
        }
    }

    /// Records a committed step's measurements.
    pub(crate) fn record(&self, measured: Measured) {
        let now = Instant::now();
        let mut opened = self.opened.lock().unwrap_or_else(|p| p.into_inner());
        for gate in measured.opened {
            if opened.len() >= GATES_KEPT
                && let Some(oldest) = opened
                    .iter()
                    .min_by_key(|(_, at)| **at)
                    .map(|(k, _)| k.clone())
            {
                opened.remove(&oldest);
            }
            opened.entry(gate).or_insert(now);
        }
        for (gate, outcome) in measured.closed {
            if let Some(at) = opened.remove(&gate) {
                metrics::histogram!("gatehouse_gate_wait_seconds", "outcome" => outcome)
                    .record(now.duration_since(at).as_secs_f64());
            }
        }
        if let Some((status, took)) = measured.run_ended {
            metrics::histogram!("gatehouse_run_duration_seconds", "status" => status).record(took);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_is_timed_from_the_commit_that_opened_it_to_the_one_that_closed_it() {
        let meter = Meter::default();
        let (run, event) = (Uuid::now_v7(), Uuid::now_v7());
        let gate = (run, "review".to_owned(), 1);
        meter.record(Measured {
            opened: vec![gate.clone()],
            ..Measured::default()
        });
        assert!(meter.opened.lock().unwrap().contains_key(&gate));

        meter.hold(
            event,
            Measured {
                closed: vec![(gate.clone(), "approved")],
                ..Measured::default()
            },
        );
        // Not yet committed: the gate is still open.
        assert!(meter.opened.lock().unwrap().contains_key(&gate));
        meter.committed(event);
        assert!(meter.opened.lock().unwrap().is_empty());
        assert!(meter.pending.lock().unwrap().is_empty());
    }

    #[test]
    fn a_rolled_back_step_records_nothing() {
        let meter = Meter::default();
        let (run, event) = (Uuid::now_v7(), Uuid::now_v7());
        let gate = (run, "review".to_owned(), 1);
        meter.record(Measured {
            opened: vec![gate.clone()],
            ..Measured::default()
        });
        meter.hold(
            event,
            Measured {
                closed: vec![(gate.clone(), "rejected")],
                ..Measured::default()
            },
        );
        meter.drop_held(event);
        meter.committed(event);
        assert!(meter.opened.lock().unwrap().contains_key(&gate));
    }
}
