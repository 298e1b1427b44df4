//! Taking jobs, running them, reporting results.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use gatehouse_agent::{PriceTable, Role};
use gatehouse_bus::{
    Bus, Consumer, ConsumerOptions, ConsumerSpec, Delivery, Handler, HandlerError, Outcome,
    count_handled, count_received, event_span,
};
use gatehouse_events::{
    Artifact, Envelope, Event, EventError, NodeDispatch, NodeFinished, NodeOutcome, NodeProgress,
    NodeStatus, RunUpdated, TraceParent,
};
use gatehouse_sandbox::{ExitStatus, Job, JobLabels, LogLine, Profile, Sandbox};
use gatehouse_store::{ArtifactRow, NewDeadLetter, Store, Tx};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use uuid::Uuid;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::agent;
use crate::artifacts::{self, ARTIFACT_LIMIT};
use crate::checkpoint;
use crate::deliver::{DeliverSpec, DeliveredTo, Deliverer, Target};
use crate::durably::durably;
use crate::files::{RunDirs, digest};
use crate::job::ScriptSpec;
use crate::logs::{LogTarget, Secrets, store_output};
use crate::observe::{self, InFlight, SandboxStart};
use crate::outcome::{Verdict, judge};

/// Where the runner's events say they come from.
const SOURCE: &str = "runner";
/// The durable consumer of the work queue, shared by every runner.
const JOBS: &str = "runner";
/// How long attempts stopped at the end of the shutdown grace have to report.
const REPORT_AFTER_HALT: Duration = Duration::from_secs(5);

/// Tuning for a [`Runner`].
#[derive(Debug, Clone)]
pub struct RunnerOptions {
    /// Jobs run at once.
    pub concurrency: usize,
    /// A job's lease; renewed every third of it while the job runs.
    pub ack_wait: Duration,
    /// Root of runs' workspaces, artifacts and inputs.
    pub data_dir: PathBuf,
    /// Cloning and delivering GitHub repositories; without it, runs on GitHub issues get
    /// an empty workspace and `deliver` nodes fail with a message saying so.
    pub delivery: Option<Arc<Deliverer>>,
    /// Sandbox profiles by name; a run freezes each one it uses.
    pub profiles: BTreeMap<String, Profile>,
    /// Agent roles by name; a run freezes each one it uses.
    pub roles: BTreeMap<String, Role>,
    /// Prices of models, for the cost of agent attempts.
    pub prices: PriceTable,
    /// Output bytes stored per attempt.
    pub log_limit: usize,
    /// How long jobs in flight may take to finish once the runner is told to stop; those
    /// still running then are stopped and reported as interrupted.
    pub shutdown_grace: Duration,
}

impl RunnerOptions {
    /// Defaults for a runner keeping runs' files under `data_dir`: 4 jobs at once, a
    /// 30-second lease, the `default` process profile, no roles, 1 MiB of output per
    /// attempt, 20 seconds for jobs in flight to finish at shutdown.
    pub fn new(data_dir: PathBuf) -> Self {
        Self {
            concurrency: 4,
            ack_wait: Duration::from_secs(30),
            data_dir,
            delivery: None,
            profiles: BTreeMap::from([("default".to_owned(), Profile::default())]),
            roles: BTreeMap::new(),
            prices: PriceTable::new(),
            log_limit: 1024 * 1024,
            shutdown_grace: Duration::from_secs(20),
        }
    }
}

/// Attempts running here, so a run snapshot can stop them.
type Running = Arc<Mutex<HashMap<(Uuid, String, u32), CancellationToken>>>;
/// The newest snapshot seen of each run, so a job that arrives after its run was
/// cancelled (or its node sent back) is not started at all.
type Snapshots = Arc<Mutex<HashMap<Uuid, RunUpdated>>>;
/// Snapshots kept before those of finished runs are dropped.
const SNAPSHOTS_KEPT: usize = 10_000;

/// A runner: cheap to clone.
#[derive(Clone)]
pub struct Runner {
    store: Store,
    sandbox: Arc<dyn Sandbox>,
    options: RunnerOptions,
    running: Running,
    snapshots: Snapshots,
    /// Cancelled when the shutdown grace has run out: attempts stopped then are reported
    /// as interrupted by the shutdown, not as cancelled by someone.
    halted: CancellationToken,
    /// The most bytes an artifact may have; see [`Runner::with_artifact_limit`].
    artifact_limit: u64,
}

