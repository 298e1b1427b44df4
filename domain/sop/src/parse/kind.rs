//! What a node's `kind` makes of it: which keys apply, and the [`NodeKind`] they give.

use marked_yaml::{Span, Spanned};

use super::feedback;
use super::report::Report;
use super::values::{duration, people};
use crate::check_artifact_name;
use crate::definition::{DeliverMode, Gate, NodeKind, OnExpire};
use crate::raw::RawNode;

/// A send-back edge to check once the graph is known: (from, target, span, key).
pub(super) type BackEdge = (usize, String, Span, &'static str);

/// Reports an unknown kind, and keys that do not apply to the node's kind.
pub(super) fn check_keys(report: &mut Report<'_>, n: &RawNode) {
    let kind_name = n.kind.as_str();
    if !["script", "gate", "sop", "agent", "deliver"].contains(&kind_name) {
        report.span(
            n.kind.span(),
            format!(
                "unknown node kind `{kind_name}`; expected script, gate, sop, agent or deliver"
            ),
        );
    } else {
        for (key, span) in kind_keys(n) {
            if let Some(span) = span
                && !allowed_keys(kind_name).contains(&key)
            {
                report.span(span, format!("`{key}` does not apply to {kind_name} nodes"));
            }
        }
        feedback::check_kind(report, n, kind_name);
        let deliver_keys = [("mode", n.mode.as_ref()), ("branch", n.branch.as_ref())];
        if kind_name != "deliver" {
            for (key, value) in deliver_keys {
                if let Some(v) = value {
                    report.span(
                        v.span(),
                        format!("`{key}` does not apply to {kind_name} nodes"),
                    );
                }
            }
        }
    }
}

/// The node's kind, or `None` when it is unknown or misses a key it needs.
pub(super) fn kind(
    report: &mut Report<'_>,
    id: &Spanned<String>,
    index: usize,
    n: &RawNode,
    back_edges: &mut Vec<BackEdge>,
) -> Option<NodeKind> {
    let kind_name = n.kind.as_str();
    let required = |report: &mut Report<'_>, value: Option<&Spanned<String>>, key: &str| {
        required_value(report, id, kind_name, value, key)
    };
    match kind_name {
        "script" => required(report, n.run.as_ref(), "run").map(|run| NodeKind::Script { run }),
        "gate" => {
            let approvers = n
                .approvers
                .as_ref()
                .map(|a| people(report, a, "approvers"))
                .unwrap_or_default();
            if approvers.is_empty() {
                let at = n.approvers.as_ref().map_or(id.span(), Spanned::span);
                report.span(
                    at,
                    format!(
                        "gate `{}` needs `approvers` (person ids or group:<name>)",
                        id.as_str()
                    ),
                );
            }
            let min_approvals = n.min_approvals.as_ref().map_or(1, |m| **m);
            if let Some(m) = &n.min_approvals
                && **m == 0
            {
                report.span(m.span(), "`min_approvals` must be at least 1");
            }
            let send_back: Vec<String> = n
                .send_back
                .iter()
                .flat_map(|s| s.iter())
                .map(|t| {
                    back_edges.push((index, t.to_string(), *t.span(), "send_back"));
                    t.to_string()
                })
                .collect();
            let on_expire = match n.on_expire.as_ref().map(|s| s.as_str()) {
                None | Some("reject") => OnExpire::Reject,
                Some("approve") => OnExpire::Approve,
                Some(other) => {
                    let at = n.on_expire.as_ref().map_or(id.span(), Spanned::span);
                    report.span(
                        at,
                        format!("`on_expire` is `{other}`; expected reject or approve"),
                    );
                    OnExpire::Reject
                }
            };
            if n.on_expire.is_some() && n.expires_in.is_none() {
                let at = n.on_expire.as_ref().map_or(id.span(), Spanned::span);
                report.span(at, "`on_expire` needs `expires_in`");
            }
            Some(NodeKind::Gate(Gate {
                approvers,
                min_approvals,
                send_back,
                allow_requester: n.allow_requester.as_ref().is_some_and(|b| **b),
                expires_in: n
                    .expires_in
                    .as_ref()
                    .and_then(|d| duration(report, d, "expires_in")),
                on_expire,
                max_rework: n.max_rework.as_ref().map_or(3, |m| **m),
                channels: n.channels.as_ref().map(|c| c.to_vec()).unwrap_or_default(),
                // Checked, or filled with the needed nodes' artifacts, once every node is
                // known (`parse::evidence`).
                evidence: n
                    .evidence
                    .as_ref()
                    .map(|e| e.iter().map(|s| s.to_string()).collect())
                    .unwrap_or_default(),
            }))
        }
        "sop" => {
            if let Some(import) = &n.import
                && let Some(bad) = import.iter().find(|e| {
                    !e.split_once('/')
                        .is_some_and(|(node, file)| !node.is_empty() && !file.is_empty())
                })
            {
                report.span(import.span(), format!("`import` entry `{bad}` must be NODE/FILE, a node of the child SOP and one of its artifacts"));
            }
            if let Some(import) = &n.import
                && let Some(e) = import.iter().find_map(|e| {
                    let (_, file) = e.split_once('/')?;
                    check_artifact_name(file).err()
                })
            {
                report.span(import.span(), format!("`import`: {e}"));
            }
            required(report, n.sop.as_ref(), "sop").map(|sop| NodeKind::Sop {
                sop,
                params: n
                    .params
                    .as_ref()
                    .map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                    .unwrap_or_default(),
                import: n.import.as_ref().map(|i| i.to_vec()).unwrap_or_default(),
            })
        }
        "agent" => {
            let role = required(report, n.role.as_ref(), "role");
            let prompt = required(report, n.prompt.as_ref(), "prompt");
            if let (Some(spanned), Some(text)) = (n.prompt.as_ref(), &prompt)
                && let Err(e) = gatehouse_agent::check_template(text)
            {
                report.span(spanned.span(), format!("`prompt`: {e}"));
            }
            role.zip(prompt)
                .map(|(role, prompt)| NodeKind::Agent { role, prompt })
        }
        "deliver" => {
            let mode = match n.mode.as_ref().map(|m| m.as_str()) {
                None | Some("pr") => DeliverMode::Pr,
                Some("direct") => DeliverMode::Direct,
                Some(other) => {
                    let at = n.mode.as_ref().map_or(id.span(), Spanned::span);
                    report.span(at, format!("`mode` is `{other}`; expected pr or direct"));
                    DeliverMode::Pr
                }
            };
            Some(NodeKind::Deliver {
                mode,
                branch: n.branch.as_ref().map(|b| b.to_string()),
                feedback: feedback::rules(report, index, n, mode, back_edges),
            })
        }
        _ => None,
    }
}

