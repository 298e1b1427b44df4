//! Preparing an attempt for the sandbox: the run's frozen settings (the agent role and the
//! sandbox profile it uses), the upstream artifacts copied in as inputs, the workspace
//! checkpoint, the script's environment (with the project's settings) and the secrets
//! declared, and for an agent node
//! the script that runs the agent on its prompt. All of it happens before a process runs;
//! what cannot be prepared fails the attempt, saying what to configure or what was refused.

use std::collections::BTreeMap;
use std::time::Duration;

use std::sync::Arc;

use gatehouse_agent::{Role, Tools};
use gatehouse_blobs::{BlobError, Digest};
use gatehouse_bus::HandlerError;
use gatehouse_events::{Envelope, NodeDispatch, SandboxWork};
use gatehouse_sandbox::{Job, JobLabels, Profile};
use gatehouse_store::{ArtifactRow, ConnectionOwner};
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use tracing::Instrument;

use super::Nodes;
use super::attempt::{Attempt, Prepared, Program, StartRecorded, Step};
use crate::agent;
use crate::artifacts;
use crate::durably::durably;
use crate::mcp::{self, AttemptTools};
use crate::network::{Reach, Wants};
use crate::patience::patiently;
use crate::scope::RunScope;
use crate::secrets::{Secrets, read_secrets};

