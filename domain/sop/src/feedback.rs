//! What a `deliver` node's pull request sends back after it opened: its rules for a
//! review, failing checks and a conflict, and the gate that opens when checks or
//! conflicts keep coming back.

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
    /// The gate at the deliver node once checks or conflicts come back past their rule's
    /// `max`, as everything that shows gates sees it: everyone either rule names may
    /// decide it (anyone who may decide gates when one names nobody) and it lists both
    /// rules' targets. The engine holds each opening to the rule that opened it
    /// ([`FeedbackRules::gate_for`]). `None` when neither rule is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
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
    /// Rules from the three keys, with the gate they imply.
    pub fn new(
        on_review: Option<FeedbackRule>,
        on_checks_failed: Option<FeedbackRule>,
        on_conflict: Option<FeedbackRule>,
    ) -> Self {
        let gating: Vec<&FeedbackRule> = on_checks_failed.iter().chain(&on_conflict).collect();
        let gate = (!gating.is_empty()).then(|| {
            let anyone = gating.iter().any(|r| r.approvers.is_empty());
            let approvers = if anyone {
                Vec::new()
            } else {
                distinct(gating.iter().flat_map(|r| r.approvers.iter()))
            };
            gate(approvers, distinct(gating.iter().map(|r| &r.send_back)))
        });
        Self {
            on_review,
            on_checks_failed,
            on_conflict,
            gate,
        }
    }

    /// The rule for `kind`, if the node has one.
    pub fn rule(&self, kind: FeedbackKind) -> Option<&FeedbackRule> {
        match kind {
            FeedbackKind::Review => self.on_review.as_ref(),
            FeedbackKind::ChecksFailed => self.on_checks_failed.as_ref(),
            FeedbackKind::Conflict => self.on_conflict.as_ref(),
        }
    }

    /// The gate as it is decided once `kind` opened it: by the people its rule names,
    /// sending back only to its rule's target. `None` for a review, or a kind without a
    /// rule: neither opens a gate.
    pub fn gate_for(&self, kind: FeedbackKind) -> Option<Gate> {
        let rule = match kind {
            FeedbackKind::Review => return None,
            _ => self.rule(kind)?,
        };
        Some(gate(rule.approvers.clone(), vec![rule.send_back.clone()]))
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

/// The gate past `max`: one approval takes the pull request as it is; it never expires.
fn gate(approvers: Vec<String>, send_back: Vec<String>) -> Gate {
    Gate {
        approvers,
        min_approvals: 1,
        send_back,
        allow_requester: false,
        expires_in: None,
        on_expire: OnExpire::Reject,
        max_rework: GATE_MAX_REWORK,
        channels: Vec::new(),
    }
}

fn distinct<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}
