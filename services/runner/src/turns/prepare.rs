//! Preparing a turn's attempt for the sandbox: the files the CLI reads (the message, the
//! role's system text, for a `command` executor a copy of the transcript), its command
//! line continuing the session, the role's and the project's environment with the
//! secrets the role declared, and where it works — the workspace, or for a read-only role
//! a copy thrown away afterwards. All of it before a process runs; what cannot be
//! prepared fails the attempt, saying why.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_agent::{Role, Session, turn_invocation};
use gatehouse_events::TurnDispatch;
use gatehouse_sandbox::{Job, JobLabels, Profile};
use gatehouse_store::ConnectionOwner;

use super::Turns;
use super::dirs::ConversationDirs;
use super::transcript;
use super::turn::Turn;
use super::workspace::read_only_copy;
use crate::agent::AGENT_DIR;
use crate::mcp::{self, AttemptTools};
use crate::network::{Reach, Wants};
use crate::scope::project_environment;
use crate::scratch::Scratch;
use crate::secrets::{Secrets, read_secrets};

/// What the sandbox runs, and where.
pub(super) struct Prepared {
    pub sandbox: Job,
    pub secrets: Secrets,
    /// The read-only copy the CLI works in, removed when dropped.
    pub copy: Option<Scratch>,
    /// Its tokens for the model gateway and egress proxy; revoked when dropped.
    pub reach: Option<Reach>,
}

impl Turns {
    /// The sandbox job: the CLI's command line over the files written for it (the message,
    /// the role's system text, the transcript for a `command` executor), the role's and
    /// the project's environment with the secrets the role declared, in the workspace (or
    /// a copy of it for a read-only role). `Err`: why not, which fails the attempt.
    pub(super) async fn prepare_turn(
        &self,
        job: &TurnDispatch,
        turn: &Turn<'_>,
        role: &Role,
        profile: &Profile,
        dirs: &ConversationDirs,
        read_only: bool,
    ) -> Result<Prepared, String> {
        let copy = if read_only {
            Some(read_only_copy(dirs).await?)
        } else {
            None
        };
        let conversation = job.conversation_id.to_string();
        let (workspace, run_label) = match &copy {
            Some(copy) => (
                copy.path().to_owned(),
                format!("{conversation}-read-only-{}-{}", turn.seq, turn.attempt),
            ),
            None => (dirs.workspace(), conversation),
        };
        let attempt_dir = dirs.attempt(turn.seq, turn.attempt);
        let configured = self
            .runner
            .options
            .mcp
            .tools(role, &job.workspace.project)?;
        let tools = self.attempt_tools(
            job,
            turn,
            mcp::remote_names(&configured),
            role.permissions.clone(),
        );
        let reach = self.runner.reach(Wants {
            label: format!(
                "conversation {} turn {} attempt {}",
                job.conversation_id, turn.seq, turn.attempt
            ),
            provider: role
                .provider
                .as_deref()
                .map(|p| (p, role.models.as_slice())),
            role_egress: &role.egress,
            profile,
            budget: self.turn_budget(job, turn, role),
            tools: Some(tools),
        })?;
        let mut secrets = read_secrets(role.secrets_for(turn.ask), turn.role);
        let mut env: BTreeMap<String, String> = role.cli_environment().into_iter().collect();
        env.extend(role.env.clone());
        env.extend(project_environment(&job.workspace));
        env.extend(turn_environment(job, turn));
        env.extend(secrets.iter().cloned());
        // Last: the gateway's token stands in for a key of the same name.
        if let Some(reach) = &reach {
            env.extend(reach.env.iter().cloned());
            secrets.extend(reach.tokens());
        }
        let mut sandbox = Job {
            script: String::new(),
            env,
            workspace,
            artifacts: attempt_dir.join("artifacts"),
            inputs: attempt_dir.join("inputs"),
            timeout: Some(Duration::from_secs(turn.timeout_secs)),
            profile: profile.clone(),
            labels: JobLabels {
                run: run_label,
                node: format!("turn-{}", turn.seq),
                attempt: turn.attempt,
            },
            stdout_tail: 0,
            relay: reach.as_ref().and_then(|r| r.relay.clone()),
            // The CLI's state stays out of the workspace: the conversation's home, or for
            // a read-only `ask` (which resumes nothing) one thrown away with the attempt.
            home: Some(if read_only {
                attempt_dir.join("home")
            } else {
                dirs.home()
            }),
        };
        crate::acp::equip(&mut sandbox, role, self.runner.options.acp.as_deref())?;
        let mut files = write_inputs(&sandbox.inputs, turn, role, dirs)
            .map_err(|e| format!("writing the turn's files: {e}"))?;
        // Skills are pinned per conversation as a run's are per run (under its id): every
        // turn, on any runner, gets the files its first turn had.
        let (names, checkouts) =
            crate::skills::wanted(&self.runner, role, &job.workspace, &sandbox.workspace);
        let attached = self
            .runner
            .attach_skills(job.conversation_id, &names, checkouts, &sandbox.inputs)
            .await
            .map_err(|e| format!("the skills: {e}"))??;
        let tools = mcp::with_gatehouse(
            role,
            configured,
            reach.as_ref().is_some_and(Reach::has_tools),
        );
        let (tools, system_text) =
            crate::agent::with_skills(role, &sandbox.inputs_seen(), &tools, &attached);
        if system_text != role.system_text()
            && let Some(text) = &system_text
        {
            std::fs::write(sandbox.inputs.join(AGENT_DIR).join("system.md"), text)
                .map_err(|e| format!("writing the turn's files: {e}"))?;
            files.system = true;
        }
        let seen = |name: &str| format!("{}/{AGENT_DIR}/{name}", sandbox.inputs_seen());
        let system = files.system.then(|| seen("system.md"));
        let transcript = files.transcript.then(|| seen("transcript.jsonl"));
        let session = Session {
            resume: turn.resume,
            transcript_file: transcript.as_deref(),
        };
        let script = turn_invocation(
            role,
            reach.as_ref().and_then(Reach::model_api),
            &tools,
            &seen("prompt.md"),
            system.as_deref(),
            session,
        )
        .map_err(|e| format!("the session to resume cannot be used: {e}"))?;
        sandbox.script = crate::agent::with_mcp_preflight(script, &tools, &sandbox.profile);
        Ok(Prepared {
            sandbox,
            secrets: Secrets::new(secrets),
            copy,
            reach,
        })
    }
}