impl<'a> Attempt<'a> {
    /// Readies the attempt for the sandbox: settings, inputs, checkpoint, environment and
    /// secrets, and an agent's script.
    pub(super) async fn prepare(
        &self,
        program: Program<'a>,
        scope: &RunScope,
        started: &Envelope,
    ) -> Step<Prepared<'a>> {
        let job = self.job;
        let work = program.work();
        let artifacts_location = self.dirs.artifacts_location(&job.node, job.attempt);
        let artifacts = self.dirs.resolve(&artifacts_location);
        let inputs = self.dirs.inputs(&job.node, job.attempt);
        // Side by side, as none touches what another does: the frozen settings (the
        // store), the upstream artifacts (the inputs directory) and the starting checkpoint
        // (the workspace).
        let (settings, copied, checkpoint) = tokio::join!(
            self.settings(program),
            self.copy_inputs(work, &inputs),
            self.checkpoint(work, scope)
        );
        let (role, profile) = match settings? {
            Ok(settings) => settings,
            Err(reason) => return Ok(Err(reason)),
        };
        let mut profile = profile;
        crate::deliver::mirrors::mount_shared(&mut profile, &self.mirrors);
        if let Err(reason) = copied? {
            return Ok(Err(reason));
        }
        let start_recorded = match checkpoint {
            Ok(recording) => recording,
            Err(reason) => return Ok(Err(reason)),
        };
        let budget = self.budget(program, role.as_ref()).await?;
        // What an agent knows: its prompt reads it, and so do Gatehouse's tools.
        let context = match program {
            Program::Agent(agent) if role.is_some() => {
                Some(agent::context(job, agent, scope, &inputs))
            }
            _ => None,
        };
        // The role's and project's MCP servers, checked before anything runs.
        let configured = match &role {
            Some(role) => match self
                .nodes
                .runner
                .options
                .mcp
                .tools(role, &scope.workspace.project)
            {
                Ok(tools) => tools,
                Err(reason) => return Ok(Err(reason)),
            },
            None => Tools::none(),
        };
        let tools = context.as_ref().map(|context| {
            Arc::new(AttemptTools {
                remotes: mcp::remote_names(&configured),
                owner: ConnectionOwner::Node {
                    run_id: job.run_id,
                    node: job.node.clone(),
                },
                attempt: job.attempt,
                project: Some(scope.workspace.project.clone()).filter(|p| !p.is_empty()),
                requirement: agent::requirement_json(context),
                inputs: agent::inputs_json(context),
                artifacts: Some(artifacts.clone()),
                progress: self.nodes.progress_reporter(job, started),
                ask_timeout: mcp::ASK_TIMEOUT,
                deadline: job
                    .timeout_secs
                    .map(|secs| tokio::time::Instant::now() + Duration::from_secs(secs)),
                store: self.nodes.runner.store.clone(),
                permissions: role.as_ref().and_then(|r| r.permissions.clone()),
                started: tokio::time::Instant::now(),
                decisions: Default::default(),
            })
        });
        let reach = match self.nodes.runner.reach(Wants {
            label: format!(
                "run {} node {} attempt {}",
                job.run_id, job.node, job.attempt
            ),
            provider: role
                .as_ref()
                .and_then(|r| Some((r.provider.as_deref()?, r.models.as_slice()))),
            role_egress: role.as_ref().map_or(&[], |r| r.egress.as_slice()),
            profile: &profile,
            budget,
            tools,
        }) {
            Ok(reach) => reach,
            Err(reason) => return Ok(Err(reason)),
        };
        let mut secrets = self.secrets(role.as_ref());
        let mut env = environment(job, work, role.as_ref());
        env.extend(scope.environment());
        env.extend(secrets.iter().map(|(k, v)| (k.clone(), v.clone())));
        // Last: the gateway's token stands in for a key of the same name.
        if let Some(reach) = &reach {
            env.extend(reach.env.iter().cloned());
            secrets.extend(reach.tokens());
        }
        let secrets = Secrets::new(secrets);
        let mut sandbox = Job {
            script: match program {
                Program::Script(script) => script.run.clone(),
                Program::Agent(_) => String::new(),
            },
            env,
            workspace: self.dirs.workspace(),
            artifacts,
            inputs,
            timeout: job.timeout_secs.map(Duration::from_secs),
            profile,
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
            relay: reach.as_ref().and_then(|r| r.relay.clone()),
            // An agent's own state stays out of the workspace, one home per attempt.
            home: role
                .is_some()
                .then(|| self.dirs.home(&job.node, job.attempt)),
        };
        if let (Program::Agent(agent), Some(role), Some(context)) = (program, &role, &context) {
            let shim = self.nodes.runner.options.acp.as_deref();
            if let Err(reason) = crate::acp::equip(&mut sandbox, role, shim) {
                return Ok(Err(reason));
            }
            let seen = sandbox.inputs_seen();
            let api = reach.as_ref().and_then(Reach::model_api);
            let skills = match self.skills(role, scope, &sandbox.inputs).await? {
                Ok(skills) => skills,
                Err(reason) => return Ok(Err(reason)),
            };
            let tools = mcp::with_gatehouse(
                role,
                configured,
                reach.as_ref().is_some_and(Reach::has_tools),
            );
            match agent::prepare(
                agent,
                context,
                role,
                api,
                &tools,
                &sandbox.inputs,
                &seen,
                &skills,
            ) {
                Ok(script) => {
                    sandbox.script = agent::with_mcp_preflight(script, &tools, &sandbox.profile);
                }
                Err(reason) => return Ok(Err(reason)),
            }
        }
        Ok(Ok(Prepared {
            work,
            role,
            sandbox,
            artifacts_location,
            secrets,
            start_recorded,
            reach,
        }))
    }

    /// The run's frozen agent role (for an agent node) and sandbox profile (the role's,
    /// else the node's). `Ok(Err(reason))`: one of them is not configured.
    async fn settings(&self, program: Program<'_>) -> Step<(Option<Role>, Profile)> {
        let (nodes, runner, job) = (self.nodes, &self.nodes.runner, self.job);
        let role = match program {
            Program::Agent(agent) => match nodes
                .frozen(
                    job.run_id,
                    self.fresh,
                    "role",
                    &agent.role,
                    runner.options.roles.get(&agent.role),
                )
                .await?
            {
                Some(role) => Some(role),
                None => {
                    let reason = format!(
                        "the agent role `{}` is not configured (add [roles.{}])",
                        agent.role, agent.role
                    );
                    return Ok(Err(reason));
                }
            },
            Program::Script(_) => None,
        };
        let profile_name = role
            .as_ref()
            .and_then(|r: &Role| r.sandbox.clone())
            .unwrap_or_else(|| job.sandbox.clone());
        let Some(profile) = nodes
            .frozen(
                job.run_id,
                self.fresh,
                "profile",
                &profile_name,
                runner.options.profiles.get(&profile_name),
            )
            .await?
        else {
            let reason = format!(
                "the sandbox profile `{profile_name}` is not configured (add [sandbox.profiles.{profile_name}])"
            );
            return Ok(Err(reason));
        };
        Ok(Ok((role, profile)))
    }

    /// Copies the recorded artifacts of the upstream attempts this node reads into its
    /// inputs directory (an imported artifact lives in its child run), from the blob store
    /// (which checks each against its digest), or for artifacts recorded before it from
    /// the data directory. `Ok(Err(reason))`: an artifact was refused, which fails the
    /// attempt; a blob store that stays unreachable hands the job back.
    async fn copy_inputs(&self, work: &SandboxWork, inputs: &std::path::Path) -> Step<()> {
        let runner = &self.nodes.runner;
        let fresh = inputs.to_owned();
        tokio::task::spawn_blocking(move || artifacts::fresh_dir(&fresh)).await??;
        if work.inputs.is_empty() {
            return Ok(Ok(()));
        }
        let rows: Vec<ArtifactRow> = runner
            .store
            .artifacts(self.job.run_id)
            .await?
            .into_iter()
            .filter(|a| {
                work.inputs
                    .get(&a.node)
                    .is_some_and(|&at| i64::from(at) == i64::from(a.attempt))
            })
            .collect();
        let limit = runner.artifact_limit;
        let mut on_disk = Vec::new();
        for row in rows {
            let relative = match artifacts::input_path(&row) {
                Ok(relative) => relative,
                Err(reason) => return Ok(Err(reason)),
            };
            let size = u64::try_from(row.size).unwrap_or(u64::MAX);
            if size > limit {
                return Ok(Err(format!(
                    "the input `{}/{}` is over the {limit} B limit",
                    row.node, row.name
                )));
            }
            let Ok(digest) = row.sha256.parse::<Digest>() else {
                return Ok(Err(format!(
                    "the input `{}/{}` was recorded with a malformed digest",
                    row.node, row.name
                )));
            };
            let to = inputs.join(relative);
            if let Some(parent) = to.parent() {
                tokio::fs::create_dir_all(parent).await?;
            }
            let fetched = patiently("fetching an input", || {
                runner.blobs.get_to_file(&digest, &to, size)
            })
            .await;
            match fetched {
                Ok(_) => {}
                Err(BlobError::NotFound(_)) => on_disk.push(row),
                Err(err) => return Err(err.into()),
            }
        }
        if on_disk.is_empty() {
            return Ok(Ok(()));
        }
        let (data_dir, inputs) = (runner.options.data_dir.clone(), inputs.to_owned());
        Ok(tokio::task::spawn_blocking(move || {
            artifacts::copy_inputs(&data_dir, &on_disk, &inputs, limit)
        })
        .await??)
    }

    /// Checkpoints the workspace when the node first starts; restores that checkpoint when
    /// the node runs again after a send-back, so the rework starts where the work first
    /// did. Only a rework needs the node's starting checkpoint before it runs: otherwise it
    /// is recorded while the node runs (the first start's is kept), off the way to the
    /// process, and the attempt awaits it before it reports.
    async fn checkpoint(
        &self,
        work: &SandboxWork,
        scope: &RunScope,
    ) -> Result<StartRecorded, String> {
        let (nodes, runner, job) = (self.nodes, &self.nodes.runner, self.job);
        let before = format!("node {}'s start (attempt {})", job.node, job.attempt);
        let now = nodes
            .take_checkpoint(job, &self.dirs, before)
            .await
            .map_err(|e| format!("workspace checkpoint: {e}"))?;
        let (store, run, node) = (runner.store.clone(), job.run_id, job.node.clone());
        let recording = async move {
            durably("recording the node's starting checkpoint", || {
                store.node_start_checkpoint(run, &node, now.as_str())
            })
            .await
            .map(|start| (start, now))
            .map_err(|e| format!("workspace checkpoint: {e}"))
        };
        if work.rework_comment.is_none() {
            let recorded = async move { recording.await.map(drop) };
            return Ok(Some(tokio::spawn(recorded.in_current_span())));
        }
        let (start, now) = recording.await?;
        if start == now.as_str() {
            return Ok(None);
        }
        let start: Digest = start
            .parse()
            .map_err(|e| format!("the node's starting checkpoint is not a digest: {e}"))?;
        let _turn = nodes.checkpoint_turn(job.run_id).await;
        nodes
            .restore_checkpoint(&start, &self.dirs)
            .await
            .map_err(|e| format!("restoring the node's starting checkpoint: {e}"))?;
        // Its repositories' files, from the mirrors the attempt holds already.
        nodes.prepare_workspace(job, scope, &self.dirs).await?;
        let after = format!("node {}'s restart after a send-back", job.node);
        nodes
            .record_latest(job, start, after)
            .await
            .map_err(|e| format!("workspace checkpoint: {e}"))?;
        nodes
            .store_log(
                job,
                &[
                    "[gatehouse] workspace restored to its checkpoint from this node's first start"
                        .to_owned(),
                ],
            )
            .await;
        Ok(None)
    }

    /// The skills the role and the run's project attach and those in its repositories,
    /// pinned with the run and written into the inputs directory.
    async fn skills(
        &self,
        role: &Role,
        scope: &RunScope,
        inputs: &std::path::Path,
    ) -> Step<crate::skills::Attached> {
        let runner = &self.nodes.runner;
        let (names, checkouts) =
            crate::skills::wanted(runner, role, &scope.workspace, &self.dirs.workspace());
        runner
            .attach_skills(self.job.run_id, &names, checkouts, inputs)
            .await
    }

    /// The secrets the node and its role declared, read from the runner's environment.
    fn secrets(&self, role: Option<&Role>) -> Vec<(String, String)> {
        let job = self.job;
        let names = job
            .secrets
            .iter()
            .chain(role.into_iter().flat_map(|r| r.secrets.iter()));
        read_secrets(names, &job.node)
    }
}

