//! The client verbs `run ...` and `gate ...`.

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use gatehouse_ingest::views::*;
use serde_json::json;

use crate::cli::args::{GateCommand, RunCommand};
use crate::cli::client::{Client, path_segment};
use crate::cli::network;

/// `gatehouse run ...`
pub async fn run(client: &Client, command: RunCommand, as_json: bool) -> anyhow::Result<()> {
    match command {
        RunCommand::Start {
            sop,
            params,
            project,
            repositories,
            issue,
        } => {
            let params: BTreeMap<String, String> = params.into_iter().collect();
            let accepted: Accepted = client
                .post(
                    "/runs",
                    &StartRun {
                        sop: sop.clone(),
                        params,
                        project,
                        repositories,
                        issue,
                    },
                )
                .await?;
            print(as_json, &accepted, || {
                format!("started run {} ({sop})", accepted.run_id)
            })
        }
        RunCommand::List { status } => {
            let path = match status {
                Some(s) => format!("/runs?status={s}"),
                None => "/runs".to_owned(),
            };
            let runs: Vec<RunSummary> = client.get(&path).await?;
            print(as_json, &runs, || {
                let mut out = format!("{:<36}  {:<16}  {:<20}  CREATED\n", "ID", "STATUS", "SOP");
                for r in &runs {
                    out.push_str(&format!(
                        "{:<36}  {:<16}  {:<20}  {}\n",
                        r.id,
                        r.status,
                        r.sop,
                        r.created_at.format("%Y-%m-%d %H:%M:%S")
                    ));
                }
                out.trim_end().to_owned()
            })
        }
        RunCommand::Show { id, graph: _, svg } => {
            let segment = path_segment(&id);
            if let Some(file) = svg {
                let picture = client
                    .get_bytes(&format!("/runs/{segment}/graph.svg"))
                    .await?;
                if file.as_os_str() == "-" {
                    use std::io::Write;
                    return Ok(std::io::stdout().write_all(&picture)?);
                }
                std::fs::write(&file, &picture)
                    .with_context(|| format!("cannot write {}", file.display()))?;
                eprintln!("wrote the graph of run {id} to {}", file.display());
            }
            let run: RunDetail = client.get(&format!("/runs/{segment}")).await?;
            print(as_json, &run, || tree(&run))
        }
        RunCommand::Watch { id } => crate::cli::watch::watch(client, &id).await,
        RunCommand::Logs {
            id,
            node,
            tail,
            follow,
        } => {
            let request = crate::cli::logs::LogsRequest {
                id: &id,
                node: node.as_deref(),
                tail,
                follow,
                as_json,
            };
            crate::cli::logs::logs(client, request).await
        }
        RunCommand::Artifact {
            run,
            node,
            name,
            attempt,
            output,
        } => artifact(client, &run, &node, &name, attempt, output.as_deref()).await,
        RunCommand::Cancel { id } => {
            command_verb(
                client,
                &id,
                "cancel",
                json!({}),
                "cancel requested",
                as_json,
            )
            .await
        }
        RunCommand::Pause { id } => {
            command_verb(client, &id, "pause", json!({}), "pause requested", as_json).await
        }
        RunCommand::Resume { id } => {
            command_verb(
                client,
                &id,
                "resume",
                json!({}),
                "resume requested",
                as_json,
            )
            .await
        }
        RunCommand::Retry { id, node } => {
            command_verb(
                client,
                &id,
                "retry",
                json!({ "node": node }),
                &format!("retry from `{node}` requested"),
                as_json,
            )
            .await
        }
    }
}

async fn command_verb(
    client: &Client,
    id: &str,
    verb: &str,
    body: serde_json::Value,
    done: &str,
    as_json: bool,
) -> anyhow::Result<()> {
    let accepted: Accepted = client.post(&format!("/runs/{id}/{verb}"), &body).await?;
    print(as_json, &accepted, || format!("{done} for run {id}"))
}

