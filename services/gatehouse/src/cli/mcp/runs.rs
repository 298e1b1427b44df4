//! The run tools: `list_runs`, `show_run`, `run_logs`, `start_run` and `send_command`.

use std::collections::BTreeMap;

use gatehouse_ingest::views::{Accepted, LogView, RunDetail, RunSummary, StartRun};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::answer::{Answer, Failure, Outcome};
use super::checks;
use crate::cli::client::{Client, path_segment};

/// Most log lines `run_logs` returns.
const LOG_LINES_MAX: u32 = 2_000;
/// Most bytes of log text `run_logs` returns; the oldest lines are cut past it.
const LOG_BYTES_MAX: usize = 64 * 1024;
/// Most parameters `start_run` sends.
const PARAMS_MAX: usize = 64;

/// What `list_runs` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListRuns {
    /// Only runs with this status.
    status: Option<RunStatus>,
    /// Only runs of this project.
    project: Option<String>,
    /// Only runs of this SOP.
    sop: Option<String>,
    /// At most this many, newest first (1 to 100, default 20).
    limit: Option<u32>,
}

/// A run's status.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum RunStatus {
    Requested,
    Queued,
    Running,
    Waiting,
    Paused,
    Succeeded,
    Failed,
    Cancelled,
}

impl RunStatus {
    fn as_str(self) -> &'static str {
        match self {
            RunStatus::Requested => "requested",
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::Waiting => "waiting",
            RunStatus::Paused => "paused",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }
}

/// `list_runs`: the runs the person may read, newest first.
pub(crate) async fn list(client: &Client, args: ListRuns) -> Outcome {
    let limit = checks::bounded(args.limit, 20, 1, 100, "limit")?;
    let mut query = vec![format!("limit={limit}")];
    if let Some(status) = args.status {
        query.push(format!("status={}", status.as_str()));
    }
    if let Some(project) = &args.project {
        query.push(format!(
            "project={}",
            path_segment(checks::name(project, "project")?)
        ));
    }
    if let Some(sop) = &args.sop {
        query.push(format!("sop={}", path_segment(checks::name(sop, "SOP")?)));
    }
    let runs: Vec<RunSummary> = client.get(&format!("/runs?{}", query.join("&"))).await?;
    let mut summary = format!("{} run(s)", runs.len());
    for run in &runs {
        summary.push_str(&format!(
            "\n{}  {:<10} {}{}",
            run.id,
            run.status,
            run.sop,
            run.project
                .as_deref()
                .map(|p| format!(" on {p}"))
                .unwrap_or_default()
        ));
    }
    Ok(Answer::with_json(summary, &runs))
}

/// What `show_run` and `list_artifacts` take: a run.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct OneRun {
    /// The run's id (a UUID, as list_runs shows it).
    run: String,
}

impl OneRun {
    /// The run's id, checked.
    pub(crate) fn id(&self) -> Result<uuid::Uuid, Failure> {
        checks::id(&self.run, "run", "list_runs")
    }
}

/// `show_run`: a run with its nodes, attempts, artifacts and decisions.
pub(crate) async fn show(client: &Client, args: OneRun) -> Outcome {
    let id = args.id()?;
    let run: RunDetail = client.get(&format!("/runs/{id}")).await?;
    let mut summary = format!(
        "run {} of {} is {}{}",
        run.run.id,
        run.run.sop,
        run.run.status,
        run.failure
            .as_deref()
            .map(|f| format!(": {}", checks::shown(f)))
            .unwrap_or_default()
    );
    for node in &run.nodes {
        summary.push_str(&format!(
            "\n  {:<20} {:<16} attempt {}",
            node.node, node.status, node.attempt
        ));
    }
    Ok(Answer::with_json(summary, &run))
}

/// What `run_logs` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunLogs {
    /// The run's id (a UUID).
    run: String,
    /// Only this node's output.
    node: Option<String>,
    /// The last this many lines (1 to 2000, default 200). Longer output is cut to its
    /// last 64 KiB, with a note.
    tail: Option<u32>,
}