impl Runner {
    /// A runner recording into `store` and running jobs in `sandbox`.
    pub fn new(store: Store, sandbox: Arc<dyn Sandbox>, options: RunnerOptions) -> Self {
        Self {
            store,
            sandbox,
            options,
            running: Arc::default(),
            snapshots: Arc::default(),
            halted: CancellationToken::new(),
            artifact_limit: ARTIFACT_LIMIT,
        }
    }

    /// Refuses artifacts over `bytes` (64 MiB unless set): the attempt that left one fails,
    /// and an input over it is not copied. Sizes are checked before a byte is read.
    pub fn with_artifact_limit(mut self, bytes: u64) -> Self {
        self.artifact_limit = bytes;
        self
    }

    /// Takes jobs and watches runs until `shutdown` is cancelled. Then it takes no more,
    /// hands back jobs pulled but not started, and gives those in flight
    /// [`RunnerOptions::shutdown_grace`] to finish; any still running after that are
    /// stopped and reported as interrupted, so the engine retries them at once rather
    /// than after their lease runs out.
    pub async fn run(self, bus: Arc<dyn Bus>, shutdown: CancellationToken) {
        // Runs keep being watched during the grace period, so a cancelled run still stops.
        let stop_watching = CancellationToken::new();
        let watch = {
            let consumer = Consumer::new(
                bus.clone(),
                self.store.clone(),
                ConsumerOptions::new(ConsumerSpec::new("runner-watch", "run.updated")),
            );
            let (watcher, stop) = (self.clone(), stop_watching.clone());
            tokio::spawn(async move { consumer.run(&watcher, stop).await })
        };
        // Jobs are tasks of this future: if it is dropped (the process dies), they go too.
        let mut in_flight = JoinSet::new();
        let slots = Arc::new(Semaphore::new(self.options.concurrency.max(1)));
        let spec = ConsumerSpec {
            ack_wait: self.options.ack_wait,
            ..ConsumerSpec::new(JOBS, "node.dispatch")
        };
        while !shutdown.is_cancelled() {
            let mut jobs = tokio::select! {
                () = shutdown.cancelled() => break,
                s = bus.subscribe(&spec) => match s {
                    Ok(s) => s,
                    Err(err) => {
                        tracing::warn!(error = %err, "subscribing to jobs failed; retrying");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                },
            };
            loop {
                while in_flight.try_join_next().is_some() {}
                let slot = tokio::select! {
                    () = shutdown.cancelled() => break,
                    slot = slots.clone().acquire_owned() => slot,
                };
                let Ok(slot) = slot else { break };
                let delivery = tokio::select! {
                    () = shutdown.cancelled() => break,
                    d = jobs.next() => d,
                };
                match delivery {
                    Ok(delivery) => {
                        let runner = self.clone();
                        in_flight.spawn(async move {
                            runner.take(delivery).await;
                            drop(slot);
                        });
                    }
                    Err(err) => {
                        tracing::warn!(error = %err, "receiving jobs failed; subscribing again");
                        break;
                    }
                }
            }
            if shutdown.is_cancelled() {
                jobs.hand_back().await;
            }
        }
        self.finish_in_flight(&mut in_flight).await;
        stop_watching.cancel();
        let _ = watch.await;
    }

    /// Waits out the shutdown grace for jobs in flight, then stops the rest and waits for
    /// them to report. A job that cannot even report is left to its lease.
    async fn finish_in_flight(&self, in_flight: &mut JoinSet<()>) {
        while in_flight.try_join_next().is_some() {}
        if in_flight.is_empty() {
            return;
        }
        let grace = self.options.shutdown_grace;
        tracing::info!(
            jobs = in_flight.len(),
            ?grace,
            "waiting for jobs in flight to finish"
        );
        if tokio::time::timeout(grace, join_all(in_flight))
            .await
            .is_ok()
        {
            return;
        }
        tracing::warn!(
            jobs = in_flight.len(),
            "the shutdown grace ran out; interrupting jobs in flight"
        );
        self.halted.cancel();
        for token in self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
        {
            token.cancel();
        }
        if tokio::time::timeout(REPORT_AFTER_HALT, join_all(in_flight))
            .await
            .is_err()
        {
            tracing::warn!(
                jobs = in_flight.len(),
                "jobs did not report in time; their leases will run out and they will be reported as interrupted"
            );
        }
    }

    /// Runs one job to its end, renewing its lease meanwhile, and settles it. All of it
    /// happens in the job's event span (its trace id, run and node), and is counted like a
    /// consumer's delivery under the consumer name `runner`.
    async fn take(&self, delivery: Delivery) {
        let _in_flight = InFlight::start();
        let envelope = Envelope::from_slice(&delivery.payload);
        let span = event_span(JOBS, &delivery, envelope.as_ref().ok());
        count_received(JOBS, &delivery);
        self.settle(delivery, envelope).instrument(span).await;
    }

    async fn settle(&self, delivery: Delivery, envelope: Result<Envelope, EventError>) {
        let envelope = match envelope {
            Ok(e) => e,
            Err(err) => return self.park(delivery, err.to_string()).await,
        };
        let dispatch = match envelope.decode() {
            Ok(Event::NodeDispatch(d)) => d,
            Ok(other) => {
                return self
                    .park(
                        delivery,
                        format!("expected node.dispatch, got {}", other.event_type()),
                    )
                    .await;
            }
            Err(err) => return self.park(delivery, err.to_string()).await,
        };
        let lease = async {
            let mut every = tokio::time::interval(self.options.ack_wait / 3);
            every.tick().await;
            loop {
                every.tick().await;
                if let Err(err) = delivery.in_progress().await {
                    tracing::warn!(error = %err, "renewing a job's lease failed");
                }
            }
        };
        let result = tokio::select! {
            r = self.execute(&envelope, &dispatch) => r,
            () = lease => unreachable!("the lease loop never ends"),
        };
        match result {
            Ok(reported) => {
                let outcome = if reported {
                    Outcome::Applied
                } else {
                    Outcome::Duplicate
                };
                count_handled(JOBS, Some(&outcome));
                if let Err(err) = delivery.ack().await {
                    tracing::warn!(error = %err, "acknowledging a job failed; it will be reported as interrupted");
                }
            }
            Err(err) => {
                count_handled(JOBS, None);
                tracing::warn!(run = %dispatch.run_id, node = %dispatch.node, error = %err, "recording a job failed; it will come back");
                let _ = delivery.nak(Duration::from_secs(1)).await;
            }
        }
    }

    async fn park(&self, delivery: Delivery, reason: String) {
        tracing::error!(%reason, "parking an unreadable job");
        let parked = self
            .store
            .park_dead_letter(NewDeadLetter {
                consumer: JOBS,
                event_id: delivery.id,
                topic: &delivery.topic,
                payload: &delivery.payload,
                reason: &reason,
                deliveries: delivery.deliveries,
            })
            .await;
        if parked.is_ok() {
            count_handled(JOBS, Some(&Outcome::DeadLettered { reason }));
            let _ = delivery.term().await;
        } else {
            count_handled(JOBS, None);
        }
    }

    /// Runs the attempt unless a runner already began it, and records the result with the
    /// job's inbox entry in one transaction. `false`: the inbox had the job already, so its
    /// result had been reported before.
    async fn execute(&self, envelope: &Envelope, job: &NodeDispatch) -> Result<bool, HandlerError> {
        let attempt = i32::try_from(job.attempt).unwrap_or(i32::MAX);
        // Registered before anything is announced, so a cancel that follows cannot miss it.
        let cancel = CancellationToken::new();
        let key = (job.run_id, job.node.clone(), job.attempt);
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone(), cancel.clone());
        if let Some(snapshot) = self
            .snapshots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&job.run_id)
            && unwanted(snapshot, &job.node, job.attempt)
        {
            cancel.cancel();
        }
        let result = self.report(envelope, job, attempt, cancel).await;
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
        result
    }

    async fn report(
        &self,
        envelope: &Envelope,
        job: &NodeDispatch,
        attempt: i32,
        cancel: CancellationToken,
    ) -> Result<bool, HandlerError> {
        // What this attempt reports continues the trace of the dispatch that asked for it.
        let trace = envelope.trace.as_ref();
        let finished = if self
            .store
            .begin_attempt(job.run_id, &job.node, attempt)
            .await?
        {
            let begun = Instant::now();
            let started = NodeProgress {
                run_id: job.run_id,
                node: job.node.clone(),
                attempt: job.attempt,
                message: "started".into(),
            };
            let started = envelope_of(Event::NodeProgress(started), trace)?;
            durably("reporting an attempt's start", || async {
                let mut tx = self.store.begin().await?;
                tx.append_outbox(&started).await?;
                tx.commit().await
            })
            .await?;
            let finished = self.attempt(job, cancel, begun).await?;
            observe::node_finished(&job.kind, &finished.outcome, begun);
            finished
        } else {
            // Begun before: its runner died (or this is a repeat). Never run an attempt
            // twice; the engine decides whether a new attempt follows. Not measured: how
            // long it ran is unknown.
            let reason = "interrupted: the runner stopped during this attempt";
            durably("recording an interrupted attempt", || {
                self.store.finish_attempt(
                    job.run_id,
                    &job.node,
                    attempt,
                    "interrupted",
                    None,
                    Some(reason),
                    None,
                )
            })
            .await?;
            NodeFinished {
                run_id: job.run_id,
                node: job.node.clone(),
                attempt: job.attempt,
                outcome: NodeOutcome::Failed {
                    reason: reason.into(),
                },
                exit_code: None,
                duration_ms: 0,
                artifacts: Vec::new(),
            }
        };
        let finished = envelope_of(Event::NodeFinished(finished), trace)?;
        let first = durably("reporting an attempt's end", || async {
            let mut tx = self.store.begin().await?;
            let first = tx.record_inbox(JOBS, envelope.id).await?;
            if first {
                tx.append_outbox(&finished).await?;
            }
            tx.commit().await?;
            Ok(first)
        })
        .await?;
        Ok(first)
    }

    /// Prepares the directories, runs the script, and collects output and artifacts.
    async fn attempt(
        &self,
        job: &NodeDispatch,
        cancel: CancellationToken,
        begun: Instant,
    ) -> Result<NodeFinished, HandlerError> {
        let dirs = RunDirs::new(&self.options.data_dir, job.run_id);
        let started = std::time::Instant::now();
        let target = self.github_issue(job.run_id).await?;
        if let (Some(delivery), Some(issue)) = (&self.options.delivery, &target) {
            let prepared = match delivery.session(&issue.repo).await {
                Ok(mut session) => {
                    let cloned = delivery
                        .prepare(&issue.repo, &dirs.workspace(), &mut session)
                        .await;
                    self.store_log(job, &session.lines).await;
                    cloned
                }
                Err(reason) => Err(reason),
            };
            if let Err(reason) = prepared {
                return self
                    .failed(job, format!("cloning {}: {reason}", issue.repo), started)
                    .await;
            }
        }
        if job.kind == "deliver" {
            return self.deliver(job, target, &dirs, started).await;
        }
        let spec: ScriptSpec = serde_json::from_value(job.spec.clone())?;
        let role = match &spec.agent {
            Some(agent) => match self
                .frozen(
                    job.run_id,
                    "role",
                    &agent.role,
                    self.options.roles.get(&agent.role),
                )
                .await?
            {
                Some(role) => Some(role),
                None => {
                    let reason = format!(
                        "the agent role `{}` is not configured (add [roles.{}])",
                        agent.role, agent.role
                    );
                    return self.failed(job, reason, started).await;
                }
            },
            None => None,
        };
        let profile_name = role
            .as_ref()
            .and_then(|r: &Role| r.sandbox.clone())
            .unwrap_or_else(|| job.sandbox.clone());
        let Some(profile) = self
            .frozen(
                job.run_id,
                "profile",
                &profile_name,
                self.options.profiles.get(&profile_name),
            )
            .await?
        else {
            let reason = format!(
                "the sandbox profile `{profile_name}` is not configured (add [sandbox.profiles.{profile_name}])"
            );
            return self.failed(job, reason, started).await;
        };
        let artifacts_location = dirs.artifacts_location(&job.node, job.attempt);
        let artifacts = dirs.resolve(&artifacts_location);
        let inputs = dirs.inputs(&job.node, job.attempt);
        if let Err(reason) = self.copy_inputs(job, &spec, &inputs).await? {
            return self.failed(job, reason, started).await;
        }
        if let Err(reason) = self.checkpoint(job, &spec, &dirs).await {
            return self.failed(job, reason, started).await;
        }
        let secrets = self.secrets(job, role.as_ref());
        let mut env = environment(job, &spec, role.as_ref());
        env.extend(secrets.iter().map(|(k, v)| (k.clone(), v.clone())));
        let secrets = Secrets::new(secrets);
        let mut job_spec = Job {
            script: spec.run.clone(),
            env,
            workspace: dirs.workspace(),
            artifacts: artifacts.clone(),
            inputs,
            timeout: job.timeout_secs.map(Duration::from_secs),
            profile: profile.clone(),
            labels: JobLabels {
                run: job.run_id.to_string(),
                node: job.node.clone(),
                attempt: job.attempt,
            },
            stdout_tail: if role.is_some() {
                agent::REPORT_TAIL
            } else {
                0
            },
        };
        if let (Some(agent), Some(role)) = (&spec.agent, &role) {
            let seen = job_spec.inputs_seen();
            match agent::prepare(
                &self.store,
                job,
                &spec,
                agent,
                role,
                &job_spec.inputs,
                &seen,
            )
            .await
            {
                Ok(script) => job_spec.script = script,
                Err(reason) => return self.failed(job, reason, started).await,
            }
        }

        let (logs, lines) = mpsc::channel::<LogLine>(256);
        let (run_id, attempt) = (job.run_id, i32::try_from(job.attempt).unwrap_or(i32::MAX));
        let start = Arc::new(SandboxStart::new(begun, &job.kind));
        let writer = tokio::spawn(
            store_output(
                self.store.clone(),
                LogTarget {
                    run_id,
                    node: job.node.clone(),
                    attempt,
                },
                lines,
                secrets.clone(),
                self.options.log_limit,
                {
                    let start = start.clone();
                    move || start.running()
                },
            )
            .in_current_span(),
        );
        // Cancelled before it began: the sandbox stops it at once, nothing of it runs on.
        let exit = self.sandbox.run(&job_spec, logs, cancel).await;
        // After the writer has taken every line: a first line, if any, was timed already.
        let _ = writer.await;
        start.running();
        let exit = match exit {
            Ok(exit) => exit,
            Err(err) => return self.failed(job, format!("sandbox: {err}"), started).await,
        };

        let mut stored = Vec::new();
        let mut problems = Vec::new();
        let collected = {
            let (data_dir, location) = (self.options.data_dir.clone(), artifacts_location.clone());
            let (names, limit) = (spec.artifacts.clone(), self.artifact_limit);
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
            let path = artifacts.join(&name);
            if let Some(secret) = secrets.found_in(&bytes) {
                // Kept nowhere: the file goes, and the attempt fails saying why.
                let _ = tokio::fs::remove_file(&path).await;
                problems.push(format!(
                    "artifact {name} contained the value of the secret {secret}; it was deleted, not stored"
                ));
                continue;
            }
            let (sha256, size) = digest(&bytes);
            let row = ArtifactRow {
                location: format!("{artifacts_location}/{name}"),
                run_id,
                node: job.node.clone(),
                attempt,
                name: name.clone(),
                sha256: sha256.clone(),
                size: i64::try_from(size).unwrap_or(i64::MAX),
            };
            durably("recording an artifact", || self.store.record_artifact(&row)).await?;
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
        if let Some(role) = &role {
            match agent::report(role, &exit.stdout_tail) {
                Ok(report) => {
                    for row in agent::usage_rows(job, &report.usage, &self.options.prices) {
                        durably("recording usage", || self.store.record_usage(&row)).await?;
                    }
                    if let Some(failed) = report.failed {
                        problems.push(format!("the agent reported an error: {failed}"));
                    }
                }
                Err(reason) if exit.succeeded() => problems.push(reason),
                Err(_) => {}
            }
        }
        let verdict = if exit.status == ExitStatus::Cancelled && self.halted.is_cancelled() {
            Verdict::interrupted(format!(
                "interrupted: the runner shut down and the attempt did not finish within its {:?} grace",
                self.options.shutdown_grace
            ))
        } else {
            judge(
                &exit,
                &profile,
                (!problems.is_empty()).then(|| problems.join("; ")),
            )
        };
        let duration_ms = u64::try_from(exit.duration.as_millis()).unwrap_or(u64::MAX);
        durably("recording an attempt's end", || {
            self.store.finish_attempt(
                run_id,
                &job.node,
                attempt,
                verdict.status,
                verdict.exit_code,
                verdict.error(),
                Some(i64::try_from(duration_ms).unwrap_or(i64::MAX)),
            )
        })
        .await?;
        Ok(NodeFinished {
            run_id,
            node: job.node.clone(),
            attempt: job.attempt,
            outcome: verdict.outcome,
            exit_code: verdict.exit_code,
            duration_ms,
            artifacts: stored,
        })
    }

    /// Copies the recorded artifacts of the upstream attempts this node reads into its
    /// inputs directory (an imported artifact lives in its child run). `Ok(Err(reason))`:
    /// an artifact was refused ([`artifacts::copy_inputs`]), which fails the attempt.
    async fn copy_inputs(
        &self,
        job: &NodeDispatch,
        spec: &ScriptSpec,
        inputs: &std::path::Path,
    ) -> Result<Result<(), String>, HandlerError> {
        let rows: Vec<ArtifactRow> = self
            .store
            .artifacts(job.run_id)
            .await?
            .into_iter()
            .filter(|a| {
                spec.inputs
                    .get(&a.node)
                    .is_some_and(|&at| i64::from(at) == i64::from(a.attempt))
            })
            .collect();
        let (data_dir, inputs, limit) = (
            self.options.data_dir.clone(),
            inputs.to_owned(),
            self.artifact_limit,
        );
        Ok(tokio::task::spawn_blocking(move || {
            artifacts::copy_inputs(&data_dir, &rows, &inputs, limit)
        })
        .await??)
    }

    /// Records the workspace when the node first starts; restores that record when the
    /// node runs again after a send-back, so the rework starts where the work first did.
    async fn checkpoint(
        &self,
        job: &NodeDispatch,
        spec: &ScriptSpec,
        dirs: &RunDirs,
    ) -> Result<(), String> {
        let (workspace, archive) = (dirs.workspace(), dirs.checkpoint(&job.node));
        let rework = spec.rework_comment.is_some();
        let note = tokio::task::spawn_blocking(move || -> std::io::Result<Option<String>> {
            if archive.exists() {
                if !rework {
                    return Ok(None);
                }
                checkpoint::restore(&archive, &workspace)?;
                return Ok(Some(
                    "[gatehouse] workspace restored to its checkpoint from this node's first start"
                        .to_owned(),
                ));
            }
            let taken = checkpoint::take(&workspace, &archive)?;
            Ok(Some(format!(
                "[gatehouse] workspace checkpoint taken: {} entries, {} archived",
                taken.entries,
                bytesize::ByteSize::b(taken.bytes).display().iec()
            )))
        })
        .await
        .map_err(|e| format!("workspace checkpoint: {e}"))?
        .map_err(|e| format!("workspace checkpoint: {e}"))?;
        if let Some(note) = note {
            self.store_log(job, &[note]).await;
        }
        Ok(())
    }

    /// The run's frozen `(kind, name)` setting: the first use freezes the configured value;
    /// later nodes get that one even if the configuration changed. `None`: neither frozen
    /// nor configured.
    async fn frozen<T: Serialize + DeserializeOwned>(
        &self,
        run: Uuid,
        kind: &str,
        name: &str,
        configured: Option<&T>,
    ) -> Result<Option<T>, HandlerError> {
        let body = match configured {
            Some(value) => Some(
                self.store
                    .freeze_setting(run, kind, name, &serde_json::to_string(value)?)
                    .await?,
            ),
            None => self.store.frozen_setting(run, kind, name).await?,
        };
        Ok(match body {
            Some(body) => Some(serde_json::from_str(&body)?),
            None => None,
        })
    }

    /// The secrets the node and its role declared, read from the runner's environment.
    fn secrets(&self, job: &NodeDispatch, role: Option<&Role>) -> Vec<(String, String)> {
        let names = job
            .secrets
            .iter()
            .chain(role.into_iter().flat_map(|r| r.secrets.iter()));
        let mut values = Vec::new();
        for name in names {
            match std::env::var(name) {
                Ok(value) => values.push((name.clone(), value)),
                Err(_) => {
                    tracing::warn!(secret = %name, node = %job.node, "a declared secret is not set in the runner's environment")
                }
            }
        }
        values
    }
}

