//! How a sandbox reaches anything outside: the runner's model gateway and egress proxy.
//!
//! A sandbox has no route out. The runner serves the gateway (model requests, the
//! provider's key swapped in here and nowhere else) and the egress proxy (CONNECT to the
//! hosts the profile and role allow) on Unix sockets, which an isolated sandbox reaches
//! through its relay as `127.0.0.1:GATEWAY_PORT` and `127.0.0.1:EGRESS_PORT`, and on
//! loopback TCP ports for a process sandbox that shares the runner's network. Each attempt
//! gets its own tokens ([`Network::open`]); they stop working when its [`Reach`] is
//! dropped, so a finished or dead attempt's token is refused.

mod ledger;
mod meter;
mod reach;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use gatehouse_egress::{Connection, Egress, Grants, Policy, Verdict};
use gatehouse_gateway::{Gateway, GatewayConfig, GrantSpec};
use gatehouse_sandbox::{Forward, Profile, Relay};
use gatehouse_store::{ConnectionOwner, ConnectionRow, ConnectionVerdict};
use tokio_util::sync::CancellationToken;

pub(crate) use ledger::{Ledger, NoteTo, Refusal};
pub(crate) use reach::Reach;

use meter::Meter;

use crate::mcp::{self, AttemptTools, Desk};

/// The gateway's port on an isolated sandbox's loopback.
const GATEWAY_PORT: u16 = 8718;
/// The egress proxy's port on an isolated sandbox's loopback.
const EGRESS_PORT: u16 = 8719;
/// Gatehouse's tools' port (its MCP server for agents) on an isolated sandbox's loopback.
const TOOLS_PORT: u16 = 8720;
/// Connections kept per attempt; past it they are counted, not kept (the store keeps no
/// more either).
const CONNECTIONS_KEPT: usize = gatehouse_store::MAX_CONNECTIONS_PER_ATTEMPT;
/// The longest Unix socket path the kernel takes (`sun_path` less its NUL).
const SOCKET_PATH_MAX: usize = 107;

/// The runner's gateway and egress proxy, serving until the runner shuts down.
pub(crate) struct Network {
    gateway: Option<Gateway>,
    /// The attempts served Gatehouse's tools ([`crate::mcp`]).
    desk: Desk,
    egress: Grants,
    /// Connections by attempt label, until the attempt takes them.
    connections: Arc<Mutex<HashMap<Arc<str>, Connections>>>,
    sockets: Sockets,
    loopback: Loopback,
    /// The static relay binary isolated sandboxes run; without it they cannot reach the
    /// sockets, and an attempt that needs them fails saying how to build it.
    relay: Option<PathBuf>,
}

/// What an attempt's proxy connections were.
#[derive(Debug, Default)]
pub(crate) struct Connections {
    pub(crate) kept: Vec<Connection>,
    /// Connections past [`CONNECTIONS_KEPT`], counted only.
    pub(crate) dropped: u64,
}

impl Connections {
    /// The connections as the store keeps them, for the attempt `attempt` of `owner`.
    pub(crate) fn rows(&self, owner: &ConnectionOwner, attempt: u32) -> Vec<ConnectionRow> {
        self.kept
            .iter()
            .map(|c| {
                let (verdict, reason) = match &c.verdict {
                    Verdict::Allowed => (ConnectionVerdict::Allowed, None),
                    Verdict::Refused(refusal) => (
                        ConnectionVerdict::Refused,
                        Some(refusal.explain(&c.host, c.port).trim().to_owned()),
                    ),
                };
                ConnectionRow {
                    owner: owner.clone(),
                    attempt: i32::try_from(attempt).unwrap_or(i32::MAX),
                    host: c.host.clone(),
                    port: c.port,
                    verdict,
                    reason,
                    bytes_up: c.bytes_up,
                    bytes_down: c.bytes_down,
                    started_at: c.started,
                    duration_ms: u64::try_from(c.duration.as_millis()).unwrap_or(u64::MAX),
                }
            })
            .collect()
    }

    /// The refused hosts, each once, as the thread shows them ("blocked pypi.org:443 —
    /// add it to the profile's egress").
    pub(crate) fn notices(&self) -> Vec<String> {
        let mut notices: Vec<String> = Vec::new();
        for notice in self.kept.iter().filter_map(Connection::blocked_notice) {
            if !notices.contains(&notice) {
                notices.push(notice);
            }
        }
        notices
    }
}

/// Where the Unix sockets are, on the host.
#[derive(Debug, Clone)]
struct Sockets {
    gateway: PathBuf,
    egress: PathBuf,
    tools: PathBuf,
}

/// The loopback addresses a sandbox sharing the runner's network uses.
#[derive(Debug, Clone, Copy)]
struct Loopback {
    gateway: SocketAddr,
    egress: SocketAddr,
    tools: SocketAddr,
}

