//! What a `deliver` node's pull request sends back after it opened: its rules for a
//! review, failing checks and a conflict, and the gate each of the last two opens when
//! they keep coming back.

use gatehouse_events::FeedbackKind;
use serde::Serialize;

use crate::definition::{Gate, OnExpire};

/// A deliver node's rules for feedback on its pull request, by kind. A kind without a
/// rule starts nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FeedbackRules {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_review: Option<FeedbackRule>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_checks_failed: Option<FeedbackRule>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_conflict: Option<FeedbackRule>,
}

/// Where one kind of feedback sends the work, and how often before a person decides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FeedbackRule {
    /// The node upstream of the deliver node that redoes the work.
    pub send_back: String,
    /// Times this kind may send the work back over the run's life; past it a review is
    /// refused, failing checks and conflicts open the deliver node's gate.
    pub max: u32,
    /// Who decides that gate (person ids and `group:<name>`); empty: anyone who may
    /// decide gates in the run's project. Always empty for `on_review`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub approvers: Vec<String>,
}

/// How many times a person may send the work back at the deliver node's gate over the
/// run's life, as a gate's `max_rework` defaults to.
const GATE_MAX_REWORK: u32 = 3;

impl FeedbackRules {
    /// The rule for `kind`, if the node has one.
    pub fn rule(&self, kind: FeedbackKind) -> Option<&FeedbackRule> {
        match kind {
            FeedbackKind::Review => self.on_review.as_ref(),
            FeedbackKind::ChecksFailed => self.on_checks_failed.as_ref(),
            FeedbackKind::Conflict => self.on_conflict.as_ref(),
        }
    }

    /// The gate `kind` opens past its rule's `max`: decided by the people its rule names
    /// (anyone who may decide gates when it names nobody), sending back only to its
    /// rule's target; one approval takes the pull request as it is, and it never expires.
    /// `None` for a review, or a kind without a rule: neither opens a gate. Which kind an
    /// opening is about is the run's to say (the engine's `gate_in_force`).
    pub fn gate_for(&self, kind: FeedbackKind) -> Option<Gate> {
        let rule = match kind {
            FeedbackKind::Review => return None,
            _ => self.rule(kind)?,
        };
        Some(Gate {
            approvers: rule.approvers.clone(),
            min_approvals: 1,
            send_back: vec![rule.send_back.clone()],
            allow_requester: false,
            expires_in: None,
            on_expire: OnExpire::Reject,
            max_rework: GATE_MAX_REWORK,
            channels: Vec::new(),
            evidence: Vec::new(),
        })
    }

    /// Whether failing checks or a conflict may open a gate at the node (past their
    /// rule's `max`): a review never does.
    pub fn opens_gate(&self) -> bool {
        self.on_checks_failed.is_some() || self.on_conflict.is_some()
    }

    /// Whether the node names no rule at all.
    pub fn is_empty(&self) -> bool {
        self.on_review.is_none() && self.on_checks_failed.is_none() && self.on_conflict.is_none()
    }

    /// Each rule given, with its kind.
    pub fn rules(&self) -> impl Iterator<Item = (FeedbackKind, &FeedbackRule)> {
        [
            FeedbackKind::Review,
            FeedbackKind::ChecksFailed,
            FeedbackKind::Conflict,
        ]
        .into_iter()
        .filter_map(|kind| self.rule(kind).map(|rule| (kind, rule)))
    }
}