/// The GitHub issue a run works on.
struct Issue {
    requirement: uuid::Uuid,
    repo: String,
    number: u64,
    title: String,
}

impl Runner {
    /// The GitHub issue of the run's requirement, when deliveries are configured.
    async fn github_issue(&self, run_id: uuid::Uuid) -> Result<Option<Issue>, HandlerError> {
        if self.options.delivery.is_none() {
            return Ok(None);
        }
        let Some(requirement) = self.store.run(run_id).await?.and_then(|r| r.requirement_id) else {
            return Ok(None);
        };
        let Some(requirement) = self.store.requirement(requirement).await? else {
            return Ok(None);
        };
        Ok(match serde_json::from_str(&requirement.source) {
            Ok(gatehouse_events::RequirementSource::Github { repo, number, .. }) => Some(Issue {
                requirement: requirement.id,
                repo,
                number,
                title: requirement.title,
            }),
            _ => None,
        })
    }

    /// A `deliver` node's attempt.
    async fn deliver(
        &self,
        job: &NodeDispatch,
        issue: Option<Issue>,
        dirs: &RunDirs,
        started: std::time::Instant,
    ) -> Result<NodeFinished, HandlerError> {
        let Some(delivery) = self.options.delivery.clone() else {
            let reason = "deliver needs [github] with a token (and git_url) in the configuration";
            return self.failed(job, reason.into(), started).await;
        };
        let Some(issue) = issue else {
            let reason = "deliver needs a run that works on a GitHub issue";
            return self.failed(job, reason.into(), started).await;
        };
        let spec: DeliverSpec = serde_json::from_value(job.spec["deliver"].clone())?;
        let target = Target {
            repo: &issue.repo,
            number: issue.number,
            title: &issue.title,
            run: job.run_id,
        };
        let mut session = match delivery.session(&issue.repo).await {
            Ok(session) => session,
            Err(reason) => return self.failed(job, reason, started).await,
        };
        let delivered = delivery
            .deliver(&target, &dirs.workspace(), &spec, &mut session)
            .await;
        self.store_log(job, &session.lines).await;
        let note = match delivered {
            Ok(DeliveredTo::Pull { number, branch }) => {
                self.store
                    .record_pull_request(
                        &issue.repo,
                        number,
                        issue.requirement,
                        job.run_id,
                        &branch,
                    )
                    .await?;
                format!("pull request #{number} on {}", issue.repo)
            }
            Ok(DeliveredTo::Merged(base)) => format!("merged into {base} on {}", issue.repo),
            Err(reason) => return self.failed(job, reason, started).await,
        };
        self.store_log(job, &[format!("delivered: {note}")]).await;
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let attempt = i32::try_from(job.attempt).unwrap_or(i32::MAX);
        self.store
            .finish_attempt(
                job.run_id,
                &job.node,
                attempt,
                "succeeded",
                None,
                None,
                Some(i64::try_from(duration_ms).unwrap_or(i64::MAX)),
            )
            .await?;
        Ok(NodeFinished {
            run_id: job.run_id,
            node: job.node.clone(),
            attempt: job.attempt,
            outcome: NodeOutcome::Succeeded,
            exit_code: None,
            duration_ms,
            artifacts: Vec::new(),
        })
    }

