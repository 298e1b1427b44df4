//! `[server]`, `[runner]` and `[sandbox]`: where this process listens, keeps its data and
//! finds its bus, and how its runner runs nodes.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use gatehouse_events::Prefix;
use gatehouse_sandbox::Profile;
use serde::{Deserialize, Serialize};

use super::ConfigError;

use crate::secret::Secret;

/// `[server]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// HTTP listen address.
    pub listen: String,
    /// SQLite file, workspaces, artifacts, admin token (embedded mode).
    pub data_dir: PathBuf,
    /// Empty: SQLite in `data_dir`; otherwise `postgres://...` or `sqlite:...`.
    pub database_url: String,
    /// Empty: the in-process bus; otherwise `nats://...`.
    pub nats_url: String,
    /// Prefix of this deployment's streams and subjects.
    pub nats_prefix: Prefix,
    /// Directories of SOP YAML files, loaded beside the built-ins.
    pub sop_dirs: Vec<PathBuf>,
    /// How often `sop_dirs` are looked at for added, removed or edited files, which new
    /// runs then start on; `0s`: only at start and on `gatehouse sop reload`.
    #[serde(with = "humantime_serde")]
    pub sop_reload: Duration,
    /// Where people reach this Gatehouse (`https://gatehouse.example.com`), for links in
    /// comments; empty: no links.
    pub public_url: String,
    /// A request's headers must arrive within this long of its first byte (and a kept-alive
    /// HTTP/1 connection must start its next request within it), so a client that sends a
    /// few bytes and stalls does not hold a connection.
    #[serde(with = "humantime_serde")]
    pub header_timeout: Duration,
    /// A request's whole body must arrive within this long of its headers; a client that
    /// trickles it is answered 408 and disconnected.
    #[serde(with = "humantime_serde")]
    pub body_timeout: Duration,
    /// A connection with no request in flight and no bytes either way for this long is
    /// closed (HTTP/2 connections, clients that stop reading their answer).
    #[serde(with = "humantime_serde")]
    pub idle_timeout: Duration,
    /// Connections open at once per listener; past it new connections wait in the kernel's
    /// listen backlog (and are refused by the kernel once that is full) until one closes.
    pub max_connections: usize,
    /// Webhook bodies (GitHub, Slack, Discord) read at once before their signature is
    /// checked; past it a webhook is answered 503 with `Retry-After` without being read.
    /// Body memory of unverified requests stays below this × the largest `max_body_bytes`.
    pub max_unverified_bodies: usize,
    /// How long a webhook waits, unread, for one of those slots before it is answered 503:
    /// a burst of deliveries is taken as slots free instead of being sent away.
    #[serde(with = "humantime_serde")]
    pub webhook_slot_wait: Duration,
    /// Where `/metrics` is served instead of on `listen` (e.g. `127.0.0.1:9090`, a port
    /// only the scraper reaches); empty: on `listen`. When set, `listen` answers 404 there.
    pub metrics_listen: String,
    /// When set, `/metrics` needs `Authorization: Bearer <this>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_token: Option<Secret>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        let limits = gatehouse_fleet::Limits::default();
        Self {
            listen: "127.0.0.1:8080".into(),
            data_dir: ".gatehouse".into(),
            database_url: String::new(),
            nats_url: String::new(),
            nats_prefix: Prefix::default(),
            sop_dirs: vec!["sops".into()],
            sop_reload: Duration::from_secs(2),
            public_url: String::new(),
            header_timeout: limits.header_timeout,
            body_timeout: limits.body_timeout,
            idle_timeout: limits.idle_timeout,
            max_connections: limits.max_connections,
            max_unverified_bodies: 16,
            webhook_slot_wait: Duration::from_secs(2),
            metrics_listen: String::new(),
            metrics_token: None,
        }
    }
}

impl ServerConfig {
    /// The database URL to use: the configured one, or the embedded SQLite file.
    pub fn effective_database_url(&self) -> String {
        if self.database_url.is_empty() {
            format!("sqlite:{}", self.data_dir.join("gatehouse.db").display())
        } else {
            self.database_url.clone()
        }
    }

