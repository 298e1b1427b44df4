//! A deliver node's rules for feedback on its pull request (`on_review`,
//! `on_checks_failed`, `on_conflict`), checked where they are written.

use marked_yaml::Span;

use super::kind::BackEdge;
use super::report::Report;
use super::values::people;
use crate::definition::DeliverMode;
use crate::feedback::{FeedbackRule, FeedbackRules};
use crate::raw::{RawFeedbackRule, RawNode};

/// Each rule key, its `send_back` as an edge names it, and its default `max`.
const RULES: [(&str, &str, u32); 3] = [
    ("on_review", "on_review.send_back", 3),
    ("on_checks_failed", "on_checks_failed.send_back", 2),
    ("on_conflict", "on_conflict.send_back", 1),
];

/// The rules `n` writes, by key, in [`RULES`] order.
fn raw_rules(n: &RawNode) -> [Option<&RawFeedbackRule>; 3] {
    [
        n.on_review.as_ref(),
        n.on_checks_failed.as_ref(),
        n.on_conflict.as_ref(),
    ]
}

/// The first rule `n` writes, as (key, where): what a message about all of them points at.
pub(super) fn first_rule(n: &RawNode) -> Option<(&'static str, Span)> {
    RULES
        .iter()
        .zip(raw_rules(n))
        .find_map(|((key, _, _), raw)| raw.map(|r| (*key, *r.send_back.span())))
}

/// Reports every rule on a node that is not a deliver node.
pub(super) fn check_kind(report: &mut Report<'_>, n: &RawNode, kind_name: &str) {
    if kind_name == "deliver" {
        return;
    }
    for ((key, _, _), raw) in RULES.iter().zip(raw_rules(n)) {
        if let Some(raw) = raw {
            report.span(
                raw.send_back.span(),
                format!("`{key}` does not apply to {kind_name} nodes: only a deliver node opens a pull request"),
            );
        }
    }
}

/// The rules of the `index`th node, a deliver node in `mode`; their send-back edges go to
/// `back_edges`, to be checked once the graph is known.
pub(super) fn rules(
    report: &mut Report<'_>,
    index: usize,
    n: &RawNode,
    mode: DeliverMode,
    back_edges: &mut Vec<BackEdge>,
) -> FeedbackRules {
    let mut read: Vec<Option<FeedbackRule>> = Vec::with_capacity(RULES.len());
    for (&(key, edge, default_max), raw) in RULES.iter().zip(raw_rules(n)) {
        let Some(raw) = raw else {
            read.push(None);
            continue;
        };
        if mode == DeliverMode::Direct {
            report.span(
                raw.send_back.span(),
                format!("`{key}` needs `mode: pr`: a direct merge opens no pull request to come back from"),
            );
        }
        back_edges.push((
            index,
            raw.send_back.to_string(),
            *raw.send_back.span(),
            edge,
        ));
        read.push(Some(rule(report, key, default_max, raw)));
    }
    let mut read = read.into_iter();
    FeedbackRules {
        on_review: read.next().flatten(),
        on_checks_failed: read.next().flatten(),
        on_conflict: read.next().flatten(),
    }
}

fn rule(
    report: &mut Report<'_>,
    key: &str,
    default_max: u32,
    raw: &RawFeedbackRule,
) -> FeedbackRule {
    let review = key == "on_review";
    if let Some(max) = &raw.max
        && review
        && **max == 0
    {
        report.span(
            max.span(),
            "`on_review.max` must be at least 1; leave `on_review` out to take no reviews",
        );
    }
    let approvers = match &raw.approvers {
        None => Vec::new(),
        Some(approvers) if review => {
            report.span(
                approvers.span(),
                "`on_review.approvers` does not apply: a review past `max` is refused, no gate opens",
            );
            Vec::new()
        }
        Some(approvers) => {
            if approvers.is_empty() {
                report.span(
                    approvers.span(),
                    format!("`{key}.approvers` names nobody; name person ids or group:<name>, or leave it out to let anyone who may decide gates decide"),
                );
            }
            people(report, approvers, &format!("{key}.approvers"))
        }
    };
    FeedbackRule {
        send_back: raw.send_back.to_string(),
        max: raw.max.as_ref().map_or(default_max, |m| **m),
        approvers,
    }
}