/// `run_logs`: the end of a run's output, bounded in lines and bytes.
pub(crate) async fn logs(client: &Client, args: RunLogs) -> Outcome {
    let id = checks::id(&args.run, "run", "list_runs")?;
    let tail = checks::bounded(args.tail, 200, 1, LOG_LINES_MAX, "tail")?;
    let mut path = format!("/runs/{id}/logs?tail={tail}");
    if let Some(node) = &args.node {
        path.push_str(&format!("&node={}", checks::node(node)?));
    }
    let lines: Vec<LogView> = client.get(&path).await?;
    let mut kept: Vec<String> = Vec::new();
    let mut bytes = 0;
    for line in lines.iter().rev() {
        let text = format!(
            "[{} #{} {}] {}",
            line.node, line.attempt, line.stream, line.line
        );
        if bytes + text.len() + 1 > LOG_BYTES_MAX {
            break;
        }
        bytes += text.len() + 1;
        kept.push(text);
    }
    kept.reverse();
    let mut out = kept.join("\n");
    if kept.len() < lines.len() {
        out = format!(
            "(cut: the last {} of these {} lines fit in {} KiB; ask for a smaller tail or one node)\n{out}",
            kept.len(),
            lines.len(),
            LOG_BYTES_MAX / 1024
        );
    }
    if lines.is_empty() {
        out = "(no output yet)".to_owned();
    }
    Ok(Answer::text(out))
}

/// What `start_run` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StartRunArgs {
    /// The SOP to run, by name.
    sop: String,
    /// The SOP's parameters, name to value.
    #[serde(default)]
    params: BTreeMap<String, String>,
    /// The project it works on (found from the SOP's defaults when not given).
    project: Option<String>,
}

/// `start_run`: starts a run of an SOP, as `gatehouse run start` does.
pub(crate) async fn start(client: &Client, args: StartRunArgs) -> Outcome {
    let sop = checks::name(&args.sop, "SOP")?.to_owned();
    if args.params.len() > PARAMS_MAX {
        return Err(Failure::Arguments(format!(
            "{} parameters given; at most {PARAMS_MAX} are accepted",
            args.params.len()
        )));
    }
    for (key, value) in &args.params {
        checks::name(key, "parameter")?;
        checks::text(
            value,
            &format!("value of parameter `{}`", checks::shown(key)),
        )?;
    }
    let project = args
        .project
        .as_deref()
        .map(|p| checks::name(p, "project").map(str::to_owned))
        .transpose()?;
    let body = StartRun {
        sop: sop.clone(),
        params: args.params,
        project,
        repositories: Vec::new(),
        issue: None,
    };
    let accepted: Accepted = client.post("/runs", &body).await?;
    Ok(Answer::with_json(
        format!("started run {} of {sop}", accepted.run_id),
        &accepted,
    ))
}

/// What `send_command` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SendCommand {
    /// The run's id (a UUID).
    run: String,
    /// What to do: cancel it, pause it (nothing new starts), resume it, or retry a node
    /// (with everything after it).
    command: RunCommand,
    /// For `retry`: the node to run again.
    node: Option<String>,
}

/// A command to a run, as the API's run routes take them.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum RunCommand {
    Cancel,
    Pause,
    Resume,
    Retry,
}

/// `send_command`: the run commands of the API (`POST /runs/{id}/cancel|pause|resume|retry`).
pub(crate) async fn command(client: &Client, args: SendCommand) -> Outcome {
    let id = checks::id(&args.run, "run", "list_runs")?;
    let (verb, body, done) = match (args.command, args.node.as_deref()) {
        (RunCommand::Retry, Some(node)) => {
            let node = checks::node(node)?;
            (
                "retry",
                json!({ "node": node }),
                format!("retry from `{node}` requested"),
            )
        }
        (RunCommand::Retry, None) => {
            return Err(Failure::Arguments(
                "retry needs `node`: the node to run again (show_run lists them)".into(),
            ));
        }
        (_, Some(_)) => {
            return Err(Failure::Arguments(
                "`node` goes only with `retry`; cancel, pause and resume act on the whole run"
                    .into(),
            ));
        }
        (RunCommand::Cancel, None) => ("cancel", json!({}), "cancel requested".to_owned()),
        (RunCommand::Pause, None) => ("pause", json!({}), "pause requested".to_owned()),
        (RunCommand::Resume, None) => ("resume", json!({}), "resume requested".to_owned()),
    };
    let accepted: Accepted = client.post(&format!("/runs/{id}/{verb}"), &body).await?;
    Ok(Answer::with_json(format!("{done} for run {id}"), &accepted))
}
