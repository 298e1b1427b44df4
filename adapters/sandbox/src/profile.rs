//! Sandbox profiles: which sandbox a node runs in and with what limits.

use std::path::{Path, PathBuf};

use bytesize::ByteSize;
use gatehouse_egress::Policy;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Docker refuses containers with less memory than this.
const DOCKER_MIN_MEMORY: u64 = 6 * 1024 * 1024;
/// Where Docker's socket usually lives; mounting it (or a directory holding it) hands the
/// script the host.
const DOCKER_SOCKETS: [&str; 2] = ["/var/run/docker.sock", "/run/docker.sock"];

/// `[sandbox.profiles.<name>]` in the config; a run freezes the profile it starts with
/// (serialized as JSON into the store), so it must round-trip through serde_json and TOML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    #[serde(default)]
    pub kind: SandboxKind,
    /// The image a Docker node runs in; required for `docker`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// `none` (the default): no route out at all; the sandbox reaches the model gateway and
    /// the hosts `egress` allows through the runner. Otherwise a Docker network such as
    /// `bridge`, which hands the sandbox that whole network ([`Profile::warnings`] says so);
    /// `host` and `container:*` are refused ([`Profile::check`]).
    #[serde(default = "default_network")]
    pub network: String,
    /// Hosts the sandbox may reach through the runner's egress proxy, as host patterns
    /// (`crates.io`, `*.npmjs.org`, `registry.example.com:8443`); a role's `egress` adds
    /// to them. Nothing else is reachable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress: Vec<String>,
    /// Curated host lists to add to `egress` by name: `rust`, `node`, `python`, `debian`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress_defaults: Vec<String>,
    /// Private networks (`10.20.0.0/16`) an allowed host may resolve into, for an internal
    /// mirror; without one, a host resolving to a private address is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress_private_networks: Vec<String>,
    /// Memory limit, swap included ("1GiB", "64MiB").
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "exact_size::serialize"
    )]
    pub memory: Option<ByteSize>,
    /// CPU limit, in CPUs (fractions allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
    /// Most processes (and threads) the container may hold at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids: Option<u32>,
    /// The numeric user the script runs as, `uid` or `uid:gid`; by default an unprivileged
    /// one (see the Docker sandbox).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Where the workspace is mounted in the container, and the script's working directory.
    #[serde(default = "default_workdir")]
    pub workdir: String,
    /// Whether the container's root filesystem is read-only; a profile whose image needs
    /// to write outside the workspace and `/tmp` turns it off.
    #[serde(default = "default_read_only_root")]
    pub read_only_root: bool,
    /// Extra host paths the script may read (always read-only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<Mount>,
}

/// Which sandbox runs a node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxKind {
    /// A local process group: no isolation beyond the environment, only the timeout.
    #[default]
    Process,
    /// A fresh Docker container per node attempt.
    Docker,
}

impl std::fmt::Display for SandboxKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SandboxKind::Process => "process",
            SandboxKind::Docker => "docker",
        })
    }
}

/// A host path shown read-only inside the container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mount {
    /// The absolute host path.
    pub source: PathBuf,
    /// The absolute path in the container.
    pub target: String,
}

