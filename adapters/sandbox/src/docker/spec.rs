//! The container a node attempt runs in: the security contract, in one place.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use bollard::models::{
    ContainerCreateBody, HostConfig, HostConfigLogConfig, Mount, MountType, MountVolumeOptions,
};

use crate::{Job, Profile};

/// Where the node's artifact directory is in the container (read-write).
pub(super) const ARTIFACTS: &str = "/gatehouse/artifacts";
/// Where the artifacts of earlier nodes are in the container (read-only).
pub(crate) const INPUTS: &str = "/gatehouse/inputs";
/// Where the job's home directory is in the container (read-write), and its `HOME`.
pub(super) const HOME: &str = "/gatehouse/home";
/// Where the relay binary is in the container (read-only), when the job has one.
const RELAY: &str = "/gatehouse/relay";
/// `PATH` for scripts that do not declare their own.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// `/tmp` is a tmpfs (the root may be read-only), writable by the unprivileged user and
/// allowed to hold programs, which tools unpack there.
const TMPFS_OPTIONS: &str = "rw,nosuid,nodev,exec,mode=1777";

/// The host side of a job, resolved to absolute paths (Docker needs them).
#[derive(Debug)]
pub(super) struct HostPaths {
    pub(super) artifacts: PathBuf,
    pub(super) inputs: PathBuf,
    /// The job's home directory, when it has one.
    pub(super) home: Option<PathBuf>,
    /// The profile's extra mounts, sources resolved.
    pub(super) mounts: Vec<(PathBuf, String)>,
    /// The job's relay, its paths resolved.
    pub(super) relay: Option<HostRelay>,
}

/// The host side of a job's relay, resolved to absolute paths.
#[derive(Debug)]
pub(super) struct HostRelay {
    pub(super) binary: PathBuf,
    /// One socket per forward, in the forwards' order.
    pub(super) sockets: Vec<PathBuf>,
}

/// Where the relay finds the socket of its `index`th forward in the container.
fn socket_target(index: usize) -> String {
    format!("/gatehouse/sockets/{index}.sock")
}

/// Everything Docker needs to create the container.
pub(super) fn container_body(
    job: &Job,
    image: &str,
    volume: &str,
    user: &str,
    paths: &HostPaths,
    labels: HashMap<String, String>,
) -> ContainerCreateBody {
    let profile = &job.profile;
    ContainerCreateBody {
        image: Some(image.into()),
        // The entrypoint, not the command, so an image's own entrypoint cannot wrap the
        // script.
        entrypoint: Some(entrypoint(job)),
        env: Some(environment(job)),
        working_dir: Some(profile.workdir.clone()),
        user: Some(user.into()),
        labels: Some(labels),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        attach_stdin: Some(false),
        open_stdin: Some(false),
        tty: Some(false),
        host_config: Some(host_config(profile, volume, paths)),
        ..ContainerCreateBody::default()
    }
}

/// `sh -c SCRIPT`, behind the relay when the job has one: the relay binds its ports,
/// then runs the shell and exits with its code (Docker's init is pid 1, not the relay).
fn entrypoint(job: &Job) -> Vec<String> {
    let shell = ["sh".to_owned(), "-c".to_owned(), job.script.clone()];
    match &job.relay {
        None => shell.into(),
        Some(relay) => std::iter::once(RELAY.to_owned())
            .chain(relay.arguments(|i, _| socket_target(i)))
            .chain(shell)
            .collect(),
    }
}

/// The environment the script sees: the job's, the paths as seen in the container, and a
/// `PATH` and `HOME` unless the job sets them. Nothing of the runner's own.
fn environment(job: &Job) -> Vec<String> {
    let mut env: BTreeMap<&str, &str> = job
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    env.insert("GATEHOUSE_WORKSPACE", &job.profile.workdir);
    env.insert("GATEHOUSE_ARTIFACTS", ARTIFACTS);
    env.insert("GATEHOUSE_INPUTS", INPUTS);
    env.entry("PATH").or_insert(DEFAULT_PATH);
    env.entry("HOME")
        .or_insert(if job.home.is_some() { HOME } else { "/tmp" });
    env.into_iter().map(|(k, v)| format!("{k}={v}")).collect()
}

