//! One attempt of a node, in named steps: its workspace (the run's repositories checked
//! out into it, see [`super::workspace`]), [`prepare`](Attempt::prepare) (settings, inputs,
//! checkpoint, environment and secrets: [`super::prepare`]), [`run`](Attempt::run) (the
//! sandbox, its output stored as it comes; then the repositories' trees recorded),
//! [`collect`](Attempt::collect) (artifacts and an agent's usage) and
//! [`verdict`](Attempt::verdict) (the outcome, recorded, as the `node.finished` to
//! report). A step that fails the attempt says why, and the attempt ends
//! there as failed; nothing after it runs.

use std::sync::Arc;
use std::time::Instant;

use gatehouse_agent::{Role, Trace, TraceParser};
use gatehouse_bus::HandlerError;
use gatehouse_events::{
    AgentSpec, Artifact, Envelope, NodeDispatch, NodeSpec, SandboxWork, ScriptSpec,
};
use gatehouse_sandbox::{Exit, ExitStatus, Job, LogLine};
use gatehouse_store::{ArtifactRow, ConnectionOwner, ToolCallRow};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::Nodes;
use super::report::Ended;
use crate::agent;
use crate::artifacts;
use crate::deliver::mirrors::Lease;
use crate::durably::durably;
use crate::files::RunDirs;
use crate::logs::{LogTarget, Seen, Tracing, store_output};
use crate::network::Reach;
use crate::observe::SandboxStart;
use crate::outcome::{Verdict, judge};
use crate::patience::patiently;
use crate::secrets::Secrets;

/// What a step of an attempt gives: `Ok(Err(reason))` fails the attempt for `reason`;
/// `Err` is a failure to read or record, and the job comes back.
pub(super) type Step<T> = Result<Result<T, String>, HandlerError>;

/// What runs in the sandbox: a script node's script, or an agent node's role CLI on the
/// node's prompt.
#[derive(Clone, Copy)]
pub(super) enum Program<'a> {
    Script(&'a ScriptSpec),
    Agent(&'a AgentSpec),
}

impl<'a> Program<'a> {
    pub(super) fn work(self) -> &'a SandboxWork {
        match self {
            Self::Script(script) => &script.work,
            Self::Agent(agent) => &agent.work,
        }
    }
}

/// An attempt ready to run, and what the later steps need of its preparation.
pub(super) struct Prepared<'a> {
    /// What the node works with (the artifacts it declared among it).
    pub(super) work: &'a SandboxWork,
    /// The run's frozen agent role, for an agent node.
    pub(super) role: Option<Role>,
    /// The job the sandbox runs: script, environment, directories, profile.
    pub(super) sandbox: Job,
    /// The attempt's artifact directory, relative to the data directory (as stored).
    pub(super) artifacts_location: String,
    /// The declared secrets' values: masked in output, refused in artifacts.
    pub(super) secrets: Secrets,
    /// The node's starting checkpoint, being recorded while it runs.
    pub(super) start_recorded: StartRecorded,
    /// Its tokens for the model gateway and egress proxy; revoked when it is dropped.
    pub(super) reach: Option<Reach>,
}

/// A node's starting checkpoint being recorded while the node runs (a first start, not a
/// rework); `Err`: why it could not be, which fails the attempt.
pub(super) type StartRecorded = Option<tokio::task::JoinHandle<Result<(), String>>>;

/// One attempt of a node, on its way through the steps.
pub(super) struct Attempt<'a> {
    pub(super) nodes: &'a Nodes,
    pub(super) job: &'a NodeDispatch,
    /// The run's directories: the workspace, this attempt's inputs and artifacts.
    pub(super) dirs: RunDirs,
    /// When the attempt's own work began: how long a failed attempt took counts from here.
    started: Instant,
    /// The run had no checkpoint when the attempt began ([`super::follow::Hold`]).
    pub(super) fresh: bool,
    /// The mirrors the workspace's repositories share objects with, held until the attempt
    /// ends (a container mounts their object stores read-only).
    pub(super) mirrors: Vec<Lease>,
}