/// Why a profile cannot be used; each message says what to change.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ProfileError {
    /// A Docker profile without an image.
    #[error("a docker profile needs `image`, e.g. image = \"gatehouse-sandbox:busybox\"")]
    MissingImage,
    /// Less memory than Docker accepts.
    #[error("memory {0} is below Docker's minimum of 6 MiB; raise it")]
    MemoryTooLow(ByteSize),
    /// A CPU limit that is zero, negative or not a number.
    #[error("cpus must be a positive number, e.g. cpus = 1.5; got {0}")]
    BadCpus(f64),
    /// A pids limit of zero, which would not even let the shell start.
    #[error("pids must be at least 1 (the shell itself is a process); remove it for no limit")]
    ZeroPids,
    /// A user that is not `uid` or `uid:gid`.
    #[error("user `{0}` must be numeric, `uid` or `uid:gid` (e.g. \"1000:1000\")")]
    BadUser(String),
    /// A workdir that is not an absolute container path.
    #[error("workdir `{0}` must be an absolute path in the container, e.g. \"/workspace\"")]
    RelativeWorkdir(String),
    /// A mount whose target is not absolute.
    #[error("mount target `{0}` must be an absolute path in the container")]
    RelativeMountTarget(String),
    /// A mount whose source is not absolute.
    #[error("mount source `{0}` must be an absolute host path")]
    RelativeMountSource(PathBuf),
    /// `network = "host"`: the sandbox would share the host's network, and with it reach
    /// Gatehouse's own API, NATS and Postgres on loopback.
    #[error(
        "network \"host\" shares the host's network: the sandbox would reach Gatehouse's API, \
         NATS and Postgres on loopback. Use network = \"none\" (the default) and list the hosts \
         it needs in `egress`"
    )]
    HostNetwork,
    /// `network = "container:..."`: the sandbox would join another container's network.
    #[error(
        "network \"{0}\" joins another container's network and everything it can reach. Use \
         network = \"none\" (the default) and list the hosts the sandbox needs in `egress`"
    )]
    ContainerNetwork(String),
    /// An `egress`, `egress_defaults` or `egress_private_networks` entry that cannot be used.
    #[error("{0}")]
    Egress(String),
    /// A mount that would hand the script the Docker socket.
    #[error(
        "mount source `{0}` exposes the Docker socket, which gives the script the whole host; remove that mount"
    )]
    DockerSocket(PathBuf),
}

impl Default for Profile {
    fn default() -> Self {
        Self {
            kind: SandboxKind::Process,
            image: None,
            network: default_network(),
            egress: Vec::new(),
            egress_defaults: Vec::new(),
            egress_private_networks: Vec::new(),
            memory: None,
            cpus: None,
            pids: None,
            user: None,
            workdir: default_workdir(),
            read_only_root: default_read_only_root(),
            mounts: Vec::new(),
        }
    }
}

impl Profile {
    /// Problems a config check reports before anything runs: docker without image, memory
    /// below 6 MiB (Docker's minimum), cpus <= 0 or not finite, pids 0, user not numeric
    /// `uid[:gid]`, workdir or mount target not absolute, mount source not absolute, any
    /// mount of the Docker socket (refused always). Returns the first one found.
    pub fn check(&self) -> Result<(), ProfileError> {
        if self.kind == SandboxKind::Docker && self.image.as_deref().is_none_or(str::is_empty) {
            return Err(ProfileError::MissingImage);
        }
        if let Some(memory) = self.memory
            && memory.as_u64() < DOCKER_MIN_MEMORY
        {
            return Err(ProfileError::MemoryTooLow(memory));
        }
        if let Some(cpus) = self.cpus
            && !(cpus.is_finite() && cpus > 0.0)
        {
            return Err(ProfileError::BadCpus(cpus));
        }
        if self.pids == Some(0) {
            return Err(ProfileError::ZeroPids);
        }
        if self.network == "host" {
            return Err(ProfileError::HostNetwork);
        }
        if self.network.starts_with("container:") {
            return Err(ProfileError::ContainerNetwork(self.network.clone()));
        }
        self.egress_policy(&[])?;
        if let Some(user) = &self.user
            && parse_user(user).is_none()
        {
            return Err(ProfileError::BadUser(user.clone()));
        }
        if !self.workdir.starts_with('/') {
            return Err(ProfileError::RelativeWorkdir(self.workdir.clone()));
        }
        for mount in &self.mounts {
            if !mount.target.starts_with('/') {
                return Err(ProfileError::RelativeMountTarget(mount.target.clone()));
            }
            if !mount.source.is_absolute() {
                return Err(ProfileError::RelativeMountSource(mount.source.clone()));
            }
            if exposes_docker_socket(&mount.source) {
                return Err(ProfileError::DockerSocket(mount.source.clone()));
            }
        }
        Ok(())
    }
}

