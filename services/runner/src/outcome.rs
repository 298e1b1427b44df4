//! How an attempt's end reads to people: the outcome reported to the engine, the status
//! stored, and a reason that says what happened in the sandbox's terms.

use gatehouse_events::NodeOutcome;
use gatehouse_sandbox::{Exit, ExitStatus, Profile};
use gatehouse_store::AttemptStatus;

use crate::network::Refusal;

pub(crate) struct Verdict {
    pub outcome: NodeOutcome,
    pub status: AttemptStatus,
    pub exit_code: Option<i32>,
    /// The budget a refused model request reached, as a raise names it: the engine may
    /// ask a person to raise it rather than fail the node.
    pub over_budget: Option<String>,
}

impl Verdict {
    /// An attempt that did its work without a process of its own (a delivery).
    pub(crate) fn succeeded() -> Self {
        Self {
            outcome: NodeOutcome::Succeeded,
            status: AttemptStatus::Succeeded,
            exit_code: None,
            over_budget: None,
        }
    }

    /// An attempt that failed before or instead of running a process.
    pub(crate) fn failed(reason: String) -> Self {
        Self {
            outcome: NodeOutcome::Failed { reason },
            status: AttemptStatus::Failed,
            exit_code: None,
            over_budget: None,
        }
    }

    /// An attempt stopped because its runner shut down: a failure the engine may retry.
    pub(crate) fn interrupted(reason: String) -> Self {
        Self {
            outcome: NodeOutcome::Failed { reason },
            status: AttemptStatus::Interrupted,
            exit_code: None,
            over_budget: None,
        }
    }

    /// A budget refused the agent's model request: that is why it stopped, whatever its
    /// exit code.
    pub(crate) fn refused(refusal: Refusal, exit_code: Option<i32>) -> Self {
        Self {
            exit_code,
            over_budget: refusal.reached,
            ..Self::failed(refusal.message)
        }
    }

    /// Adds `notes` (hosts the egress proxy refused) to a failure's reason, where they may
    /// be why it failed; any other outcome is left as it is.
    pub(crate) fn noting(mut self, notes: &[String]) -> Self {
        if let (NodeOutcome::Failed { reason }, false) = (&mut self.outcome, notes.is_empty()) {
            reason.push_str("; ");
            reason.push_str(&notes.join("; "));
        }
        self
    }

    /// The reason stored with the attempt.
    pub(crate) fn error(&self) -> Option<&str> {
        match &self.outcome {
            NodeOutcome::Failed { reason } => Some(reason.as_str()),
            NodeOutcome::TimedOut => Some("timed out"),
            _ => None,
        }
    }
}

/// Judges an exit. `problem` is a reason to fail an attempt that exited 0 (missing
/// artifacts, a secret in an artifact, an agent that reported an error).
pub(crate) fn judge(exit: &Exit, profile: &Profile, problem: Option<String>) -> Verdict {
    let failed = |reason: String, exit_code| Verdict {
        outcome: NodeOutcome::Failed { reason },
        status: AttemptStatus::Failed,
        exit_code,
        over_budget: None,
    };
    let pids = |reason: String| match (exit.pids_limit_reached, profile.pids) {
        (true, Some(limit)) => {
            format!("{reason}; it reached the sandbox's process limit ({limit} processes)")
        }
        _ => reason,
    };
    match exit.status {
        ExitStatus::Exited(0) => match problem {
            None => Verdict {
                outcome: NodeOutcome::Succeeded,
                status: AttemptStatus::Succeeded,
                exit_code: Some(0),
                over_budget: None,
            },
            Some(problem) => failed(problem, Some(0)),
        },
        ExitStatus::Exited(code) => {
            let mut reason = pids(format!("exit code {code}"));
            if let Some(problem) = problem {
                reason = format!("{reason}; {problem}");
            }
            failed(reason, Some(code))
        }
        ExitStatus::Signalled(signal) => failed(pids(format!("killed by signal {signal}")), None),
        ExitStatus::OutOfMemory => failed(
            match profile.memory {
                Some(limit) => format!(
                    "out of memory: killed at the sandbox's memory limit ({})",
                    limit.display().iec()
                ),
                None => "out of memory: killed by the kernel".to_owned(),
            },
            None,
        ),
        ExitStatus::TimedOut => Verdict {
            outcome: NodeOutcome::TimedOut,
            status: AttemptStatus::TimedOut,
            exit_code: None,
            over_budget: None,
        },
        ExitStatus::Cancelled => Verdict {
            outcome: NodeOutcome::Cancelled,
            status: AttemptStatus::Cancelled,
            exit_code: None,
            over_budget: None,
        },
    }
}