/// What an attempt asks to reach.
pub(crate) struct Wants<'a> {
    /// Who the attempt is, for logs and the gateway's records (never a secret).
    pub(crate) label: String,
    /// The role's provider and the models it may ask for, for an agent.
    pub(crate) provider: Option<(&'a str, &'a [String])>,
    /// The role's own egress entries.
    pub(crate) role_egress: &'a [String],
    /// The sandbox profile.
    pub(crate) profile: &'a Profile,
    /// The attempt's budgets, asked before each model request and charged after it;
    /// `None` when none applies.
    pub(crate) budget: Option<Arc<Ledger>>,
    /// What Gatehouse's tools act on, for an agent's attempt; `None` for a script.
    pub(crate) tools: Option<Arc<AttemptTools>>,
}

impl Network {
    /// Binds the sockets under `dir` and loopback ports and serves the gateway (fronting
    /// `providers`), the egress proxy and Gatehouse's tools (forwarding to the remote MCP
    /// servers `remotes`) until `shutdown`. `relay`: the static relay binary for isolated
    /// sandboxes.
    pub(crate) async fn start(
        dir: &Path,
        providers: Vec<gatehouse_gateway::Provider>,
        relay: Option<PathBuf>,
        remotes: std::collections::BTreeMap<String, Arc<gatehouse_gateway::RemoteMcp>>,
        shutdown: CancellationToken,
    ) -> Result<Self, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("creating the socket directory {}: {e}", dir.display()))?;
        let sockets = Sockets {
            gateway: dir.join("gateway.sock"),
            egress: dir.join("egress.sock"),
            tools: dir.join("tools.sock"),
        };
        let unix = |path: &Path| -> Result<tokio::net::UnixListener, String> {
            if path.as_os_str().len() > SOCKET_PATH_MAX {
                return Err(format!(
                    "the socket path {} is longer than the {SOCKET_PATH_MAX} bytes a Unix socket may have; use a shorter data_dir",
                    path.display()
                ));
            }
            // One left by a runner killed before it could remove it.
            let _ = std::fs::remove_file(path);
            let listener = tokio::net::UnixListener::bind(path)
                .map_err(|e| format!("listening on {}: {e}", path.display()))?;
            // Sandboxes run as other users; the tokens, not the file mode, say who may.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))
                .map_err(|e| format!("opening {} to sandboxes: {e}", path.display()))?;
            Ok(listener)
        };
        let tcp = || async {
            tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .map_err(|e| format!("listening on a loopback port: {e}"))
        };
        let gateway_socket = unix(&sockets.gateway)?;
        let egress_socket = unix(&sockets.egress)?;
        let tools_socket = unix(&sockets.tools)?;
        let (gateway_tcp, egress_tcp, tools_tcp) = (tcp().await?, tcp().await?, tcp().await?);
        let address = |l: &tokio::net::TcpListener| {
            l.local_addr()
                .map_err(|e| format!("reading a loopback port: {e}"))
        };
        let loopback = Loopback {
            gateway: address(&gateway_tcp)?,
            egress: address(&egress_tcp)?,
            tools: address(&tools_tcp)?,
        };

        let gateway = if providers.is_empty() {
            None
        } else {
            let url = format!("http://{}", loopback.gateway);
            let url = url::Url::parse(&url).map_err(|e| format!("the gateway's address: {e}"))?;
            let gateway = Gateway::new(GatewayConfig::new(url), providers)
                .map_err(|e| format!("the model gateway: {e}"))?;
            serve_gateway(&gateway, gateway_socket, &shutdown);
            serve_gateway(&gateway, gateway_tcp, &shutdown);
            Some(gateway)
        };
        let egress = Grants::new();
        let connections: Arc<Mutex<HashMap<Arc<str>, Connections>>> = Arc::default();
        let proxy = Egress::default();
        serve_egress(&proxy, egress_socket, &egress, &connections, &shutdown);
        serve_egress(&proxy, egress_tcp, &egress, &connections, &shutdown);
        let desk = Desk::new(remotes);
        crate::mcp::serve(&desk, tools_socket, &shutdown);
        crate::mcp::serve(&desk, tools_tcp, &shutdown);
        Ok(Self {
            gateway,
            desk,
            egress,
            connections,
            sockets,
            loopback,
            relay,
        })
    }
}

/// Serves the gateway on `listener` until `shutdown`.
fn serve_gateway<L>(gateway: &Gateway, listener: L, shutdown: &CancellationToken)
where
    L: gatehouse_gateway::Listener + 'static,
{
    let (gateway, stop) = (gateway.clone(), shutdown.clone());
    tokio::spawn(async move { gateway.serve(listener, stop.cancelled_owned()).await });
}

/// Serves the egress proxy on `listener` until `shutdown`, its connections kept by label.
fn serve_egress<L: gatehouse_egress::Listener>(
    proxy: &Egress,
    listener: L,
    grants: &Grants,
    connections: &Arc<Mutex<HashMap<Arc<str>, Connections>>>,
    shutdown: &CancellationToken,
) {
    let (proxy, grants, stop) = (proxy.clone(), grants.clone(), shutdown.clone());
    let connections = connections.clone();
    let recorder = move |connection: Connection| {
        // A connection without a token belongs to no attempt: logged, not kept.
        let Some(label) = connection.label.clone() else {
            tracing::debug!(host = %connection.host, "egress: a request without a valid token");
            return;
        };
        let Ok(mut all) = connections.lock() else {
            return;
        };
        // Only attempts still open are collected; a late record of an ended one is not.
        if let Some(kept) = all.get_mut(&label) {
            if kept.kept.len() < CONNECTIONS_KEPT {
                kept.kept.push(connection);
            } else {
                kept.dropped += 1;
            }
        }
    };
    tokio::spawn(async move {
        proxy
            .serve(listener, grants, recorder, stop.cancelled_owned())
            .await
    });
}