/// What the node left: the artifacts stored, and the problems that fail an attempt even
/// when its process exited 0.
struct Outputs {
    stored: Vec<Artifact>,
    problems: Vec<String>,
    /// Hosts the egress proxy refused, each said once; they join a failure's reason.
    notices: Vec<String>,
}

impl Nodes {
    /// Prepares the directories, runs the script, and collects output and artifacts.
    pub(super) async fn attempt(
        &self,
        job: &NodeDispatch,
        started: &Envelope,
        cancel: CancellationToken,
        begun: Instant,
    ) -> Result<Ended, HandlerError> {
        let mut attempt = Attempt {
            nodes: self,
            job,
            dirs: RunDirs::new(&self.runner.options.data_dir, job.run_id),
            started: Instant::now(),
            fresh: false,
            mirrors: Vec::new(),
        };
        // The run's scope is read while this runner's copy of the workspace is made the
        // run's latest: neither waits for the other.
        let (scope, hold) = tokio::join!(self.scope(job.run_id), self.follow(job, &attempt.dirs));
        let scope = match scope? {
            Ok(scope) => scope,
            Err(reason) => return attempt.failed(reason).await,
        };
        // Held until the attempt ends.
        let hold = match hold {
            Ok(hold) => hold,
            Err(reason) => return attempt.failed(reason).await,
        };
        attempt.fresh = hold.fresh;
        match self.prepare_workspace(job, &scope, &attempt.dirs).await {
            Ok(leases) => attempt.mirrors = leases,
            Err(reason) => return attempt.failed(reason).await,
        }
        let program = match &job.spec {
            NodeSpec::Script(script) => Program::Script(script),
            NodeSpec::Agent(agent) => Program::Agent(agent),
            NodeSpec::Deliver(spec) => {
                self.report_started(started).await?;
                let delivered = self
                    .deliver(job, spec, &scope, &attempt.dirs, attempt.started)
                    .await?;
                if let Err(reason) = self.checkpoint_after(job, &attempt.dirs).await {
                    return attempt.failed(reason).await;
                }
                return Ok(delivered);
            }
        };
        let mut prepared = match attempt.prepare(program, &scope, started).await? {
            Ok(prepared) => prepared,
            Err(reason) => return attempt.failed(reason).await,
        };
        let (exit, mut seen) = attempt.run(&prepared, started, cancel, begun).await?;
        // The sandbox is gone: its tokens stop working, and what it reached is recorded.
        let notices = attempt.record_network(&prepared).await?;
        // The CLI's own state holds its tool output unmasked; nothing reads it later.
        if let Some(home) = &prepared.sandbox.home
            && let Err(e) = tokio::fs::remove_dir_all(home).await
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %home.display(), error = %e, "removing an agent's home failed");
        }
        // A send-back to this node finds where it started.
        if let Some(recording) = prepared.start_recorded.take() {
            let recorded = recording
                .await
                .unwrap_or_else(|e| Err(format!("recording the node's starting checkpoint: {e}")));
            if let Err(reason) = recorded {
                return attempt.failed(reason).await;
            }
        }
        // Whatever the process did to the repositories, ended well or not, is what a gate
        // after it sees and approves.
        self.record_trees(job, &scope, &attempt.dirs).await?;
        // Before the attempt reports: whichever runner takes the next node finds it.
        if let Err(reason) = self.checkpoint_after(job, &attempt.dirs).await {
            return attempt.failed(reason).await;
        }
        if let Some(trace) = &mut seen.trace {
            if let Some(reach) = &prepared.reach {
                crate::mcp::add_decisions(trace, reach.take_decisions());
            }
            attempt.record_tool_calls(trace).await?;
        }
        let exit = match exit {
            Ok(exit) => exit,
            Err(reason) => return attempt.failed(reason).await,
        };
        let mut outputs = attempt.collect(&prepared, &exit, &seen).await?;
        outputs.notices = notices;
        attempt.verdict(&prepared, &exit, outputs).await
    }
}

