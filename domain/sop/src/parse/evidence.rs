//! A gate's `evidence`: the artifacts of upstream nodes shown to whoever decides it. Each
//! entry is `NODE/FILE`, a node upstream of the gate and one of the artifacts it keeps;
//! a gate without the key shows every artifact of the nodes it needs.

use std::collections::HashMap;

use marked_yaml::Spanned;

use super::report::Report;
use crate::definition::{Node, NodeKind};
use crate::graph::Graph;

/// The `evidence` lists as written, by gate id.
pub(super) type Given = Vec<(String, Spanned<Vec<Spanned<String>>>)>;

/// Checks each gate's given entries and fills in the default for the others.
pub(super) fn resolve(
    report: &mut Report<'_>,
    nodes: &mut [Node],
    ids: &HashMap<String, usize>,
    graph: &Graph<'_>,
    given: &Given,
) {
    let kept: HashMap<String, Vec<String>> =
        nodes.iter().map(|n| (n.id.clone(), kept(n))).collect();
    for (gate, entries) in given {
        let Some(&gate_index) = ids.get(gate) else {
            continue;
        };
        let upstream = graph.upstream(gate_index);
        for entry in entries.iter() {
            let Some((node, file)) = entry.split_once('/') else {
                report.span(
                    entry.span(),
                    format!("`evidence` entry `{}` must be NODE/FILE: a node upstream of the gate and one of its artifacts", entry.as_str()),
                );
                continue;
            };
            match ids.get(node) {
                None => report.span(
                    entry.span(),
                    format!("`evidence` names `{node}`, which is not a node of this SOP"),
                ),
                Some(i) if *i == gate_index || !upstream.contains(i) => report.span(
                    entry.span(),
                    format!("`evidence` of `{gate}` names `{node}`, which is not upstream of it"),
                ),
                Some(_) => {
                    let files = kept.get(node).map(Vec::as_slice).unwrap_or_default();
                    if !files.iter().any(|f| f == file) {
                        let has = if files.is_empty() {
                            "it keeps none".to_owned()
                        } else {
                            format!("it keeps {}", files.join(", "))
                        };
                        report.span(
                            entry.span(),
                            format!("`evidence` names `{file}`, which is not an artifact of `{node}`; {has}"),
                        );
                    }
                }
            }
        }
    }
    for node in nodes.iter_mut() {
        if given.iter().any(|(g, _)| *g == node.id) {
            continue;
        }
        let needs = node.needs.clone();
        if let NodeKind::Gate(gate) = &mut node.kind {
            gate.evidence = needs
                .iter()
                .flat_map(|need| {
                    let files = kept.get(need).cloned().unwrap_or_default();
                    files.into_iter().map(move |f| format!("{need}/{f}"))
                })
                .collect();
        }
    }
}

/// The artifacts a node keeps: its `artifacts`, and for a `sop` node the files it imports.
fn kept(node: &Node) -> Vec<String> {
    let mut files = node.artifacts.clone();
    if let NodeKind::Sop { import, .. } = &node.kind {
        files.extend(
            import
                .iter()
                .filter_map(|e| e.split_once('/').map(|(_, f)| f.to_owned())),
        );
    }
    files
}