/// `key`'s value, which a `kind_name` node must have and not leave empty.
fn required_value(
    report: &mut Report<'_>,
    id: &Spanned<String>,
    kind_name: &str,
    value: Option<&Spanned<String>>,
    key: &str,
) -> Option<String> {
    match value {
        Some(v) if !v.trim().is_empty() => Some(v.to_string()),
        Some(v) => {
            report.span(v.span(), format!("`{key}` must not be empty"));
            None
        }
        None => {
            report.span(
                id.span(),
                format!("{kind_name} node `{}` needs `{key}`", id.as_str()),
            );
            None
        }
    }
}

/// The kind-specific keys, for "does not apply" messages.
fn kind_keys(n: &RawNode) -> [(&'static str, Option<&Span>); 16] {
    [
        ("on_interrupt", n.on_interrupt.as_ref().map(Spanned::span)),
        ("run", n.run.as_ref().map(Spanned::span)),
        ("approvers", n.approvers.as_ref().map(Spanned::span)),
        ("min_approvals", n.min_approvals.as_ref().map(Spanned::span)),
        ("send_back", n.send_back.as_ref().map(Spanned::span)),
        (
            "allow_requester",
            n.allow_requester.as_ref().map(Spanned::span),
        ),
        ("expires_in", n.expires_in.as_ref().map(Spanned::span)),
        ("on_expire", n.on_expire.as_ref().map(Spanned::span)),
        ("max_rework", n.max_rework.as_ref().map(Spanned::span)),
        ("channels", n.channels.as_ref().map(Spanned::span)),
        ("evidence", n.evidence.as_ref().map(Spanned::span)),
        ("sop", n.sop.as_ref().map(Spanned::span)),
        ("params", n.params.as_ref().map(Spanned::span)),
        ("import", n.import.as_ref().map(Spanned::span)),
        ("role", n.role.as_ref().map(Spanned::span)),
        ("prompt", n.prompt.as_ref().map(Spanned::span)),
    ]
}

fn allowed_keys(kind: &str) -> &'static [&'static str] {
    match kind {
        "script" => &["run", "on_interrupt"],
        "gate" => &[
            "approvers",
            "min_approvals",
            "send_back",
            "allow_requester",
            "expires_in",
            "on_expire",
            "max_rework",
            "channels",
            "evidence",
        ],
        "sop" => &["sop", "params", "import"],
        "agent" => &["role", "prompt", "on_interrupt"],
        "deliver" => &["on_interrupt"],
        _ => &[],
    }
}