fn host_config(profile: &Profile, volume: &str, paths: &HostPaths) -> HostConfig {
    let mut mounts = vec![
        Mount {
            target: Some(profile.workdir.clone()),
            source: Some(volume.into()),
            typ: Some(MountType::VOLUME),
            read_only: Some(false),
            // An image with files at the workdir must not copy them into the workspace.
            volume_options: Some(MountVolumeOptions {
                no_copy: Some(true),
                ..MountVolumeOptions::default()
            }),
            ..Mount::default()
        },
        bind(&paths.artifacts, ARTIFACTS, false),
        bind(&paths.inputs, INPUTS, true),
    ];
    if let Some(home) = &paths.home {
        mounts.push(bind(home, HOME, false));
    }
    mounts.extend(
        paths
            .mounts
            .iter()
            .map(|(source, target)| bind(source, target, true)),
    );
    // Read-only: connecting to a socket needs no write access to its mount.
    if let Some(relay) = &paths.relay {
        mounts.push(bind(&relay.binary, RELAY, true));
        mounts.extend(
            relay
                .sockets
                .iter()
                .enumerate()
                .map(|(i, socket)| bind(socket, &socket_target(i), true)),
        );
    }
    let memory = profile
        .memory
        .map(|m| i64::try_from(m.as_u64()).unwrap_or(i64::MAX));
    HostConfig {
        mounts: Some(mounts),
        tmpfs: Some(HashMap::from([("/tmp".into(), TMPFS_OPTIONS.into())])),
        network_mode: Some(profile.network.clone()),
        cap_drop: Some(vec!["ALL".into()]),
        security_opt: Some(vec!["no-new-privileges".into()]),
        readonly_rootfs: Some(profile.read_only_root),
        memory,
        // The same as memory: no swap on top of the limit.
        memory_swap: memory,
        nano_cpus: profile.cpus.map(|cpus| (cpus * 1e9).round() as i64),
        pids_limit: profile.pids.map(i64::from),
        // An init as pid 1 reaps zombies and passes signals on.
        init: Some(true),
        // Output is read from the attach stream; Docker keeping a copy would only fill
        // its disk.
        log_config: Some(HostConfigLogConfig {
            typ: Some("none".into()),
            config: None,
        }),
        privileged: Some(false),
        auto_remove: Some(false),
        ..HostConfig::default()
    }
}

