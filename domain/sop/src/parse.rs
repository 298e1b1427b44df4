//! From YAML text to a validated [`Sop`], collecting every problem with its position.

mod evidence;
mod feedback;
mod kind;
mod node;
mod params;
mod report;
mod values;
mod yaml;

use std::collections::HashMap;

use indexmap::IndexMap;
use marked_yaml::{LoaderOptions, Span};
use sha2::{Digest, Sha256};

use self::kind::BackEdge;
use self::report::Report;
use self::values::{people, valid_id, valid_param};
use self::yaml::describe;
use crate::SopError;
use crate::definition::{DeliverMode, NodeKind, Sop};
use crate::graph::Graph;
use crate::raw::RawSop;

/// Parses and validates one SOP file. `file` names it in diagnostics.
pub fn parse(file: &str, text: &str) -> Result<Sop, SopError> {
    let mut report = Report {
        file,
        diagnostics: Vec::new(),
    };
    let options = LoaderOptions::default().error_on_duplicate_keys(true);
    let raw: RawSop = match marked_yaml::from_yaml_with_options(0, text, options) {
        Ok(raw) => raw,
        Err(err) => {
            let (marker, message) = describe(err, text);
            report.at(marker.as_ref(), message);
            return Err(report.finish());
        }
    };
    let sop = convert(raw, text, &mut report);
    match sop {
        Some(sop) if report.diagnostics.is_empty() => Ok(sop),
        _ => Err(report.finish()),
    }
}

/// The SOP-level keys, then each node, then what only the whole graph shows: cycles,
/// nodes behind them, send-back edges that do not point upstream; and the version.
fn convert(raw: RawSop, text: &str, report: &mut Report<'_>) -> Option<Sop> {
    if !valid_id(&raw.name) {
        report.span(
            raw.name.span(),
            format!("invalid SOP name `{}`: use lower-case letters, digits, `-` and `_`, starting with a letter", &*raw.name),
        );
    }
    let mut params = IndexMap::new();
    for (name, p) in raw.params {
        if !valid_param(&name) {
            report.span(
                name.span(),
                format!(
                    "invalid parameter name `{}`: use letters, digits and `_`",
                    &*name
                ),
            );
        }
        let param = params::param(report, &name, p);
        params.insert(name.to_string(), param);
    }
    let starters = raw.starters.as_ref().map(|starters| {
        if starters.is_empty() {
            report.span(
                starters.span(),
                "`starters` names nobody, so no run could start; name person ids or group:<name>, or leave it out to let anyone with run rights start",
            );
        }
        people(report, starters, "starters")
    });
    let budget =
        raw.budget
            .as_ref()
            .and_then(|text| match text.parse::<gatehouse_agent::Limit>() {
                Ok(limit) => Some(limit),
                Err(error) => {
                    report.span(text.span(), error.to_string());
                    None
                }
            });

    let on_budget = raw
        .on_budget
        .as_ref()
        .and_then(|o| node::on_budget(report, o, raw.name.span()));

    let ids: HashMap<String, usize> = raw
        .nodes
        .keys()
        .enumerate()
        .map(|(i, k)| (k.to_string(), i))
        .collect();
    if raw.nodes.is_empty() {
        report.span(
            raw.name.span(),
            "an SOP needs at least one node under `nodes`",
        );
    }
    let mut needs_idx: Vec<Vec<usize>> = Vec::with_capacity(raw.nodes.len());
    let mut nodes = Vec::with_capacity(raw.nodes.len());
    let mut positions = Vec::with_capacity(raw.nodes.len());
    let mut back_edges: Vec<BackEdge> = Vec::new();
    let mut evidence_given = Vec::new();

    // Deliver nodes that open a pull request, with where their first feedback rule is.
    let mut pull_requests: Vec<(String, Option<(&'static str, Span)>)> = Vec::new();
    for (index, (id, n)) in raw.nodes.into_iter().enumerate() {
        positions.push(*id.span());
        let rule = feedback::first_rule(&n);
        if let Some(given) = &n.evidence {
            evidence_given.push((id.to_string(), given.clone()));
        }
        let (needs, node) = node::node(report, &ids, index, id, n, &mut back_edges, &on_budget);
        needs_idx.push(needs);
        if let Some(node) = &node
            && let NodeKind::Deliver {
                mode: DeliverMode::Pr,
                ..
            } = node.kind
        {
            pull_requests.push((node.id.clone(), rule));
        }
        nodes.extend(node);
    }
    if let Some(((last, _), earlier)) = pull_requests.split_last() {
        for (id, rule) in earlier {
            if let Some((key, span)) = rule {
                report.span(
                    span,
                    format!("`{key}` of `{id}` is never used: feedback on the pull request goes to `{last}`, the last deliver node with `mode: pr`"),
                );
            }
        }
    }

    let graph = Graph::new(&needs_idx);
    let names: Vec<String> =
        ids.iter()
            .fold(vec![String::new(); ids.len()], |mut v, (name, &i)| {
                v[i] = name.clone();
                v
            });
    let mut in_cycle = vec![false; names.len()];
    for cycle in graph.cycles() {
        let path: Vec<&str> = cycle
            .iter()
            .chain(cycle.first())
            .map(|&i| names[i].as_str())
            .collect();
        for &i in &cycle {
            in_cycle[i] = true;
        }
        report.span(
            &positions[cycle[0]],
            format!(
                "`needs` forms a cycle: {} (only send_back may point to earlier nodes)",
                path.join(" → ")
            ),
        );
    }
    for (i, name) in names.iter().enumerate() {
        if !in_cycle[i] && graph.upstream(i).iter().any(|&u| in_cycle[u]) {
            report.span(
                &positions[i],
                format!("node `{name}` can never run: it depends on a cycle"),
            );
        }
    }
    for (from, target, span, key) in back_edges {
        match ids.get(&target) {
            None => report.span(&span, format!("`{key}` names `{target}`, which is not a node of this SOP")),
            Some(&t) if !graph.upstream(from).contains(&t) => report.span(
                &span,
                format!("`{key}` of `{}` names `{target}`, which is not upstream of it; work can only be sent back to an earlier node", names[from]),
            ),
            Some(_) => {}
        }
    }
    evidence::resolve(report, &mut nodes, &ids, &graph, &evidence_given);

    let hash = Sha256::digest(text.replace("\r\n", "\n").as_bytes());
    let version = format!(
        "sha256:{}",
        hash.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    Some(Sop {
        title: raw.title.unwrap_or_else(|| raw.name.to_string()),
        name: raw.name.to_string(),
        description: raw.description.unwrap_or_default(),
        sandbox: raw
            .sandbox
            .map_or_else(|| "default".to_owned(), |s| s.to_string()),
        params,
        starters,
        budget,
        nodes,
        version,
        source: report.file.to_owned(),
        text: text.to_owned(),
        unavailable: None,
    })
}
