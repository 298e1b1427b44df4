//! The runner's metrics: jobs in flight, how long attempts take, and how long a sandbox
//! takes to get going.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use gatehouse_events::NodeOutcome;

/// Holds one job in `gatehouse_runner_jobs_in_flight` while it lives, so every way a job
/// ends (settled, handed back at shutdown, a panic) takes it out again.
pub(crate) struct InFlight(());

impl InFlight {
    pub(crate) fn start() -> Self {
        metrics::gauge!("gatehouse_runner_jobs_in_flight").increment(1.0);
        Self(())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        metrics::gauge!("gatehouse_runner_jobs_in_flight").decrement(1.0);
    }
}

/// Records `gatehouse_node_duration_seconds`: one attempt, from its beginning to its result.
/// `kind` is [`gatehouse_events::NodeSpec::kind`], a small fixed set.
pub(crate) fn node_finished(kind: &'static str, outcome: &NodeOutcome, begun: Instant) {
    let outcome = match outcome {
        NodeOutcome::Succeeded => "succeeded",
        NodeOutcome::Failed { .. } => "failed",
        NodeOutcome::TimedOut => "timed_out",
        NodeOutcome::Cancelled => "cancelled",
    };
    metrics::histogram!("gatehouse_node_duration_seconds",
        "kind" => kind, "outcome" => outcome)
    .record(begun.elapsed().as_secs_f64());
}

/// `gatehouse_sandbox_start_seconds` for one attempt: from the attempt's beginning until
/// its process is running. The sandbox does not say when that is, so the first output line
/// received from it stands in, or the end of the sandbox's run when the process printed
/// nothing. That includes whatever precedes the sandbox in the attempt (cloning the
/// issue's repository, the workspace checkpoint, copying inputs), which is part of what a
/// node waits for before its script runs; a script that is silent for a while after it
/// starts reads as a slow start.
pub(crate) struct SandboxStart {
    begun: Instant,
    kind: &'static str,
    recorded: AtomicBool,
}

impl SandboxStart {
    pub(crate) fn new(begun: Instant, kind: &'static str) -> Self {
        Self {
            begun,
            kind,
            recorded: AtomicBool::new(false),
        }
    }

    /// Records the time since the attempt began, the first time it is called.
    pub(crate) fn running(&self) {
        if !self.recorded.swap(true, Ordering::Relaxed) {
            metrics::histogram!("gatehouse_sandbox_start_seconds", "kind" => self.kind)
                .record(self.begun.elapsed().as_secs_f64());
        }
    }
}