fn bind(source: &Path, target: &str, read_only: bool) -> Mount {
    Mount {
        target: Some(target.into()),
        source: Some(source.display().to_string()),
        typ: Some(MountType::BIND),
        read_only: Some(read_only),
        ..Mount::default()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use bytesize::ByteSize;

    use super::*;
    use crate::{JobLabels, SandboxKind};

    fn job() -> Job {
        Job {
            script: "echo hi".into(),
            env: BTreeMap::from([
                ("A".into(), "1".into()),
                ("GATEHOUSE_WORKSPACE".into(), "/host/ws".into()),
            ]),
            workspace: "/host/ws".into(),
            artifacts: "/host/art".into(),
            inputs: "/host/in".into(),
            timeout: None,
            profile: Profile {
                kind: SandboxKind::Docker,
                image: Some("img".into()),
                memory: Some(ByteSize::mib(64)),
                cpus: Some(0.5),
                pids: Some(32),
                ..Profile::default()
            },
            labels: JobLabels {
                run: "r".into(),
                node: "n".into(),
                attempt: 1,
            },
            stdout_tail: 0,
            relay: None,
            home: None,
        }
    }

    fn paths() -> HostPaths {
        HostPaths {
            artifacts: "/host/art".into(),
            inputs: "/host/in".into(),
            mounts: vec![("/opt/tools".into(), "/tools".into())],
            relay: None,
            home: None,
        }
    }

    #[test]
    fn the_container_is_locked_down() {
        let body = container_body(
            &job(),
            "img",
            "vol",
            "65534:65534",
            &paths(),
            HashMap::new(),
        );
        let host = body.host_config.unwrap();
        assert_eq!(host.cap_drop, Some(vec!["ALL".into()]));
        assert_eq!(host.security_opt, Some(vec!["no-new-privileges".into()]));
        assert_eq!(host.readonly_rootfs, Some(true));
        assert_eq!(host.network_mode.as_deref(), Some("none"));
        assert_eq!(host.memory, Some(64 << 20));
        assert_eq!(host.memory_swap, Some(64 << 20));
        assert_eq!(host.nano_cpus, Some(500_000_000));
        assert_eq!(host.pids_limit, Some(32));
        assert_eq!(host.init, Some(true));
        assert_eq!(host.privileged, Some(false));
        assert_eq!(host.binds, None);
        assert_eq!(body.user.as_deref(), Some("65534:65534"));
        assert_eq!(body.working_dir.as_deref(), Some("/workspace"));
        let mounts: Vec<_> = host
            .mounts
            .unwrap()
            .into_iter()
            .map(|m| (m.source.unwrap(), m.target.unwrap(), m.read_only.unwrap()))
            .collect();
        assert_eq!(
            mounts,
            [
                ("vol".into(), "/workspace".into(), false),
                ("/host/art".into(), ARTIFACTS.into(), false),
                ("/host/in".into(), INPUTS.into(), true),
                ("/opt/tools".into(), "/tools".into(), true),
            ]
        );
    }

    #[test]
    fn the_environment_is_the_jobs_with_container_paths() {
        assert_eq!(
            environment(&job()),
            [
                "A=1",
                "GATEHOUSE_ARTIFACTS=/gatehouse/artifacts",
                "GATEHOUSE_INPUTS=/gatehouse/inputs",
                "GATEHOUSE_WORKSPACE=/workspace",
                "HOME=/tmp",
                "PATH=/usr/local/bin:/usr/bin:/bin",
            ]
        );
        let mut own = job();
        own.env.insert("HOME".into(), "/workspace".into());
        own.env.insert("PATH".into(), "/opt/bin".into());
        let env = environment(&own);
        assert!(env.contains(&"HOME=/workspace".to_owned()));
        assert!(env.contains(&"PATH=/opt/bin".to_owned()));
    }

    #[test]
    fn a_relay_wraps_the_script_and_mounts_its_binary_and_sockets_read_only() {
        let mut job = job();
        job.relay = Some(crate::Relay {
            binary: "/host/relay".into(),
            forwards: vec![
                crate::Forward {
                    port: 8080,
                    socket: "/run/gw.sock".into(),
                },
                crate::Forward {
                    port: 3128,
                    socket: "/run/egress.sock".into(),
                },
            ],
        });
        let mut paths = paths();
        paths.relay = Some(HostRelay {
            binary: "/host/relay".into(),
            sockets: vec!["/run/gw.sock".into(), "/run/egress.sock".into()],
        });
        let body = container_body(&job, "img", "vol", "65534:65534", &paths, HashMap::new());
        assert_eq!(
            body.entrypoint.unwrap(),
            [
                "/gatehouse/relay",
                "--forward",
                "127.0.0.1:8080=/gatehouse/sockets/0.sock",
                "--forward",
                "127.0.0.1:3128=/gatehouse/sockets/1.sock",
                "--",
                "sh",
                "-c",
                "echo hi",
            ]
        );
        let host = body.host_config.unwrap();
        // The network stays the profile's.
        assert_eq!(host.network_mode.as_deref(), Some("none"));
        let mounts: Vec<_> = host
            .mounts
            .unwrap()
            .into_iter()
            .map(|m| (m.source.unwrap(), m.target.unwrap(), m.read_only.unwrap()))
            .skip(4)
            .collect();
        assert_eq!(
            mounts,
            [
                ("/host/relay".into(), "/gatehouse/relay".into(), true),
                (
                    "/run/gw.sock".into(),
                    "/gatehouse/sockets/0.sock".into(),
                    true
                ),
                (
                    "/run/egress.sock".into(),
                    "/gatehouse/sockets/1.sock".into(),
                    true
                ),
            ]
        );
    }

    #[test]
    fn without_a_relay_the_script_is_the_entrypoint() {
        let body = container_body(&job(), "img", "vol", "0", &paths(), HashMap::new());
        assert_eq!(body.entrypoint.unwrap(), ["sh", "-c", "echo hi"]);
    }
}