/// `gatehouse gate ...`
pub async fn gate(client: &Client, command: GateCommand, as_json: bool) -> anyhow::Result<()> {
    let (gate, body, verb) = match command {
        GateCommand::List => {
            let gates: Vec<GateView> = client.get("/gates").await?;
            return print(as_json, &gates, || {
                let mut out = format!(
                    "{:<50}  {:>7}  {:<20}  SEND BACK TO\n",
                    "GATE", "ATTEMPT", "APPROVERS"
                );
                for g in &gates {
                    out.push_str(&format!(
                        "{:<50}  {:>7}  {:<20}  {}\n",
                        g.id,
                        g.attempt,
                        g.approvers.join(","),
                        g.send_back.join(",")
                    ));
                    if let Some(refusal) = &g.raise {
                        out.push_str(&format!("  asks to raise: {refusal}\n"));
                    }
                }
                out.trim_end().to_owned()
            });
        }
        GateCommand::Approve { gate, comment } => (
            gate,
            Decide {
                decision: DecisionKind::Approve,
                to: None,
                comment,
                attempt: None,
            },
            "approved",
        ),
        GateCommand::Reject { gate, comment } => (
            gate,
            Decide {
                decision: DecisionKind::Reject,
                to: None,
                comment,
                attempt: None,
            },
            "rejected",
        ),
        GateCommand::SendBack { gate, to, comment } => (
            gate,
            Decide {
                decision: DecisionKind::SendBack,
                to: Some(to),
                comment,
                attempt: None,
            },
            "sent back",
        ),
    };
    let Some((run, node)) = gate.split_once('/') else {
        bail!("a gate is RUN/NODE, e.g. 0193a4b2-.../confirm; `gatehouse gate list` shows them");
    };
    let accepted: Accepted = client
        .post(&format!("/runs/{run}/gates/{node}/decision"), &body)
        .await?;
    print(as_json, &accepted, || {
        format!("{verb}: gate `{node}` of run {run}")
    })
}

pub(crate) fn print(
    as_json: bool,
    value: &impl serde::Serialize,
    text: impl FnOnce() -> String,
) -> anyhow::Result<()> {
    if as_json {
        println!("{}", serde_json::to_string_pretty(value)?);
    } else {
        println!("{}", text());
    }
    Ok(())
}

/// Most tool calls shown per attempt; `--json` has them all.
const TOOLS_SHOWN: usize = 20;

/// The tools each agent attempt called: tool, summary, duration, failures marked.
fn tool_calls(run: &RunDetail) -> String {
    let mut out = String::new();
    for a in run.attempts.iter().filter(|a| !a.tools.is_empty()) {
        if out.is_empty() {
            out.push_str("agent tools:\n");
        }
        out.push_str(&format!("  {}#{}\n", a.node, a.attempt));
        for call in a.tools.iter().take(TOOLS_SHOWN) {
            let took = call.duration_ms.map_or("no result".to_owned(), |ms| {
                format!("{:.1}s", ms as f64 / 1000.0)
            });
            let failed = if call.failed { "  failed" } else { "" };
            out.push_str(&format!(
                "    {:<8} {}  ({took}){failed}\n",
                call.tool,
                one_line(&call.summary)
            ));
        }
        if a.tools.len() > TOOLS_SHOWN {
            out.push_str(&format!(
                "    … {} more (--json lists them all)\n",
                a.tools.len() - TOOLS_SHOWN
            ));
        }
    }
    out
}

