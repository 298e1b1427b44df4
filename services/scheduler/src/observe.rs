//! The scheduler's metrics: how long runs take (`gatehouse_run_duration_seconds`) and how
//! long gates wait for people (`gatehouse_gate_wait_seconds`).
//!
//! A step measures while its transaction is open and records once it has committed, so a
//! step that is rolled back and retried counts once.
//!
//! Gate waits are timed from the stamp the scheduler puts in the gate's state when it
//! opens it ([`stamp_opened_gates`]) to the step that closes it (decided, expired, or
//! cancelled with its run), so every gate is measured by whichever replica closes it, even
//! after restarts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use gatehouse_engine::{Effect, RunState};
use gatehouse_events::{GateStatus, RunStatus};
use uuid::Uuid;

/// Steps waiting for their commit at most; a step whose commit failed leaves its entry
/// behind (its retry replaces it), so the map is emptied rather than left to grow.
const PENDING_KEPT: usize = 1_000;

/// What one step measured.
#[derive(Debug, Default)]
pub(crate) struct Measured {
    /// The run reached a terminal status: that status, and seconds since it was created.
    run_ended: Option<(&'static str, f64)>,
    /// Gates the step closed: how, and seconds since they opened.
    closed: Vec<(&'static str, f64)>,
}

impl Measured {
    /// Notes what a step of a run created at `created_at` did: `before` was its status,
    /// `state` is the new one and `effects` what the engine asked for.
    pub(crate) fn step(
        &mut self,
        created_at: DateTime<Utc>,
        before: RunStatus,
        state: &RunState,
        effects: &[Effect],
    ) {
        let now_ms = Utc::now().timestamp_millis();
        for effect in effects {
            if let Effect::CloseGate { node, status, .. } = effect
                && let Some(opened_ms) = state
                    .nodes
                    .get(node)
                    .and_then(|n| n.gate.as_ref())
                    .and_then(|g| g.opened_ms)
            {
                let waited = (now_ms - opened_ms).max(0) as f64 / 1000.0;
                self.closed.push((gate_outcome(*status), waited));
            }
        }
        // A run retried after it failed ends again: each end is measured from creation.
        if state.status.is_terminal() && !before.is_terminal() {
            let took = (Utc::now() - created_at)
                .to_std()
                .unwrap_or_default()
                .as_secs_f64();
            self.run_ended = Some((state.status.as_str(), took));
        }
    }

    fn is_empty(&self) -> bool {
        self.run_ended.is_none() && self.closed.is_empty()
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

/// Stamps the gates `effects` open with the time, in `state`, before it is stored.
pub(crate) fn stamp_opened_gates(state: &mut RunState, effects: &[Effect]) {
    let now_ms = Utc::now().timestamp_millis();
    for effect in effects {
        if let Effect::OpenGate { node, .. } = effect
            && let Some(gate) = state.nodes.get_mut(node).and_then(|n| n.gate.as_mut())
        {
            gate.opened_ms = Some(now_ms);
        }
    }
}

/// The scheduler's measurements waiting for their steps' commits. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct Meter {
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
        for (outcome, waited) in measured.closed {
            metrics::histogram!("gatehouse_gate_wait_seconds", "outcome" => outcome).record(waited);
        }
        if let Some((status, took)) = measured.run_ended {
            metrics::histogram!("gatehouse_run_duration_seconds", "status" => status).record(took);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_engine::{Decision, Input, apply};

    const SOP: &str = "name: s\nnodes:\n  review: { kind: gate, approvers: [ana] }\n";

    #[test]
    fn a_gate_is_timed_from_its_stamp_to_the_step_that_closes_it() {
        let sop = gatehouse_sop::parse("s.yaml", SOP).unwrap();
        let mut state = RunState::new(&sop, None);
        let opened = apply(&sop, &mut state, Input::Start).unwrap();
        stamp_opened_gates(&mut state, &opened);
        let stamp = state.nodes["review"].gate.as_ref().unwrap().opened_ms;
        assert!(stamp.is_some(), "the opening is stamped");

        // As if it had opened 90 s ago, on another replica or before a restart.
        state
            .nodes
            .get_mut("review")
            .unwrap()
            .gate
            .as_mut()
            .unwrap()
            .opened_ms = Some(Utc::now().timestamp_millis() - 90_000);
        let before = state.status;
        let decide = Input::Decide {
            node: "review".into(),
            attempt: 1,
            decision: Decision::Approve,
            comment: None,
            person: "ana".into(),
            groups: Vec::new(),
        };
        let closed = apply(&sop, &mut state, decide).unwrap();
        let mut measured = Measured::default();
        measured.step(Utc::now(), before, &state, &closed);
        let [(outcome, waited)] = measured.closed[..] else {
            panic!("one gate closed: {:?}", measured.closed);
        };
        assert_eq!(outcome, "approved");
        assert!((90.0..95.0).contains(&waited), "{waited}");
    }

    #[test]
    fn only_committed_steps_are_recorded() {
        let meter = Meter::default();
        let (committed, rolled_back) = (Uuid::now_v7(), Uuid::now_v7());
        for event in [committed, rolled_back] {
            meter.hold(
                event,
                Measured {
                    closed: vec![("approved", 1.0)],
                    ..Measured::default()
                },
            );
        }
        meter.drop_held(rolled_back);
        assert_eq!(meter.pending.lock().unwrap().len(), 1);
        meter.committed(committed);
        assert!(meter.pending.lock().unwrap().is_empty());
    }
}
