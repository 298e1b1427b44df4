//! Whether a role's CLI is there: `command -v <program>` run as a job in the role's
//! profile, with the environment the CLI gets, so the sandbox's image and the role's
//! `PATH` decide, as they will for a node.

use std::collections::BTreeMap;
use std::time::Duration;

use gatehouse_agent::Role;
use gatehouse_sandbox::{ExitStatus, Job, JobLabels, LogLine, Profile, SandboxKind, Stream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Outcome;
use crate::runner::Runner;
use crate::scratch::Scratch;

/// How long the job may take: a Docker image may have to be started cold.
const JOB_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs `command -v` for the role's program in `profile`.
pub(super) async fn check(
    runner: &Runner,
    role_name: &str,
    role: &Role,
    profile: &Profile,
    stop: &CancellationToken,
) -> Outcome {
    let Some(program) = role.program() else {
        return Outcome::Failed(
            "it names no program: set `command` (executor \"command\")".to_owned(),
        );
    };
    let scratch = match Scratch::new(&runner.options.data_dir.join("doctor"), "cli") {
        Ok(scratch) => scratch,
        Err(e) => return Outcome::Failed(format!("making a directory for the check: {e}")),
    };
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
        script: format!("command -v {}", quote(program)),
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
    if let Err(e) = std::fs::create_dir_all(&job.workspace) {
        return Outcome::Failed(format!("making a workspace for the check: {e}"));
    }
    let (logs, mut lines) = mpsc::channel::<LogLine>(64);
    let collect = tokio::spawn(async move {
        let mut stdout = Vec::new();
        while let Some(line) = lines.recv().await {
            if line.stream == Stream::Stdout && stdout.len() < 5 {
                stdout.push(line.line);
            }
        }
        stdout
    });
    let exit = runner.sandbox.run(&job, logs, stop.child_token()).await;
    let stdout = collect.await.unwrap_or_default();
    if let Err(e) = runner.sandbox.run_ended(&run).await {
        tracing::debug!(error = %e, "letting go of the doctor's workspace");
    }
    let found = stdout.iter().find(|l| !l.trim().is_empty()).cloned();
    let image = match profile.kind {
        SandboxKind::Docker => {
            format!(" (image {})", profile.image.as_deref().unwrap_or("not set"))
        }
        SandboxKind::Process => String::new(),
    };
    match exit.map(|exit| exit.status) {
        Ok(ExitStatus::Exited(0)) => Outcome::Passed(format!(
            "`{program}` is in the sandbox{image}: {}",
            found.as_deref().unwrap_or("found").trim()
        )),
        Ok(ExitStatus::Exited(_)) => Outcome::Failed(format!(
            "`{program}` is not in the sandbox{image}: {}",
            install_hint(role, profile)
        )),
        Ok(ExitStatus::TimedOut) => Outcome::Failed(format!(
            "looking for `{program}` in the sandbox{image} took over {}s: check that the sandbox starts",
            JOB_TIMEOUT.as_secs()
        )),
        Ok(ExitStatus::Cancelled) => Outcome::Failed("stopped before it ended".to_owned()),
        Ok(status) => Outcome::Failed(format!(
            "looking for `{program}` in the sandbox{image} ended with {status:?}"
        )),
        Err(e) => Outcome::Failed(format!("the sandbox could not run the check: {e}")),
    }
}

/// What to do about a missing program.
fn install_hint(role: &Role, profile: &Profile) -> String {
    let path = if role.env.contains_key("PATH") {
        "fix PATH in the role's env"
    } else {
        "or set PATH in the role's env"
    };
    match (role.executor.install(), profile.kind) {
        (Some(_), SandboxKind::Docker) => format!(
            "use an image with the agent CLIs (deploy/sandbox/build-images.sh --with-agents), {path}"
        ),
        (Some(install), SandboxKind::Process) => {
            format!("install it on the runner's host ({install}), {path}")
        }
        (None, _) => format!("install it where the sandbox runs, {path}"),
    }
}

/// One word for `sh`, single-quoted.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_agent::Executor;

    #[test]
    fn the_program_is_the_executors_or_the_commands_first_word() {
        assert_eq!(Role::new(Executor::ClaudeCode).program(), Some("claude"));
        assert_eq!(Role::new(Executor::Codex).program(), Some("codex"));
        let command = Role {
            command: vec!["my agent".into(), "{prompt_file}".into()],
            ..Role::new(Executor::Command)
        };
        assert_eq!(command.program(), Some("my agent"));
        assert_eq!(Role::new(Executor::Command).program(), None);
        assert_eq!(quote("it's"), r"'it'\''s'");
    }
}