    /// Ends an attempt that failed before or instead of running a process.
    async fn failed(
        &self,
        job: &NodeDispatch,
        reason: String,
        started: std::time::Instant,
    ) -> Result<NodeFinished, HandlerError> {
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let attempt = i32::try_from(job.attempt).unwrap_or(i32::MAX);
        durably("recording a failed attempt", || {
            self.store.finish_attempt(
                job.run_id,
                &job.node,
                attempt,
                "failed",
                None,
                Some(&reason),
                Some(i64::try_from(duration_ms).unwrap_or(i64::MAX)),
            )
        })
        .await?;
        Ok(NodeFinished {
            run_id: job.run_id,
            node: job.node.clone(),
            attempt: job.attempt,
            outcome: NodeOutcome::Failed { reason },
            exit_code: None,
            duration_ms,
            artifacts: Vec::new(),
        })
    }

    /// Appends lines to the attempt's log; a failure to store them is logged, not fatal.
    async fn store_log(&self, job: &NodeDispatch, lines: &[String]) {
        let attempt = i32::try_from(job.attempt).unwrap_or(i32::MAX);
        for line in lines {
            if let Err(err) = self
                .store
                .append_log(job.run_id, &job.node, attempt, "stdout", line)
                .await
            {
                tracing::warn!(error = %err, "storing a log line failed");
            }
        }
    }
}