impl Profile {
    /// What the sandbox may reach through the egress proxy: the profile's `egress` and
    /// `egress_defaults` with the role's `role_egress` added, and its allowed private
    /// networks. An entry that is not a host pattern, an unknown default list or a network
    /// that is not wholly private is the error, naming it and what to write.
    pub fn egress_policy(&self, role_egress: &[String]) -> Result<Policy, ProfileError> {
        let egress = |e: gatehouse_egress::EgressError| ProfileError::Egress(e.to_string());
        let networks = self
            .egress_private_networks
            .iter()
            .map(|entry| Policy::parse_network(entry))
            .collect::<Result<Vec<_>, _>>()
            .map_err(egress)?;
        Policy::from_config(self.egress.iter().chain(role_egress), &self.egress_defaults)
            .and_then(|policy| policy.with_private_networks(networks))
            .map_err(egress)
    }

    /// What a config check says about a profile it accepts: a `network` other than `none`
    /// gives the sandbox that whole network, around the egress allow-list.
    pub fn warnings(&self) -> Vec<String> {
        if self.kind == SandboxKind::Docker && self.network != "none" {
            vec![format!(
                "network \"{}\" gives the sandbox that whole network, and every script it runs \
                 with it; `egress` cannot limit it. Prefer network = \"none\" with `egress`",
                self.network
            )]
        } else {
            Vec::new()
        }
    }
}

/// `uid` or `uid:gid`, both numeric.
pub(crate) fn parse_user(user: &str) -> Option<(u32, Option<u32>)> {
    match user.split_once(':') {
        Some((uid, gid)) => Some((uid.parse().ok()?, Some(gid.parse().ok()?))),
        None => Some((user.parse().ok()?, None)),
    }
}

/// Whether mounting `source` would show the script a Docker socket: the socket itself
/// (any file named `docker.sock`) or a directory that holds one of the usual sockets.
pub(crate) fn exposes_docker_socket(source: &Path) -> bool {
    if source.file_name().is_some_and(|name| name == "docker.sock") {
        return true;
    }
    DOCKER_SOCKETS
        .iter()
        .any(|socket| Path::new(socket).starts_with(source))
}

fn default_network() -> String {
    "none".into()
}

fn default_workdir() -> String {
    "/workspace".into()
}

fn default_read_only_root() -> bool {
    true
}

/// Writes sizes exactly: `ByteSize`'s own serializer rounds ("976.6 KiB"), and a frozen
/// profile must read back the limit it ran with.
mod exact_size {
    use bytesize::ByteSize;
    use serde::Serializer;

