//! One entry of `nodes:`: the keys every node has, checked and converted; its kind is
//! [`super::kind`]'s.

use std::collections::{BTreeMap, HashMap};

use marked_yaml::{Span, Spanned};

use super::kind::{self, BackEdge};
use super::report::Report;
use super::values::{duration, people, valid_id};
use crate::check_artifact_name;
use crate::definition::{Gate, Node, OnExpire, OnFailure, OnInterrupt, Retry};
use crate::raw::{RawNode, RawOnBudget};

/// The `index`th node, `id`, as `n` declares it: the indices of the nodes it needs, and the
/// node unless its kind could not be read. Its send-back edges go to `back_edges`.
pub(super) fn node(
    report: &mut Report<'_>,
    ids: &HashMap<String, usize>,
    index: usize,
    id: Spanned<String>,
    n: RawNode,
    back_edges: &mut Vec<BackEdge>,
    default_on_budget: &Option<Gate>,
) -> (Vec<usize>, Option<Node>) {
    if !valid_id(&id) {
        report.span(id.span(), format!("invalid node id `{}`: use lower-case letters, digits, `-` and `_`, starting with a letter", &*id));
    }
    let mut needs = Vec::new();
    for need in &n.needs {
        match ids.get(need.as_str()) {
            Some(&i) if i == index => {
                report.span(need.span(), format!("node `{}` needs itself", &*id))
            }
            Some(&i) => needs.push(i),
            None => report.span(
                need.span(),
                format!(
                    "`needs` names `{}`, which is not a node of this SOP",
                    &**need
                ),
            ),
        }
    }

    kind::check_keys(report, &n);
    let kind = kind::kind(report, &id, index, &n, back_edges);

    let retry = match &n.retry {
        Some(r) => Retry {
            max: *r.max,
            backoff: r
                .backoff
                .as_ref()
                .and_then(|b| duration(report, b, "retry.backoff"))
                .unwrap_or(Retry::default().backoff),
        },
        None => Retry::default(),
    };
    let on_failure = n.on_failure.as_ref().map(|f| {
        back_edges.push((
            index,
            f.send_back.to_string(),
            *f.send_back.span(),
            "on_failure.send_back",
        ));
        let max = f.max.as_ref().map_or(1, |m| **m);
        if let Some(m) = &f.max
            && **m == 0
        {
            report.span(m.span(), "`on_failure.max` must be at least 1");
        }
        OnFailure {
            send_back: f.send_back.to_string(),
            max,
        }
    });
    let on_interrupt = match n.on_interrupt.as_ref().map(|v| (v.as_str(), v.span())) {
        None | Some(("retry", _)) => OnInterrupt::Retry,
        Some(("fail", _)) => OnInterrupt::Fail,
        Some((other, span)) => {
            report.span(
                span,
                format!("`on_interrupt` is `retry` or `fail`, not `{other}`"),
            );
            OnInterrupt::Retry
        }
    };
    for artifact in &n.artifacts {
        if let Err(e) = check_artifact_name(artifact) {
            report.span(artifact.span(), e);
        }
    }
    let on_budget = match &n.on_budget {
        Some(_) if n.kind.as_str() != "agent" => {
            report.span(
                id.span(),
                format!(
                    "`on_budget` of `{}` does not apply to {} nodes: only an agent spends a budget",
                    id.as_str(),
                    n.kind.as_str()
                ),
            );
            None
        }
        Some(raw) => on_budget(report, raw, id.span()),
        None if n.kind.as_str() == "agent" => default_on_budget.clone(),
        None => None,
    };
    let timeout = n
        .timeout
        .as_ref()
        .and_then(|t| duration(report, t, "timeout"));
    let node = kind.map(|kind| Node {
        title: n.title.clone().unwrap_or_else(|| id.to_string()),
        id: id.to_string(),
        needs: n.needs.iter().map(|s| s.to_string()).collect(),
        timeout,
        retry,
        artifacts: n.artifacts.iter().map(|a| a.to_string()).collect(),
        env: n
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<BTreeMap<_, _>>(),
        secrets: n.secrets.clone(),
        on_failure,
        on_interrupt,
        sandbox: n.sandbox.as_ref().map(|s| s.to_string()),
        on_budget,
        kind,
    });
    (needs, node)
}

/// `on_budget` as written (`at`: where to point when the word is wrong): `None` for
/// `fail`, else the gate that asks to raise the budget. `ask` alone lets anyone who may
/// decide gates in the run's project raise it; `{ ask: [people] }` names who may.
pub(super) fn on_budget(report: &mut Report<'_>, raw: &RawOnBudget, at: &Span) -> Option<Gate> {
    let gate = |approvers, allow_requester, expires_in, channels| Gate {
        approvers,
        min_approvals: 1,
        send_back: Vec::new(),
        allow_requester,
        expires_in,
        on_expire: OnExpire::Reject,
        max_rework: 0,
        channels,
        evidence: Vec::new(),
    };
    match raw {
        RawOnBudget::Word(word) => match word.as_str() {
            "fail" => None,
            "ask" => Some(gate(Vec::new(), false, None, Vec::new())),
            other => {
                report.span(
                    at,
                    format!("`on_budget` is `{other}`; expected fail, ask, or {{ ask: [people] }}"),
                );
                None
            }
        },
        RawOnBudget::Ask(ask) => {
            if ask.ask.is_empty() {
                report.span(
                    ask.ask.span(),
                    "`on_budget.ask` names nobody; name person ids or group:<name>, or write `on_budget: ask` to let anyone who may decide gates raise it",
                );
            }
            let approvers = people(report, &ask.ask, "on_budget.ask");
            let expires_in = ask
                .expires_in
                .as_ref()
                .and_then(|d| duration(report, d, "on_budget.expires_in"));
            Some(gate(
                approvers,
                ask.allow_requester.as_ref().is_some_and(|b| **b),
                expires_in,
                ask.channels
                    .as_ref()
                    .map(|c| c.to_vec())
                    .unwrap_or_default(),
            ))
        }
    }
}