impl Network {
    /// What an attempt may reach through the proxy, or `None` when it wants nothing
    /// outside (no provider, no egress entry, no tools): it then runs as before, with no
    /// route out at all.
    pub(crate) fn wanted(wants: &Wants<'_>) -> Result<Option<Policy>, String> {
        let policy = wants
            .profile
            .egress_policy(wants.role_egress)
            .map_err(|e| e.to_string())?;
        let wanted =
            wants.provider.is_some() || !policy.patterns().is_empty() || wants.tools.is_some();
        Ok(wanted.then_some(policy))
    }

    /// Whether an isolated sandbox can reach the runner at all (the relay is built).
    pub(crate) fn has_relay(&self) -> bool {
        self.relay.is_some()
    }

    /// The access an attempt that [wants](Self::wanted) something gets, reaching the hosts
    /// `policy` allows. `isolated`: the sandbox has a network of its own and reaches the
    /// runner through the relay. The error says what to configure.
    pub(crate) fn open(
        &self,
        wants: Wants<'_>,
        policy: Policy,
        isolated: bool,
    ) -> Result<Reach, String> {
        let relay = match (&self.relay, isolated) {
            (Some(binary), true) => Some(binary.clone()),
            (None, true) => {
                return Err(
                    "the sandbox has no route out, and reaching the model gateway or \
                            the egress proxy needs the gatehouse-relay binary: build it with \
                            deploy/sandbox/build-relay.sh and set [runner] relay to its path"
                        .to_owned(),
                );
            }
            (_, false) => None,
        };
        let (gateway_at, egress_at, tools_at) = if isolated {
            (
                format!("127.0.0.1:{GATEWAY_PORT}"),
                format!("127.0.0.1:{EGRESS_PORT}"),
                format!("127.0.0.1:{TOOLS_PORT}"),
            )
        } else {
            (
                self.loopback.gateway.to_string(),
                self.loopback.egress.to_string(),
                self.loopback.tools.to_string(),
            )
        };
        let label: Arc<str> = Arc::from(wants.label.as_str());
        let meter = Arc::new(Meter::default());
        let mut env = Vec::new();
        let gateway = match wants.provider {
            None => None,
            Some((provider, models)) => {
                let Some(gateway) = &self.gateway else {
                    return Err(format!(
                        "the role's provider `{provider}` is not configured on this runner (add [providers.{provider}])"
                    ));
                };
                let grant = gateway
                    .grant(GrantSpec {
                        label: wants.label.clone(),
                        provider: provider.to_owned(),
                        models: (!models.is_empty()).then(|| models.to_vec()),
                        budget: wants.budget.clone().map(|ledger| {
                            Arc::new(ledger::Shared(ledger)) as Arc<dyn gatehouse_gateway::Budget>
                        }),
                        sink: Some(meter.clone()),
                    })
                    .map_err(|e| format!("the model gateway: {e}"))?;
                let url = url::Url::parse(&format!("http://{gateway_at}"))
                    .map_err(|e| format!("the gateway's address: {e}"))?;
                env.extend(grant.environment_at(&url));
                Some(grant)
            }
        };
        let egress = self.egress.grant(label.clone(), policy);
        env.extend(egress.environment(&egress_at));
        let tools = wants.tools.map(|attempt| {
            let ticket = self.desk.open(attempt);
            env.push((mcp::URL_VAR.to_owned(), format!("http://{tools_at}")));
            env.push((mcp::TOKEN_VAR.to_owned(), ticket.token().to_owned()));
            ticket
        });
        // The gateway is reached directly, never through the proxy (which refuses
        // loopback).
        for name in ["NO_PROXY", "no_proxy"] {
            env.push((name.to_owned(), "127.0.0.1,localhost".to_owned()));
        }
        if let Ok(mut all) = self.connections.lock() {
            all.insert(label.clone(), Connections::default());
        }
        let relay = relay.map(|binary| {
            let mut forwards = Vec::new();
            if gateway.is_some() {
                forwards.push(Forward {
                    port: GATEWAY_PORT,
                    socket: self.sockets.gateway.clone(),
                });
            }
            forwards.push(Forward {
                port: EGRESS_PORT,
                socket: self.sockets.egress.clone(),
            });
            if tools.is_some() {
                forwards.push(Forward {
                    port: TOOLS_PORT,
                    socket: self.sockets.tools.clone(),
                });
            }
            Relay { binary, forwards }
        });
        Ok(Reach {
            budget: gateway.as_ref().and(wants.budget.clone()),
            gateway,
            egress,
            tools,
            meter,
            label,
            connections: self.connections.clone(),
            env,
            relay,
        })
    }
}