/// The script's environment apart from secrets and the sandbox's path variables: what the
/// node (and its agent role) declared plus Gatehouse's variables.
fn environment(
    job: &NodeDispatch,
    spec: &ScriptSpec,
    role: Option<&Role>,
) -> BTreeMap<String, String> {
    let mut env = role.map(|r| r.env.clone()).unwrap_or_default();
    env.extend(job.env.clone());
    for (name, value) in &spec.params {
        env.insert(
            format!("GATEHOUSE_PARAM_{}", name.to_ascii_uppercase()),
            value.clone(),
        );
    }
    env.extend([
        ("GATEHOUSE_RUN_ID".to_owned(), job.run_id.to_string()),
        ("GATEHOUSE_NODE".to_owned(), job.node.clone()),
        ("GATEHOUSE_ATTEMPT".to_owned(), job.attempt.to_string()),
    ]);
    if let Some(comment) = &spec.rework_comment {
        env.insert("GATEHOUSE_REWORK_COMMENT".to_owned(), comment.clone());
    }
    env
}

/// Appends one of the runner's events to the outbox, continuing `trace` (the dispatch's)
/// with a span of its own.
/// The envelope of an event this runner reports, continuing `trace`.
fn envelope_of(event: Event, trace: Option<&TraceParent>) -> Result<Envelope, EventError> {
    Envelope::new(SOURCE, &event, trace.map(TraceParent::child))
}