/// Text someone else wrote (a title, an agent's tool summary) on one line: runs of
/// whitespace and terminal control characters become one space.
pub(crate) fn one_line(text: &str) -> String {
    let shown: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    shown.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A run as a readable tree: the nodes with status, attempt, rework count and duration.
fn tree(run: &RunDetail) -> String {
    let mut out = format!(
        "run {} · {} · {}{}\n",
        run.run.id,
        run.run.sop,
        run.run.status,
        run.run
            .requested_by
            .as_deref()
            .map(|p| format!(" · requested by {p}"))
            .unwrap_or_default()
    );
    if let Some(project) = &run.run.project {
        let repos: Vec<String> = run
            .repositories
            .iter()
            .map(|r| match r.mode.as_str() {
                "auto" => r.repo.clone(),
                mode => format!("{} ({mode})", r.repo),
            })
            .collect();
        out.push_str(&format!("project {project}: {}\n", repos.join(", ")));
    }
    for skill in &run.skills {
        out.push_str(&format!(
            "skill {}: {} ({})\n",
            skill.name,
            skill.source,
            skill.digest.get(..12).unwrap_or(&skill.digest)
        ));
    }
    let width = run.nodes.iter().map(|n| n.node.len()).max().unwrap_or(4);
    for (i, n) in run.nodes.iter().enumerate() {
        let branch = if i + 1 == run.nodes.len() {
            "└─"
        } else {
            "├─"
        };
        let mut line = format!(
            "{branch} {:<width$}  {:<16}  attempt {}",
            n.node, n.status, n.attempt
        );
        if n.rework_count > 0 {
            line.push_str(&format!("  rework {}", n.rework_count));
        }
        if let Some(ms) = n.duration_ms {
            line.push_str(&format!("  {:.1}s", ms as f64 / 1000.0));
        }
        if let Some(err) = &n.last_error {
            line.push_str(&format!("  ({err})"));
        }
        out.push_str(&line);
        out.push('\n');
    }
    if !run.artifacts.is_empty() {
        out.push_str("artifacts:\n");
        for a in &run.artifacts {
            out.push_str(&format!(
                "  {}#{} {}  {} B  sha256:{}\n",
                a.node,
                a.attempt,
                a.name,
                a.size,
                &a.sha256[..12.min(a.sha256.len())]
            ));
        }
    }
    out.push_str(&tool_calls(run));
    out.push_str(&network::run_section(run));
    out.push_str(&crate::cli::budgets::run_section(run));
    if !run.usage.attempts.is_empty() {
        out.push_str("agent usage:\n");
        for u in &run.usage.attempts {
            out.push_str(&format!(
                "  {}#{} {}  in {}  out {}  cache read {}  cache write {}  {}\n",
                u.node,
                u.attempt,
                u.model,
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_write_tokens,
                u.cost_usd.map_or("no price".to_owned(), dollars)
            ));
        }
        out.push_str(&format!("  run total: {}\n", total(&run.usage.run)));
        if let Some(requirement) = &run.usage.requirement {
            out.push_str(&format!("  requirement total: {}\n", total(requirement)));
        }
    }
    if !run.pushed_branches.is_empty() {
        out.push_str("delivered:\n");
        for b in &run.pushed_branches {
            out.push_str(&format!("  {}: {}\n", b.repo, b.describe()));
        }
    }
    if let Some(failure) = &run.failure {
        out.push_str(&format!("failure: {failure}\n"));
    }
    out.trim_end().to_owned()
}

/// A sum of usage on one line.
pub(crate) fn total(t: &UsageTotal) -> String {
    let mut line = format!(
        "in {}  out {}  cache read {}  cache write {}  {}",
        t.input_tokens,
        t.output_tokens,
        t.cache_read_tokens,
        t.cache_write_tokens,
        dollars(t.cost_usd)
    );
    if !t.unpriced_models.is_empty() {
        line.push_str(&format!(" (no price for {})", t.unpriced_models.join(", ")));
    }
    line
}

fn dollars(usd: f64) -> String {
    format!("${usd:.4}")
}

/// `gatehouse run artifact`: the bytes as the API serves them, to stdout or a file. The
/// attempt defaults to the latest one of the node that recorded the name.
async fn artifact(
    client: &Client,
    run: &str,
    node: &str,
    name: &str,
    attempt: Option<u32>,
    output: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let attempt = match attempt {
        Some(attempt) => attempt,
        None => {
            let shown: RunDetail = client.get(&format!("/runs/{run}")).await?;
            let recorded: Vec<_> = shown.artifacts.iter().filter(|a| a.node == node).collect();
            match recorded
                .iter()
                .filter(|a| a.name == name)
                .map(|a| a.attempt)
                .max()
            {
                Some(attempt) => u32::try_from(attempt).unwrap_or_default(),
                None if recorded.is_empty() => {
                    bail!("node `{node}` of run {run} has recorded no artifacts")
                }
                None => {
                    let mut names: Vec<&str> = recorded.iter().map(|a| a.name.as_str()).collect();
                    names.dedup();
                    bail!(
                        "node `{node}` of run {run} recorded no `{name}`; it has: {}",
                        names.join(", ")
                    )
                }
            }
        }
    };
    let path = format!(
        "/runs/{run}/artifacts/{}/{attempt}/{}",
        crate::cli::client::path_segment(node),
        name.split('/')
            .map(crate::cli::client::path_segment)
            .collect::<Vec<_>>()
            .join("/")
    );
    let bytes = client.get_bytes(&path).await?;
    match output {
        Some(file) => {
            std::fs::write(file, &bytes)
                .map_err(|e| anyhow::anyhow!("writing {}: {e}", file.display()))?;
            eprintln!("wrote {} ({} B)", file.display(), bytes.len());
        }
        None => {
            use std::io::Write;
            std::io::stdout().write_all(&bytes)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_show_lists_the_pinned_skills_with_their_source_and_short_hash() {
        let now = chrono::Utc::now();
        let run: RunDetail = serde_json::from_value(json!({
            "id": uuid::Uuid::nil(), "sop": "fix", "sop_version": "sha256:1", "status": "running",
            "requested_by": null, "project": null, "parent_run": null,
            "created_at": now, "updated_at": now, "params": {}, "failure": null,
            "nodes": [], "artifacts": [], "decisions": [], "schedule": null,
            "requirement_id": null, "repositories": [], "attempts": [],
            "usage": { "run": { "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
                "cache_write_tokens": 0, "cost_usd": 0.0, "unpriced_models": [] },
                "requirement": null, "attempts": [] },
            "skills": [{ "name": "house-style",
                "source": "repository acme/api (.gatehouse/skills)",
                "digest": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "description": "House style." }],
        }))
        .expect("a run");
        let shown = tree(&run);
        assert!(
            shown.contains(
                "skill house-style: repository acme/api (.gatehouse/skills) (0123456789ab)"
            ),
            "{shown}"
        );
    }
}
