//! A run's state as the engine sees it; stored as JSON beside the run.

use std::collections::{BTreeMap, BTreeSet};

use gatehouse_events::{Feedback, GateStatus, NodeStatus, RunStatus};
use gatehouse_sop::Sop;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunState {
    /// Derived from the nodes and flags after every input.
    pub status: RunStatus,
    /// Every node, in definition order.
    pub nodes: IndexMap<String, NodeState>,
    /// The person who asked for the work; gates refuse their approval by default.
    pub requested_by: Option<String>,
    /// The person whose requirement this is (the GitHub issue's author, the chat
    /// requester), when the run works on one; held to the same rule as the requester.
    #[serde(default)]
    pub requirement_author: Option<String>,
    /// The owner of the schedule that started it (who created or last changed it), held
    /// to the same rule: whoever triggers their schedule, they do not approve its work.
    #[serde(default)]
    pub schedule_owner: Option<String>,
    /// No new dispatches while set.
    pub paused: bool,
    /// Set by cancel.
    pub cancelled: bool,
    /// Why the run failed, once it has.
    pub failure: Option<String>,
    /// Raised on every change, so observers can order snapshots.
    pub revision: u64,
    /// Feedback on the run's pull request that came while the run was still working,
    /// oldest first: each is taken up when the run next succeeds, one piece of work at a
    /// time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feedback_waiting: Vec<Feedback>,
    /// The key of every piece of feedback taken, waiting or taken up: the same key again
    /// (a redelivered event) changes nothing.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub feedback_heard: BTreeSet<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeState {
    pub status: NodeStatus,
    /// The current (or last) attempt; 0 before the first.
    pub attempt: u32,
    /// Times work was sent back to this node.
    pub rework_count: u32,
    /// Failed attempts since the node last started afresh; counts against `retry.max`.
    pub failures: u32,
    /// Attempts lost to the infrastructure and run again since the node last started
    /// afresh; counts against `runner.interrupt_retries`, never against `retry.max`.
    #[serde(default)]
    pub interruptions: u32,
    /// `on_failure` send-backs used.
    pub failure_sends: u32,
    /// A retry is waiting for its backoff.
    pub retry_pending: bool,
    /// The reviewer's comment for the next attempt.
    pub rework_comment: Option<String>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// Gate bookkeeping, for gate nodes and for an agent node once it asked for a budget.
    pub gate: Option<GateState>,
    /// The budget an agent node's last attempt reached, while it asks for it to be raised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_budget: Option<String>,
    /// For the deliver node of the run's pull request: the feedback that sent the work
    /// back, which its next delivery answers on the pull request (or that its gate asks a
    /// person about). Cleared when it next succeeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answering: Option<Feedback>,
    /// For that deliver node: the send-backs each of its rules (`on_review`,
    /// `on_checks_failed`, `on_conflict`) used over the run's life, against its `max`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feedback_sends: BTreeMap<String, u32>,
}

/// A gate's decisions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GateState {
    /// The status of the current (or last) opening.
    pub status: GateStatus,
    /// People who approved the current opening.
    pub approvals: Vec<String>,
    /// Times this gate sent work back; bounded by `max_rework`.
    pub sent_back: u32,
    /// When the current opening began, in Unix milliseconds. The engine has no clock: the
    /// scheduler stamps it when it carries out the opening, so any replica can tell how
    /// long the gate waited when it closes.
    #[serde(default)]
    pub opened_ms: Option<i64>,
}

impl GateState {
    /// A gate that has not opened yet.
    pub fn new() -> Self {
        Self {
            status: GateStatus::Waiting,
            approvals: Vec::new(),
            sent_back: 0,
            opened_ms: None,
        }
    }
}

impl Default for GateState {
    fn default() -> Self {
        Self::new()
    }
}

impl RunState {
    /// A run of `sop` that has not started.
    pub fn new(sop: &Sop, requested_by: Option<String>) -> Self {
        let nodes = sop
            .nodes
            .iter()
            .map(|n| {
                let gate = n.is_gate().then(GateState::new);
                (
                    n.id.clone(),
                    NodeState {
                        status: NodeStatus::Pending,
                        attempt: 0,
                        rework_count: 0,
                        failures: 0,
                        interruptions: 0,
                        failure_sends: 0,
                        retry_pending: false,
                        rework_comment: None,
                        last_error: None,
                        gate,
                        over_budget: None,
                        answering: None,
                        feedback_sends: BTreeMap::new(),
                    },
                )
            })
            .collect();
        Self {
            status: RunStatus::Queued,
            nodes,
            requested_by,
            requirement_author: None,
            schedule_owner: None,
            paused: false,
            cancelled: false,
            failure: None,
            revision: 0,
            feedback_waiting: Vec::new(),
            feedback_heard: BTreeSet::new(),
        }
    }

    /// Whether the run has ended (it can still be restarted with retry).
    pub fn is_terminal(&self) -> bool {
        self.status.is_terminal()
    }
}

impl NodeState {
    /// The refusal an agent node asks a person to lift, while it asks to raise a budget:
    /// what the gate's cards, the console and the status comment show.
    pub fn budget_ask(&self) -> Option<&str> {
        self.over_budget.as_ref()?;
        self.last_error.as_deref()
    }

    /// What a deliver node's gate asks a person about, while failing checks or a conflict
    /// keep coming back on its pull request past its rule's `max`: what came back, how
    /// often the work was sent back for it, and its first line. What the gate's cards, the
    /// console and the status comment show.
    pub fn feedback_ask(&self) -> Option<String> {
        if self.status != NodeStatus::WaitingApproval {
            return None;
        }
        let feedback = self.answering.as_ref()?;
        let sends = self
            .feedback_sends
            .get(feedback.kind.rule())
            .copied()
            .unwrap_or(0);
        let first = feedback
            .text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or_default();
        let first: String = first.chars().take(200).collect();
        let times = if sends == 1 { "once" } else { "times" };
        let sends = if sends == 1 {
            String::new()
        } else {
            format!("{sends} ")
        };
        Some(format!(
            "{} on {} came back after the work was sent back {sends}{times} for it: {first}",
            capitalised(&feedback.kind.to_string()),
            feedback.pull
        ))
    }

    /// Dispatched, running or waiting for people: something is in flight for it.
    pub fn is_active(&self) -> bool {
        matches!(
            self.status,
            NodeStatus::Dispatched | NodeStatus::Running | NodeStatus::WaitingApproval
        )
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
