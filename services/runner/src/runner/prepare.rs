//! Preparing an attempt for the sandbox: the run's frozen settings (the agent role and the
//! sandbox profile it uses), the upstream artifacts copied in as inputs, the workspace
//! checkpoint, the script's environment (with the project's settings) and the secrets
//! declared, and for an agent node
//! the script that runs the agent on its prompt. All of it happens before a process runs;
//! what cannot be prepared fails the attempt, saying what to configure or what was refused.

use std::collections::BTreeMap;
use std::time::Duration;

use gatehouse_agent::Role;
use gatehouse_bus::HandlerError;
use gatehouse_events::{NodeDispatch, SandboxWork};
use gatehouse_sandbox::{Job, JobLabels, Profile};
use gatehouse_store::ArtifactRow;
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use super::Runner;
use super::attempt::{Attempt, Prepared, Program, Step};
use super::workspace::RunScope;
use crate::agent;
use crate::artifacts;
use crate::checkpoint;
use crate::logs::Secrets;

impl<'a> Attempt<'a> {
    /// Readies the attempt for the sandbox: settings, inputs, checkpoint, environment and
    /// secrets, and an agent's script.
    pub(super) async fn prepare(
        &self,
        program: Program<'a>,
        scope: &RunScope,
    ) -> Step<Prepared<'a>> {
        let job = self.job;
        let work = program.work();
        let (role, profile) = match self.settings(program).await? {
            Ok(settings) => settings,
            Err(reason) => return Ok(Err(reason)),
        };
        let artifacts_location = self.dirs.artifacts_location(&job.node, job.attempt);
        let artifacts = self.dirs.resolve(&artifacts_location);
        let inputs = self.dirs.inputs(&job.node, job.attempt);
        if let Err(reason) = self.copy_inputs(work, &inputs).await? {
            return Ok(Err(reason));
        }
        if let Err(reason) = self.checkpoint(work).await {
            return Ok(Err(reason));
        }
        let secrets = self.secrets(role.as_ref());
        let mut env = environment(job, work, role.as_ref());
        env.extend(scope.environment());
        env.extend(secrets.iter().map(|(k, v)| (k.clone(), v.clone())));
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
        };
        if let (Program::Agent(agent), Some(role)) = (program, &role) {
            let seen = sandbox.inputs_seen();
            match agent::prepare(job, agent, role, scope, &sandbox.inputs, &seen) {
                Ok(script) => sandbox.script = script,
                Err(reason) => return Ok(Err(reason)),
            }
        }
        Ok(Ok(Prepared {
            work,
            role,
            sandbox,
            artifacts_location,
            secrets,
        }))
    }

    /// The run's frozen agent role (for an agent node) and sandbox profile (the role's,
    /// else the node's). `Ok(Err(reason))`: one of them is not configured.
    async fn settings(&self, program: Program<'_>) -> Step<(Option<Role>, Profile)> {
        let (runner, job) = (self.runner, self.job);
        let role = match program {
            Program::Agent(agent) => match runner
                .frozen(
                    job.run_id,
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
        let Some(profile) = runner
            .frozen(
                job.run_id,
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
    /// inputs directory (an imported artifact lives in its child run). `Ok(Err(reason))`:
    /// an artifact was refused ([`artifacts::copy_inputs`]), which fails the attempt.
    async fn copy_inputs(&self, work: &SandboxWork, inputs: &std::path::Path) -> Step<()> {
        let runner = self.runner;
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
        let (data_dir, inputs, limit) = (
            runner.options.data_dir.clone(),
            inputs.to_owned(),
            runner.artifact_limit,
        );
        Ok(tokio::task::spawn_blocking(move || {
            artifacts::copy_inputs(&data_dir, &rows, &inputs, limit)
        })
        .await??)
    }

    /// Records the workspace when the node first starts; restores that record when the
    /// node runs again after a send-back, so the rework starts where the work first did.
    async fn checkpoint(&self, work: &SandboxWork) -> Result<(), String> {
        let job = self.job;
        let (workspace, archive) = (self.dirs.workspace(), self.dirs.checkpoint(&job.node));
        let rework = work.rework_comment.is_some();
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
            self.runner.store_log(job, &[note]).await;
        }
        Ok(())
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

/// The values of the secrets `names` from the runner's environment; one that is not set
/// is left out, and logged with `what` declared it.
pub(crate) fn read_secrets<'a>(
    names: impl IntoIterator<Item = &'a String>,
    what: &str,
) -> Vec<(String, String)> {
    let mut values = Vec::new();
    for name in names {
        match std::env::var(name) {
            Ok(value) => values.push((name.clone(), value)),
            Err(_) => {
                tracing::warn!(secret = %name, declared_by = %what, "a declared secret is not set in the runner's environment")
            }
        }
    }
    values
}

impl Runner {
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
}

/// The script's environment apart from secrets and the sandbox's path variables: what the
/// node (and its agent role) declared plus Gatehouse's variables.
fn environment(
    job: &NodeDispatch,
    work: &SandboxWork,
    role: Option<&Role>,
) -> BTreeMap<String, String> {
    let mut env = role.map(|r| r.env.clone()).unwrap_or_default();
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
