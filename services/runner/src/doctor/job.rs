//! A check's script run as a job in a role's profile, with the environment the role's CLI
//! gets, so the sandbox's image and the role's `PATH` decide, as they will for a node.

use std::collections::BTreeMap;
use std::time::Duration;

use gatehouse_agent::Role;
use gatehouse_sandbox::{Exit, Job, JobLabels, LogLine, Profile, Stream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::runner::Runner;
use crate::scratch::Scratch;

/// How long the job may take: a Docker image may have to be started cold.
pub(super) const JOB_TIMEOUT: Duration = Duration::from_secs(120);
/// Lines of each stream kept.
const LINES: usize = 20;

/// How a check's job ended, and the first lines it printed on each stream.
pub(super) struct Ran {
    pub exit: Exit,
    pub stdout: Vec<String>,
    pub stderr: Vec<String>,
}

/// Runs `script` for the role `role_name` in `profile`; `Err`: why it could not run.
pub(super) async fn run(
    runner: &Runner,
    role_name: &str,
    role: &Role,
    profile: &Profile,
    script: String,
    stop: &CancellationToken,
) -> Result<Ran, String> {
    let scratch = Scratch::new(&runner.options.data_dir.join("doctor"), "cli")
        .map_err(|e| format!("making a directory for the check: {e}"))?;
    let mut env: BTreeMap<String, String> = role.cli_environment().into_iter().collect();
    env.extend(role.env.clone());
    let run = format!(
        "doctor-{}",
        scratch
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    let job = Job {
        script,
        env,
        workspace: scratch.path().join("workspace"),
        artifacts: scratch.path().join("artifacts"),
        inputs: scratch.path().join("inputs"),
        timeout: Some(JOB_TIMEOUT),
        profile: profile.clone(),
        labels: JobLabels {
            run: run.clone(),
            node: role_name.to_owned(),
            attempt: 1,
        },
        stdout_tail: 0,
        relay: None,
        home: None,
    };
    std::fs::create_dir_all(&job.workspace)
        .map_err(|e| format!("making a workspace for the check: {e}"))?;
    let (logs, mut lines) = mpsc::channel::<LogLine>(64);
    let collect = tokio::spawn(async move {
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        while let Some(line) = lines.recv().await {
            let kept = match line.stream {
                Stream::Stdout => &mut stdout,
                _ => &mut stderr,
            };
            if kept.len() < LINES {
                kept.push(line.line);
            }
        }
        (stdout, stderr)
    });
    let exit = runner.sandbox.run(&job, logs, stop.child_token()).await;
    let (stdout, stderr) = collect.await.unwrap_or_default();
    if let Err(e) = runner.sandbox.run_ended(&run).await {
        tracing::debug!(error = %e, "letting go of the doctor's workspace");
    }
    let exit = exit.map_err(|e| format!("the sandbox could not run the check: {e}"))?;
    Ok(Ran {
        exit,
        stdout,
        stderr,
    })
}
