//! Whether a role's CLI is there: `command -v <program>` run as a job in the role's
//! profile, with the environment the CLI gets, so the sandbox's image and the role's
//! `PATH` decide, as they will for a node.

use gatehouse_agent::Role;
use gatehouse_sandbox::{ExitStatus, Profile, SandboxKind};
use tokio_util::sync::CancellationToken;

use super::Outcome;
use super::job::{self, JOB_TIMEOUT};
use crate::runner::Runner;

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
    let script = format!("command -v {}", quote(program));
    let ran = job::run(runner, role_name, role, profile, script, stop).await;
    let image = match profile.kind {
        SandboxKind::Docker => {
            format!(" (image {})", profile.image.as_deref().unwrap_or("not set"))
        }
        SandboxKind::Process => String::new(),
    };
    let ran = match ran {
        Ok(ran) => ran,
        Err(why) => return Outcome::Failed(why),
    };
    let found = ran.stdout.iter().find(|l| !l.trim().is_empty()).cloned();
    match ran.exit.status {
        ExitStatus::Exited(0) => Outcome::Passed(format!(
            "`{program}` is in the sandbox{image}: {}",
            found.as_deref().unwrap_or("found").trim()
        )),
        ExitStatus::Exited(_) => Outcome::Failed(format!(
            "`{program}` is not in the sandbox{image}: {}",
            install_hint(role, profile)
        )),
        ExitStatus::TimedOut => Outcome::Failed(format!(
            "looking for `{program}` in the sandbox{image} took over {}s: check that the sandbox starts",
            JOB_TIMEOUT.as_secs()
        )),
        ExitStatus::Cancelled => Outcome::Failed("stopped before it ended".to_owned()),
        status => Outcome::Failed(format!(
            "looking for `{program}` in the sandbox{image} ended with {status:?}"
        )),
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
