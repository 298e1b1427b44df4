//! The `gatehouse-acp` shim in the sandbox of an `acp` role's attempt, or of a role with
//! `permissions` whose CLI asks about each tool call through a hook.
//!
//! An `acp` role's command line runs `"$GATEHOUSE_ACP" … -- <agent argv>`: the shim speaks
//! the Agent Client Protocol to the agent inside the sandbox and prints the lines the trace
//! reads. A hooked CLI runs `"$GATEHOUSE_ACP" hook NAME` before each tool call
//! (`gatehouse_agent::permission::hook`). The runner's image need not have it: the runner hands its own static build
//! (`[runner] acp`, else `gatehouse-acp` beside the relay binary) to every such job — a
//! read-only bind mount at [`IN_CONTAINER`] for a container (as the relay binary is), its
//! host path for a process, which sees the host's files — and sets `GATEHOUSE_ACP` to the
//! path the script sees. Without it the attempt fails before it starts, saying how to get it.

use std::path::Path;

use gatehouse_agent::{Executor, Role};
use gatehouse_sandbox::{Job, Mount, SandboxKind};

/// Where the shim is in a container: outside the workspace and Gatehouse's own
/// directories, read-only.
pub(crate) const IN_CONTAINER: &str = "/opt/gatehouse/bin/gatehouse-acp";

/// The variable the command line reads the shim's path from.
pub(crate) const VARIABLE: &str = "GATEHOUSE_ACP";

/// Gives `job` the shim when `role` needs it ([`Executor::needs_shim`]); `binary` is the runner's (`None` when
/// it has none). `Err`: why the attempt cannot run, saying what to configure.
pub(crate) fn equip(job: &mut Job, role: &Role, binary: Option<&Path>) -> Result<(), String> {
    if !Executor::needs_shim(role) {
        return Ok(());
    }
    let Some(binary) = binary else {
        return Err(MISSING.to_owned());
    };
    let seen = match job.profile.kind {
        SandboxKind::Docker => {
            job.profile.mounts.push(Mount {
                source: binary.to_owned(),
                target: IN_CONTAINER.to_owned(),
            });
            IN_CONTAINER.to_owned()
        }
        SandboxKind::Process => binary.display().to_string(),
    };
    job.env.insert(VARIABLE.to_owned(), seen);
    Ok(())
}

/// Why an `acp` role, or a hooked role with `permissions`, cannot run on a runner without
/// the shim.
pub(crate) const MISSING: &str = "executor \"acp\", and `permissions` on a CLI that asks through a hook, \
     need the gatehouse-acp binary on the runner: \
     build it with deploy/sandbox/build-relay.sh (it prints the directory holding it and \
     gatehouse-relay) and set [runner] acp to its path, or put it beside the relay binary";

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    use gatehouse_agent::{Executor, Role};
    use gatehouse_sandbox::{Job, JobLabels, Profile, SandboxKind};

    use super::{IN_CONTAINER, MISSING, equip};

    fn job(kind: SandboxKind) -> Job {
        Job {
            script: String::new(),
            env: BTreeMap::new(),
            workspace: PathBuf::from("/w"),
            artifacts: PathBuf::from("/a"),
            inputs: PathBuf::from("/i"),
            timeout: None,
            profile: Profile {
                kind,
                image: Some("debian:12".to_owned()),
                ..Profile::default()
            },
            labels: JobLabels {
                run: "r".to_owned(),
                node: "n".to_owned(),
                attempt: 1,
            },
            stdout_tail: 0,
            relay: None,
            home: None,
        }
    }

    const BINARY: &str = "/opt/runner/gatehouse-acp";

    #[test]
    fn a_container_gets_a_read_only_mount_and_a_process_the_host_path() {
        let role = Role::new(Executor::Acp);
        let mut docker = job(SandboxKind::Docker);
        equip(&mut docker, &role, Some(Path::new(BINARY))).unwrap();
        assert_eq!(docker.env["GATEHOUSE_ACP"], IN_CONTAINER);
        let mount = docker.profile.mounts.last().unwrap();
        assert_eq!(
            (mount.source.to_str(), mount.target.as_str()),
            (Some(BINARY), IN_CONTAINER)
        );
        assert_eq!(docker.profile.check(), Ok(()));

        let mut process = job(SandboxKind::Process);
        equip(&mut process, &role, Some(Path::new(BINARY))).unwrap();
        assert_eq!(process.env["GATEHOUSE_ACP"], BINARY);
        assert!(process.profile.mounts.is_empty());
    }

    #[test]
    fn only_acp_roles_need_it_and_without_it_they_fail_saying_how_to_build_it() {
        let mut other = job(SandboxKind::Docker);
        equip(&mut other, &Role::new(Executor::Codex), None).unwrap();
        assert!(other.env.is_empty() && other.profile.mounts.is_empty());

        let mut acp = job(SandboxKind::Docker);
        assert_eq!(
            equip(&mut acp, &Role::new(Executor::Acp), None),
            Err(MISSING.to_owned())
        );
        assert!(MISSING.contains("deploy/sandbox/build-relay.sh"));
    }
}
