//! From YAML text to a validated [`Sop`], collecting every problem with its position.

mod params;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use indexmap::IndexMap;
use marked_yaml::{FromYamlError, LoaderOptions, Marker, Span, Spanned};
use sha2::{Digest, Sha256};

use crate::definition::{DeliverMode, Gate, Node, NodeKind, OnExpire, OnFailure, Retry, Sop};
use crate::graph::Graph;
use crate::raw::{RawNode, RawSop};
use crate::{Diagnostic, SopError, check_artifact_name, check_person_or_group};

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

struct Report<'a> {
    file: &'a str,
    diagnostics: Vec<Diagnostic>,
}

impl Report<'_> {
    fn at(&mut self, marker: Option<&Marker>, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic {
            file: self.file.to_owned(),
            line: marker.map_or(1, Marker::line),
            column: marker.map_or(1, Marker::column),
            message: message.into(),
        });
    }

    fn span(&mut self, span: &Span, message: impl Into<String>) {
        self.at(span.start(), message);
    }

    fn finish(mut self) -> SopError {
        self.diagnostics.sort_by_key(|d| (d.line, d.column));
        SopError {
            diagnostics: self.diagnostics,
        }
    }
}

/// Turns the YAML library's error into a position and a sentence.
fn describe(err: FromYamlError, text: &str) -> (Option<Marker>, String) {
    use marked_yaml::LoadError;
    match err {
        FromYamlError::ParseYaml(load) => match load {
            LoadError::TopLevelMustBeMapping(m) => (
                Some(m),
                "an SOP file must be a mapping with `name` and `nodes`".into(),
            ),
            LoadError::TopLevelMustBeSequence(m) => {
                (Some(m), "unexpected sequence at the top level".into())
            }
            LoadError::UnexpectedAnchor(m) => (
                Some(m),
                "YAML anchors and aliases are not supported in SOP files".into(),
            ),
            LoadError::MappingKeyMustBeScalar(m) => {
                (Some(m), "mapping keys must be plain strings".into())
            }
            LoadError::UnexpectedTag(m) => {
                (Some(m), "YAML tags are not supported in SOP files".into())
            }
            LoadError::ScanError(m, e) => (Some(m), format!("invalid YAML: {}", e.info())),
            LoadError::DuplicateKey(d) => {
                let first = d.prev_key.span().start().map_or(0, Marker::line);
                (
                    d.key.span().start().copied(),
                    format!(
                        "`{}` is defined twice (first on line {first})",
                        d.key.as_str()
                    ),
                )
            }
        },
        FromYamlError::FromNode(err) => {
            let marker = err.start_mark();
            let message = match err.into_inner() {
                marked_yaml::Error::UnknownFieldError(field, expected, _) => {
                    let key = marker.and_then(|m| locate_key(text, m, &field));
                    return (
                        key.or(marker),
                        format!(
                            "unknown key `{field}`; expected one of: {}",
                            expected.join(", ")
                        ),
                    );
                }
                other => other.to_string(),
            };
            (marker, message)
        }
    }
}

/// The position of the key `field` in the mapping the YAML library blamed: the first key
/// of that name at or after `near` (the library marks the mapping, not the key).
fn locate_key(text: &str, near: Marker, field: &str) -> Option<Marker> {
    fn walk(node: &marked_yaml::Node, field: &str, found: &mut Vec<Marker>) {
        if let Some(map) = node.as_mapping() {
            for (key, value) in map.iter() {
                if key.as_str() == field
                    && let Some(start) = key.span().start()
                {
                    found.push(*start);
                }
                walk(value, field, found);
            }
        } else if let Some(seq) = node.as_sequence() {
            for item in seq.iter() {
                walk(item, field, found);
            }
        }
    }
    let root = marked_yaml::parse_yaml(0, text).ok()?;
    let mut found = Vec::new();
    walk(&root, field, &mut found);
    found
        .into_iter()
        .filter(|m| (m.line(), m.column()) >= (near.line(), near.column()))
        .min_by_key(|m| (m.line(), m.column()))
}