impl Nodes {
    /// The run's frozen `(kind, name)` setting: the first use freezes the configured value;
    /// later nodes get that one even if the configuration changed. `None`: neither frozen
    /// nor configured. In a `fresh` run (no node has ended) it is most likely not frozen,
    /// so it is frozen without looking first.
    async fn frozen<T: Serialize + DeserializeOwned>(
        &self,
        run: Uuid,
        fresh: bool,
        kind: &str,
        name: &str,
        configured: Option<&T>,
    ) -> Result<Option<T>, HandlerError> {
        let body = match configured {
            Some(value) => Some(
                self.runner
                    .store
                    .freeze_setting(run, kind, name, &serde_json::to_string(value)?, !fresh)
                    .await?,
            ),
            None => self.runner.store.frozen_setting(run, kind, name).await?,
        };
        Ok(match body {
            Some(body) => Some(serde_json::from_str(&body)?),
            None => None,
        })
    }
}

/// The script's environment apart from secrets and the sandbox's path variables: what the
/// node (and its agent role) declared plus Gatehouse's variables.
fn environment(
    job: &NodeDispatch,
    work: &SandboxWork,
    role: Option<&Role>,
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> =
        role.into_iter().flat_map(Role::cli_environment).collect();
    env.extend(role.map(|r| r.env.clone()).unwrap_or_default());
    env.extend(job.env.clone());
    for (name, value) in &work.params {
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
    if let Some(comment) = &work.rework_comment {
        env.insert("GATEHOUSE_REWORK_COMMENT".to_owned(), comment.clone());
    }
    env
}