impl Attempt<'_> {
    /// The attempt's number as the store keeps it.
    fn number(&self) -> i32 {
        i32::try_from(self.job.attempt).unwrap_or(i32::MAX)
    }

    /// Ends the attempt as failed for `reason`, before or instead of its verdict.
    async fn failed(&self, reason: String) -> Result<Ended, HandlerError> {
        Ok(self.nodes.failed(self.job, reason, self.started))
    }

    /// Runs the prepared job in the sandbox until it ends or `cancel` stops it, storing its
    /// output as it comes (secrets masked, up to the log limit), and reports its start as
    /// it starts; an agent's output is also read into its trace. `Ok(Err)`: the sandbox
    /// could not run it, which fails the attempt; `Err`: the start could not be reported.
    async fn run(
        &self,
        prepared: &Prepared<'_>,
        started: &Envelope,
        cancel: CancellationToken,
        begun: Instant,
    ) -> Result<(Result<Exit, String>, Seen), HandlerError> {
        let (nodes, runner) = (self.nodes, &self.nodes.runner);
        let trace = prepared.role.as_ref().map(|role| Tracing {
            parser: TraceParser::new(role.executor, role.model.as_deref()),
            begun,
            retried: Some(nodes.progress_reporter(self.job, started)),
        });
        let (logs, lines) = mpsc::channel::<LogLine>(256);
        let start = Arc::new(SandboxStart::new(begun, self.job.spec.kind()));
        let writer = tokio::spawn(
            store_output(
                runner.store.clone(),
                LogTarget {
                    run_id: self.job.run_id,
                    node: self.job.node.clone(),
                    attempt: self.number(),
                },
                lines,
                prepared.secrets.clone(),
                runner.options.log_limit,
                {
                    let start = start.clone();
                    move || start.running()
                },
                trace,
            )
            .in_current_span(),
        );
        // Cancelled before it began: the sandbox stops it at once, nothing of it runs on.
        let (exit, reported) = tokio::join!(
            runner.sandbox.run(&prepared.sandbox, logs, cancel),
            nodes.report_started(started)
        );
        // After the writer has taken every line: a first line, if any, was timed already.
        let seen = writer.await.unwrap_or_default();
        start.running();
        reported?;
        Ok((exit.map_err(|err| format!("sandbox: {err}")), seen))
    }

    /// Ends the attempt's access to the gateway and egress proxy and records the
    /// connections it made; returns the hosts refused, one line each, also noted in its
    /// output.
    async fn record_network(&self, prepared: &Prepared<'_>) -> Result<Vec<String>, HandlerError> {
        let Some(reach) = &prepared.reach else {
            return Ok(Vec::new());
        };
        let (job, store) = (self.job, &self.nodes.runner.store);
        let connections = reach.finish();
        // The ledger holds the attempt's whole spend before it reports.
        reach.settle_budget().await;
        let owner = ConnectionOwner::Node {
            run_id: job.run_id,
            node: job.node.clone(),
        };
        let rows = connections.rows(&owner, job.attempt);
        if !rows.is_empty() {
            durably("recording connections", || store.record_connections(&rows)).await?;
        }
        let mut notices = connections.notices();
        if connections.dropped > 0 {
            notices.push(format!(
                "{} more connections were made than are kept",
                connections.dropped
            ));
        }
        for notice in &notices {
            let line = format!("[gatehouse] {notice}");
            if let Err(err) = store
                .append_log(
                    self.job.run_id,
                    &self.job.node,
                    self.number(),
                    "stderr",
                    &line,
                )
                .await
            {
                tracing::warn!(error = %err, "storing a log note failed");
            }
        }
        Ok(notices)
    }

    /// Records the tools the agent called, as its trace read them.
    async fn record_tool_calls(&self, trace: &Trace) -> Result<(), HandlerError> {
        let job = self.job;
        let rows: Vec<ToolCallRow> = trace
            .tools
            .iter()
            .enumerate()
            .map(|(seq, call)| ToolCallRow {
                node: job.node.clone(),
                attempt: self.number(),
                seq: i32::try_from(seq).unwrap_or(i32::MAX),
                tool: call.tool.clone(),
                summary: call.summary.clone(),
                started_ms: i64::try_from(call.started_ms).unwrap_or(i64::MAX),
                duration_ms: call
                    .duration_ms
                    .map(|d| i64::try_from(d).unwrap_or(i64::MAX)),
                failed: call.error,
            })
            .collect();
        if rows.is_empty() {
            return Ok(());
        }
        let store = &self.nodes.runner.store;
        durably("recording tool calls", || {
            store.record_tool_calls(job.run_id, &rows)
        })
        .await?;
        Ok(())
    }

    /// Stores the artifacts the node left and records an agent's usage. What fails the
    /// attempt comes back as problems, in this order: artifacts refused, artifacts holding
    /// a secret, artifacts missing, what the agent reported.
    async fn collect(
        &self,
        prepared: &Prepared<'_>,
        exit: &Exit,
        seen: &Seen,
    ) -> Result<Outputs, HandlerError> {
        let mut outputs = self.store_artifacts(prepared).await?;
        self.record_usage(prepared, exit, seen, &mut outputs.problems)
            .await?;
        Ok(outputs)
    }

    /// Reads the declared artifacts and records each one that may be kept.
    async fn store_artifacts(&self, prepared: &Prepared<'_>) -> Result<Outputs, HandlerError> {
        let (runner, job) = (&self.nodes.runner, self.job);
        let artifacts_location = &prepared.artifacts_location;
        let mut stored = Vec::new();
        let mut problems = Vec::new();
        let collected = {
            let (data_dir, location) =
                (runner.options.data_dir.clone(), artifacts_location.clone());
            let (names, limit) = (prepared.work.artifacts.clone(), runner.artifact_limit);
            tokio::task::spawn_blocking(move || {
                artifacts::collect(&data_dir, &location, &names, limit)
            })
            .await?
        };
        // A file the node must not have left (a link, a FIFO, an oversized file, a name
        // reaching out) fails the attempt, and nothing of it is stored.
        let read = if collected.refused.is_empty() {
            collected.read
        } else {
            problems.extend(collected.refused);
            Vec::new()
        };
        for (name, bytes) in read {
            let path = prepared.sandbox.artifacts.join(&name);
            if let Some(secret) = prepared.secrets.found_in(&bytes) {
                // Kept nowhere: the file goes, and the attempt fails saying why.
                let _ = tokio::fs::remove_file(&path).await;
                problems.push(format!(
                    "artifact {name} contained the value of the secret {secret}; it was deleted, not stored"
                ));
                continue;
            }
            // Into the blob store first: once the row names it, any ingest, notifier or
            // runner may read it. A store that stays unreachable hands the job back.
            let contents = bytes::Bytes::from(bytes);
            let blob = patiently("storing an artifact", || {
                runner.blobs.put_bytes(contents.clone())
            })
            .await?;
            let (sha256, size) = (blob.digest.as_str().to_owned(), blob.size);
            let row = ArtifactRow {
                location: format!("{artifacts_location}/{name}"),
                run_id: job.run_id,
                node: job.node.clone(),
                attempt: self.number(),
                name: name.clone(),
                sha256: sha256.clone(),
                size: i64::try_from(size).unwrap_or(i64::MAX),
            };
            durably("recording an artifact", || {
                runner.store.record_artifact(&row)
            })
            .await?;
            stored.push(Artifact {
                name: name.clone(),
                sha256,
                size,
            });
        }
        if !collected.missing.is_empty() {
            problems.push(format!(
                "declared artifacts were not written: {}",
                collected.missing.join(", ")
            ));
        }
        Ok(Outputs {
            stored,
            problems,
            notices: Vec::new(),
        })
    }

    /// Records what an agent node's agent reported using; an error it reported, or a
    /// report missing from a process that succeeded, is a problem. A CLI that failed
    /// without a result is explained by its last words on stderr, and one that retried its
    /// model requests says how often and why.
    async fn record_usage(
        &self,
        prepared: &Prepared<'_>,
        exit: &Exit,
        seen: &Seen,
        problems: &mut Vec<String>,
    ) -> Result<(), HandlerError> {
        let runner = &self.nodes.runner;
        let Some(role) = &prepared.role else {
            return Ok(());
        };
        // What the gateway metered, when the model was reached through it; else what the
        // CLI reported.
        let metered = prepared.reach.as_ref().and_then(Reach::usage);
        let report = agent::report(role, &exit.stdout_tail);
        let usage = match (&metered, &report) {
            (Some(metered), _) => metered.as_slice(),
            (None, Ok(report)) => report.usage.as_slice(),
            (None, Err(_)) => &[],
        };
        for row in agent::usage_rows(self.job, usage, &runner.options.prices) {
            durably("recording usage", || runner.store.record_usage(&row)).await?;
        }
        match report {
            Ok(report) => {
                if let Some(failed) = report.failed {
                    problems.push(format!("the agent reported an error: {failed}"));
                }
            }
            Err(reason) if exit.succeeded() => problems.push(reason),
            Err(_)
                if let Some(line) = agent::mcp_program_missing(
                    &exit.status,
                    seen.stderr.last().map(String::as_str),
                ) =>
            {
                problems.push(format!("the agent's CLI did not start: {line}"));
            }
            Err(_) => problems.push(match seen.last_words() {
                Some(words) => format!("the agent printed no result; {words}"),
                None => "the agent printed no result and nothing on stderr".to_owned(),
            }),
        }
        if !exit.succeeded()
            && let Some(retry) = seen.trace.as_ref().and_then(|t| t.retry.as_ref())
        {
            problems.push(format!("its CLI gave up {}", retry.summary()));
        }
        Ok(())
    }

    /// Judges the exit with the problems found: the attempt's end, to be recorded with the
    /// `node.finished` that reports it. An attempt stopped because the shutdown grace ran
    /// out is interrupted, not cancelled.
    async fn verdict(
        &self,
        prepared: &Prepared<'_>,
        exit: &Exit,
        outputs: Outputs,
    ) -> Result<Ended, HandlerError> {
        let (runner, job) = (&self.nodes.runner, self.job);
        let Outputs {
            stored,
            problems,
            notices,
        } = outputs;
        let refused = prepared.reach.as_ref().and_then(Reach::budget_refused);
        let verdict = if exit.status == ExitStatus::Cancelled && runner.halted.is_cancelled() {
            Verdict::interrupted(format!(
                "interrupted: the runner shut down and the attempt did not finish within its {:?} grace",
                runner.options.shutdown_grace
            ))
        } else if let Some(refusal) = refused {
            let exit_code = match exit.status {
                ExitStatus::Exited(code) => Some(code),
                _ => None,
            };
            Verdict::refused(refusal, exit_code)
        } else {
            judge(
                exit,
                &prepared.sandbox.profile,
                // What the agent reported may quote a secret.
                (!problems.is_empty()).then(|| prepared.secrets.mask(&problems.join("; "))),
            )
        };
        let verdict = verdict.noting(&notices);
        let duration_ms = u64::try_from(exit.duration.as_millis()).unwrap_or(u64::MAX);
        Ok(Ended::new(job, verdict, Some(duration_ms), stored))
    }
}