/// The entries of a people list (`approvers`, `starters`), each checked where it is
/// written.
fn people(report: &mut Report<'_>, entries: &[Spanned<String>], key: &str) -> Vec<String> {
    for entry in entries {
        if let Err(e) = check_person_or_group(entry) {
            report.span(entry.span(), format!("`{key}`: {e}"));
        }
    }
    entries.iter().map(|e| e.to_string()).collect()
}

fn valid_id(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

fn valid_param(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn duration(report: &mut Report<'_>, value: &Spanned<String>, key: &str) -> Option<Duration> {
    match humantime::parse_duration(value.trim()) {
        Ok(d) if !d.is_zero() => Some(d),
        Ok(_) => {
            report.span(value.span(), format!("`{key}` must be longer than zero"));
            None
        }
        Err(e) => {
            report.span(
                value.span(),
                format!(
                    "`{key}`: invalid duration `{}` ({e}); use e.g. 30s, 10m, 1h30m",
                    &**value
                ),
            );
            None
        }
    }
}

/// The kind-specific keys, for "does not apply" messages.
fn kind_keys(n: &RawNode) -> [(&'static str, Option<&Span>); 14] {
    [
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
        ("sop", n.sop.as_ref().map(Spanned::span)),
        ("params", n.params.as_ref().map(Spanned::span)),
        ("import", n.import.as_ref().map(Spanned::span)),
        ("role", n.role.as_ref().map(Spanned::span)),
        ("prompt", n.prompt.as_ref().map(Spanned::span)),
    ]
}

fn allowed_keys(kind: &str) -> &'static [&'static str] {
    match kind {
        "script" => &["run"],
        "gate" => &[
            "approvers",
            "min_approvals",
            "send_back",
            "allow_requester",
            "expires_in",
            "on_expire",
            "max_rework",
            "channels",
        ],
        "sop" => &["sop", "params", "import"],
        "agent" => &["role", "prompt"],
        "deliver" => &[],
        _ => &[],
    }
}

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
    // Send-back edges to check once the graph is known: (from, target, span, key).
    let mut back_edges: Vec<(usize, String, Span, &'static str)> = Vec::new();

    for (index, (id, n)) in raw.nodes.into_iter().enumerate() {
        positions.push(*id.span());
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
        needs_idx.push(needs);

        let kind_name = n.kind.as_str();
        if !["script", "gate", "sop", "agent", "deliver"].contains(&kind_name) {
            report.span(
                n.kind.span(),
                format!(
                    "unknown node kind `{kind_name}`; expected script, gate, sop, agent or deliver"
                ),
            );
        } else {
            for (key, span) in kind_keys(&n) {
                if let Some(span) = span
                    && !allowed_keys(kind_name).contains(&key)
                {
                    report.span(span, format!("`{key}` does not apply to {kind_name} nodes"));
                }
            }
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
        let required =
            |report: &mut Report<'_>, value: Option<&Spanned<String>>, key: &str| match value {
                Some(v) if !v.trim().is_empty() => Some(v.to_string()),
                Some(v) => {
                    report.span(v.span(), format!("`{key}` must not be empty"));
                    None
                }
                None => {
                    report.span(
                        id.span(),
                        format!("{kind_name} node `{}` needs `{key}`", &*id),
                    );
                    None
                }
            };
        let kind = match kind_name {
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
                            &*id
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
                })
            }
            _ => None,
        };

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
        for artifact in &n.artifacts {
            if let Err(e) = check_artifact_name(artifact) {
                report.span(artifact.span(), e);
            }
        }
        let timeout = n
            .timeout
            .as_ref()
            .and_then(|t| duration(report, t, "timeout"));
        if let Some(kind) = kind {
            nodes.push(Node {
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
                sandbox: n.sandbox.as_ref().map(|s| s.to_string()),
                kind,
            });
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
        nodes,
        version,
        source: report.file.to_owned(),
        text: text.to_owned(),
        unavailable: None,
    })
}