    const UNITS: [(u64, &str); 4] = [
        (1 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ];

    pub(super) fn serialize<S: Serializer>(
        size: &Option<ByteSize>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match size {
            Some(size) => serializer.serialize_str(&exact(size.as_u64())),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn exact(bytes: u64) -> String {
        UNITS
            .iter()
            .find(|(unit, _)| bytes != 0 && bytes.is_multiple_of(*unit))
            .map_or_else(
                || format!("{bytes} B"),
                |(unit, name)| format!("{} {name}", bytes / unit),
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docker() -> Profile {
        Profile {
            kind: SandboxKind::Docker,
            image: Some("gatehouse-sandbox:busybox".into()),
            ..Profile::default()
        }
    }

    #[test]
    fn an_empty_table_is_the_default_process_profile() {
        let profile: Profile = serde_json::from_str("{}").unwrap();
        assert_eq!(profile, Profile::default());
        assert_eq!(profile.kind, SandboxKind::Process);
        assert_eq!(profile.network, "none");
        assert_eq!(profile.workdir, "/workspace");
        assert!(profile.read_only_root);
        assert_eq!(profile.check(), Ok(()));
    }

    #[test]
    fn a_full_profile_round_trips_exactly() {
        let profile: Profile = serde_json::from_str(
            r#"{
                "kind": "docker", "image": "gatehouse-sandbox:git", "network": "bridge",
                "memory": "1GiB", "cpus": 1.5, "pids": 256, "user": "1000:1000",
                "workdir": "/src", "read_only_root": false,
                "mounts": [{"source": "/opt/tools", "target": "/tools"}]
            }"#,
        )
        .unwrap();
        assert_eq!(profile.memory, Some(ByteSize::gib(1)));
        assert_eq!(profile.check(), Ok(()));
        let json = serde_json::to_string(&profile).unwrap();
        assert!(json.contains(r#""memory":"1 GiB""#), "{json}");
        assert_eq!(serde_json::from_str::<Profile>(&json).unwrap(), profile);

        // Sizes that are not whole units keep every byte.
        let odd = Profile {
            memory: Some(ByteSize::b(10_000_001)),
            ..docker()
        };
        let json = serde_json::to_string(&odd).unwrap();
        assert_eq!(serde_json::from_str::<Profile>(&json).unwrap(), odd);
    }

    #[test]
    fn defaults_are_left_out_when_serialized() {
        let json = serde_json::to_string(&Profile::default()).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"process","network":"none","workdir":"/workspace","read_only_root":true}"#
        );
    }

    #[test]
    fn memory_reads_human_sizes() {
        let profile: Profile = serde_json::from_str(r#"{"memory": "64MiB"}"#).unwrap();
        assert_eq!(profile.memory, Some(ByteSize::mib(64)));
        assert_eq!("1GiB".parse::<ByteSize>().unwrap(), ByteSize::gib(1));
        assert_eq!(exact_size::exact(64 << 20), "64 MiB");
        assert_eq!(exact_size::exact(3 << 10), "3 KiB");
        assert_eq!(exact_size::exact(1536), "1536 B");
        assert_eq!(exact_size::exact(0), "0 B");
    }

    #[test]
    fn unknown_fields_and_kinds_are_refused() {
        assert!(serde_json::from_str::<Profile>(r#"{"memroy": "1GiB"}"#).is_err());
        assert!(serde_json::from_str::<Profile>(r#"{"kind": "vm"}"#).is_err());
        assert!(
            serde_json::from_str::<Profile>(
                r#"{"mounts": [{"source": "/a", "target": "/b", "rw": true}]}"#
            )
            .is_err()
        );
    }

    #[test]
    fn check_reports_what_to_change() {
        let cases: Vec<(Profile, ProfileError)> = vec![
            (
                Profile {
                    image: None,
                    ..docker()
                },
                ProfileError::MissingImage,
            ),
            (
                Profile {
                    memory: Some(ByteSize::mib(5)),
                    ..docker()
                },
                ProfileError::MemoryTooLow(ByteSize::mib(5)),
            ),
            (
                Profile {
                    cpus: Some(0.0),
                    ..docker()
                },
                ProfileError::BadCpus(0.0),
            ),
            (
                Profile {
                    pids: Some(0),
                    ..docker()
                },
                ProfileError::ZeroPids,
            ),
            (
                Profile {
                    user: Some("nobody".into()),
                    ..docker()
                },
                ProfileError::BadUser("nobody".into()),
            ),
            (
                Profile {
                    user: Some("1000:".into()),
                    ..docker()
                },
                ProfileError::BadUser("1000:".into()),
            ),
            (
                Profile {
                    workdir: "workspace".into(),
                    ..docker()
                },
                ProfileError::RelativeWorkdir("workspace".into()),
            ),
            (
                Profile {
                    mounts: vec![Mount {
                        source: "/opt".into(),
                        target: "opt".into(),
                    }],
                    ..docker()
                },
                ProfileError::RelativeMountTarget("opt".into()),
            ),
            (
                Profile {
                    mounts: vec![Mount {
                        source: "opt".into(),
                        target: "/opt".into(),
                    }],
                    ..docker()
                },
                ProfileError::RelativeMountSource("opt".into()),
            ),
        ];
        for (profile, expected) in cases {
            assert_eq!(profile.check(), Err(expected));
        }
        assert!(matches!(
            Profile {
                cpus: Some(f64::NAN),
                ..docker()
            }
            .check(),
            Err(ProfileError::BadCpus(_))
        ));
        assert_eq!(
            Profile {
                memory: Some(ByteSize::mib(6)),
                cpus: Some(0.5),
                pids: Some(1),
                user: Some("1000".into()),
                ..docker()
            }
            .check(),
            Ok(())
        );
        assert_eq!(
            ProfileError::MissingImage.to_string(),
            "a docker profile needs `image`, e.g. image = \"gatehouse-sandbox:busybox\""
        );
    }

    #[test]
    fn no_network_reaches_around_the_sandbox() {
        let host = Profile {
            network: "host".into(),
            ..docker()
        };
        assert_eq!(host.check(), Err(ProfileError::HostNetwork));
        assert!(
            host.check()
                .unwrap_err()
                .to_string()
                .contains("NATS and Postgres")
        );
        let joined = Profile {
            network: "container:gatehouse".into(),
            ..docker()
        };
        assert_eq!(
            joined.check(),
            Err(ProfileError::ContainerNetwork("container:gatehouse".into()))
        );
        let bridge = Profile {
            network: "bridge".into(),
            ..docker()
        };
        assert_eq!(bridge.check(), Ok(()));
        assert_eq!(bridge.warnings().len(), 1);
        assert!(bridge.warnings()[0].contains("whole network"));
        assert!(docker().warnings().is_empty());
    }

    #[test]
    fn egress_entries_are_checked_with_the_profile() {
        let profile = Profile {
            egress: vec!["crates.io".into(), "registry.example.com:8443".into()],
            egress_defaults: vec!["node".into()],
            egress_private_networks: vec!["10.20.0.0/16".into()],
            ..docker()
        };
        assert_eq!(profile.check(), Ok(()));
        let policy = profile.egress_policy(&["pypi.org".to_owned()]).unwrap();
        assert!(policy.allows("crates.io", 443));
        assert!(policy.allows("registry.npmjs.org", 443));
        assert!(policy.allows("pypi.org", 443));
        assert!(!policy.allows("example.com", 443));
        assert_eq!(policy.private_networks().len(), 1);

        for (field, bad) in [
            ("egress", "https://crates.io/"),
            ("egress_defaults", "haskell"),
            ("egress_private_networks", "0.0.0.0/0"),
        ] {
            let mut profile = docker();
            match field {
                "egress" => profile.egress = vec![bad.into()],
                "egress_defaults" => profile.egress_defaults = vec![bad.into()],
                _ => profile.egress_private_networks = vec![bad.into()],
            }
            let Err(ProfileError::Egress(message)) = profile.check() else {
                panic!("{field} = {bad} was accepted");
            };
            assert!(
                message.contains(bad.trim_end_matches('/').trim_start_matches("https://")),
                "{message}"
            );
        }
        // A round trip keeps the lists.
        let json = serde_json::to_string(&profile).unwrap();
        assert_eq!(serde_json::from_str::<Profile>(&json).unwrap(), profile);
    }

    #[test]
    fn the_docker_socket_is_never_mounted() {
        for source in [
            "/var/run/docker.sock",
            "/run/docker.sock",
            "/home/me/.docker/run/docker.sock",
            "/var/run",
            "/run",
            "/var",
            "/",
        ] {
            let profile = Profile {
                mounts: vec![Mount {
                    source: source.into(),
                    target: "/x".into(),
                }],
                ..docker()
            };
            assert_eq!(
                profile.check(),
                Err(ProfileError::DockerSocket(source.into())),
                "{source}"
            );
        }
        // A process profile is refused too: the profile may be switched to docker later.
        let process = Profile {
            mounts: vec![Mount {
                source: "/run/docker.sock".into(),
                target: "/s".into(),
            }],
            ..Profile::default()
        };
        assert!(process.check().is_err());
        assert!(!exposes_docker_socket(Path::new("/var/run/user")));
        assert!(!exposes_docker_socket(Path::new("/opt/tools")));
    }
}
