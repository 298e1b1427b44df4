//! One entry of `nodes:`: the keys every node has, checked and converted; its kind is
//! [`super::kind`]'s.

use std::collections::{BTreeMap, HashMap};

use marked_yaml::Spanned;

use super::kind::{self, BackEdge};
use super::report::Report;
use super::values::{duration, valid_id};
use crate::check_artifact_name;
use crate::definition::{Node, OnFailure, OnInterrupt, Retry};
use crate::raw::RawNode;

/// The `index`th node, `id`, as `n` declares it: the indices of the nodes it needs, and the
/// node unless its kind could not be read. Its send-back edges go to `back_edges`.
pub(super) fn node(
    report: &mut Report<'_>,
    ids: &HashMap<String, usize>,
    index: usize,
    id: Spanned<String>,
    n: RawNode,
    back_edges: &mut Vec<BackEdge>,
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
        kind,
    });
    (needs, node)
}