impl Turns {
    /// What Gatehouse's tools act on for the turn's attempt. A turn has no artifacts, and
    /// its progress message already shows the agent's latest step (a `post_progress`
    /// call among them), so a note is only logged.
    fn attempt_tools(
        &self,
        job: &TurnDispatch,
        turn: &Turn<'_>,
        remotes: Vec<String>,
        permissions: Option<gatehouse_agent::Permissions>,
    ) -> Arc<AttemptTools> {
        let conversation = job.conversation_id;
        let project = Some(job.workspace.project.clone()).filter(|p| !p.is_empty());
        Arc::new(AttemptTools {
            owner: ConnectionOwner::Turn {
                conversation_id: conversation,
                seq: i64::try_from(turn.seq).unwrap_or(i64::MAX),
            },
            attempt: turn.attempt,
            requirement: serde_json::json!({
                "requirement_id": job.requirement_id,
                "conversation_id": conversation,
                "project": project,
            }),
            inputs: serde_json::json!({ "message": turn.text }),
            project,
            artifacts: None,
            remotes,
            progress: Box::new(move |note| {
                tracing::info!(%conversation, %note, "an agent's progress note");
            }),
            ask_timeout: mcp::ASK_TIMEOUT,
            deadline: Some(tokio::time::Instant::now() + Duration::from_secs(turn.timeout_secs)),
            store: self.runner.store.clone(),
            permissions,
            started: tokio::time::Instant::now(),
            decisions: Default::default(),
        })
    }
}

/// Which files were written beside the prompt.
struct Inputs {
    system: bool,
    transcript: bool,
}

/// The message, the role's system text, and for an assistant turn of a `command`
/// executor a copy of the transcript, where the sandbox reads them.
fn write_inputs(
    inputs: &Path,
    turn: &Turn<'_>,
    role: &Role,
    dirs: &ConversationDirs,
) -> std::io::Result<Inputs> {
    let dir = inputs.join(AGENT_DIR);
    if inputs.exists() {
        std::fs::remove_dir_all(inputs)?;
    }
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("prompt.md"), turn.text)?;
    let system = role.system_text();
    if let Some(system) = &system {
        std::fs::write(dir.join("system.md"), system)?;
    }
    let transcript = !turn.ask && role.executor.reads_transcript();
    if transcript {
        transcript::copy(&dirs.transcript(), &dir.join("transcript.jsonl"))?;
    }
    Ok(Inputs {
        system: system.is_some(),
        transcript,
    })
}

/// Gatehouse's variables for a turn.
fn turn_environment(job: &TurnDispatch, turn: &Turn<'_>) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "GATEHOUSE_CONVERSATION_ID".to_owned(),
            job.conversation_id.to_string(),
        ),
        (
            "GATEHOUSE_REQUIREMENT_ID".to_owned(),
            job.requirement_id.to_string(),
        ),
        ("GATEHOUSE_TURN".to_owned(), turn.seq.to_string()),
        ("GATEHOUSE_ATTEMPT".to_owned(), turn.attempt.to_string()),
    ])
}