/// Waits for every task in `tasks` to end.
async fn join_all(tasks: &mut JoinSet<()>) {
    while tasks.join_next().await.is_some() {}
}

/// Whether `snapshot` shows that `node`'s `attempt` is no longer wanted: a newer attempt
/// exists, or this one is no longer dispatched or running. A snapshot older than the
/// attempt says nothing about it.
fn unwanted(snapshot: &RunUpdated, node: &str, attempt: u32) -> bool {
    snapshot.nodes.iter().any(|n| {
        n.node == node
            && (n.attempt > attempt
                || n.attempt == attempt
                    && !matches!(n.status, NodeStatus::Dispatched | NodeStatus::Running))
    })
}

/// Keeps the newest snapshot of each run and stops attempts it no longer wants.
#[async_trait]
impl Handler for Runner {
    async fn handle(&self, _tx: &mut Tx, envelope: &Envelope) -> Result<(), HandlerError> {
        let Ok(Event::RunUpdated(snapshot)) = envelope.decode() else {
            return Ok(());
        };
        {
            let mut snapshots = self.snapshots.lock().unwrap_or_else(|p| p.into_inner());
            if snapshots.len() >= SNAPSHOTS_KEPT {
                snapshots.retain(|_, s| !s.status.is_terminal());
            }
            let newer = snapshots
                .get(&snapshot.run_id)
                .is_none_or(|old| old.revision < snapshot.revision);
            if newer {
                snapshots.insert(snapshot.run_id, snapshot.clone());
            }
        }
        if snapshot.status.is_terminal() {
            // Outside the consumer's transaction: Docker may be slow, and a volume left
            // behind costs nothing but a name.
            let (sandbox, run) = (self.sandbox.clone(), snapshot.run_id.to_string());
            tokio::spawn(async move {
                if let Err(err) = sandbox.run_ended(&run).await {
                    tracing::warn!(%run, error = %err, "releasing the run's sandbox resources failed");
                }
            });
        }
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        for ((run, node, attempt), token) in running.iter() {
            if *run == snapshot.run_id && unwanted(&snapshot, node, *attempt) {
                tracing::info!(run = %run, node = %node, attempt, "stopping an attempt the run no longer wants");
                token.cancel();
            }
        }
        Ok(())
    }
}