    /// Checks the listener limits: a zero would refuse every request or connection.
    pub(super) fn check(&self) -> Result<(), ConfigError> {
        let zero =
            |key: &str| ConfigError::Inconsistent(format!("server.{key} must be more than zero"));
        for (key, value) in [
            ("header_timeout", self.header_timeout),
            ("body_timeout", self.body_timeout),
            ("idle_timeout", self.idle_timeout),
        ] {
            if value.is_zero() {
                return Err(zero(key));
            }
        }
        if self.max_connections == 0 {
            return Err(zero("max_connections"));
        }
        if self.max_unverified_bodies == 0 {
            return Err(zero("max_unverified_bodies"));
        }
        Ok(())
    }
}

/// `[runner]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunnerConfig {
    /// Node attempts run at once. Default: four per core (at least four): an attempt
    /// mostly waits, on its process or its agent's model, and a burst of short ones is
    /// held back by the slots rather than by the machine.
    pub concurrency: usize,
    /// A job's lease: renewed while it runs; after a crash the job comes back (and is
    /// reported as interrupted) once this has passed.
    #[serde(with = "humantime_serde")]
    pub lease: Duration,
    /// Output stored per node attempt; the rest is counted and dropped, with a note.
    pub log_limit: bytesize::ByteSize,
    /// The largest artifact a node may leave: a larger one fails the attempt, unread.
    pub artifact_limit: bytesize::ByteSize,
    /// Names this runner among the runners: the holder of the workspaces it checkpoints
    /// (their runs' next nodes wait briefly for it), and the owner of what it must clean
    /// up after a crash on a Docker engine or data directory it shares. Default: the host
    /// name; give each runner its own.
    pub id: String,
    /// At shutdown (SIGTERM), how long node attempts in flight may take to finish before
    /// they are stopped and reported as interrupted. Keep it below the platform's own
    /// grace (Kubernetes' `terminationGracePeriodSeconds`, compose's `stop_grace_period`).
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: Duration,
    /// How many times in a row a node's attempt lost to the infrastructure (a runner
    /// killed, a lease run out, a shutdown past its grace) is run again as a new attempt,
    /// apart from the node's own `retry`. Read by the scheduler; a node that must not
    /// repeat says `on_interrupt: fail`.
    pub interrupt_retries: u32,
    /// The static `gatehouse-relay` binary (built by deploy/sandbox/build-relay.sh) that
    /// isolated sandboxes run to reach the model gateway and egress proxy. Default: a
    /// `gatehouse-relay` beside the `gatehouse` binary, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay: Option<std::path::PathBuf>,
    /// The static `gatehouse-acp` shim (built by deploy/sandbox/build-relay.sh, beside the
    /// relay) that `acp` roles run in their sandbox to drive an Agent Client Protocol agent.
    /// Default: a `gatehouse-acp` beside the relay binary, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acp: Option<std::path::PathBuf>,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        Self {
            concurrency: default_concurrency(),
            lease: Duration::from_secs(30),
            log_limit: bytesize::ByteSize::mib(1),
            artifact_limit: bytesize::ByteSize::mib(64),
            shutdown_grace: Duration::from_secs(20),
            interrupt_retries: 2,
            relay: None,
            acp: None,
            id: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_owned())
                .unwrap_or_else(|_| "runner".into()),
        }
    }
}

/// `[sandbox]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Named profiles; SOPs, nodes and agent roles pick one by name.
    #[serde(default = "default_profiles")]
    pub profiles: BTreeMap<String, Profile>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            profiles: default_profiles(),
        }
    }
}

fn default_profiles() -> BTreeMap<String, Profile> {
    BTreeMap::from([("default".to_owned(), Profile::default())])
}

/// Four node attempts per core this process may run on, and at least four.
fn default_concurrency() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    cores.saturating_mul(4).max(4)
}
