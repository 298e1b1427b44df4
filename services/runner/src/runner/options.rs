//! How a runner is configured.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_agent::{PriceTable, Role};
use gatehouse_sandbox::Profile;

use crate::budgets::Budgets;
use crate::deliver::Deliverer;

/// Tuning for a [`Runner`](super::Runner).
#[derive(Debug, Clone)]
pub struct RunnerOptions {
    /// Jobs run at once.
    pub concurrency: usize,
    /// A job's lease; renewed every third of it while the job runs.
    pub ack_wait: Duration,
    /// Root of runs' workspaces, artifacts and inputs.
    pub data_dir: PathBuf,
    /// Cloning and delivering GitHub repositories; without it, runs on GitHub issues get
    /// an empty workspace and `deliver` nodes fail with a message saying so.
    pub delivery: Option<Arc<Deliverer>>,
    /// Sandbox profiles by name; a run freezes each one it uses.
    pub profiles: BTreeMap<String, Profile>,
    /// Agent roles by name; a run freezes each one it uses.
    pub roles: BTreeMap<String, Role>,
    /// The model providers roles name (`provider`), keys included: the runner's gateway
    /// forwards to them; a sandbox never sees a key.
    pub providers: Vec<gatehouse_gateway::Provider>,
    /// The `[mcp.NAME]` servers roles and projects attach, and the remote ones'
    /// forwarders (with their secrets) for the tools endpoint.
    pub mcp: crate::mcp::McpServers,
    /// The static `gatehouse-relay` binary an isolated sandbox (Docker, a process in
    /// namespaces of its own) runs to reach the gateway and egress proxy; without it such
    /// sandboxes reach nothing, and attempts that need to fail saying so.
    pub relay: Option<PathBuf>,
    /// The static `gatehouse-acp` shim an `acp` role's attempt runs in its sandbox to drive
    /// the agent (bind-mounted read-only into containers); without it such attempts fail
    /// saying how to build it.
    pub acp: Option<PathBuf>,
    /// Prices of models, for the cost of agent attempts and dollar budgets.
    pub prices: PriceTable,
    /// The budgets beside roles' own: projects' (per run and per day), schedules' and the
    /// daily default.
    pub budgets: Budgets,
    /// Output bytes stored per attempt.
    pub log_limit: usize,
    /// How long jobs in flight may take to finish once the runner is told to stop; those
    /// still running then are stopped and reported as interrupted.
    pub shutdown_grace: Duration,
    /// This runner's name among the runners: the holder of the workspaces it checkpoints,
    /// which their runs' next jobs wait for briefly.
    pub id: String,
    /// Check every role as `gatehouse doctor` does when the runner starts, logging each
    /// finding without holding the start up; off unless set (tests build many runners).
    pub check_at_start: bool,
    /// The most a conversation's home (its CLI's sessions) may pack to in the blob store
    /// (`storage.conversation_home_limit`): a home past it is not saved, and a turn on
    /// another runner then starts a new session.
    pub home_limit: u64,
    /// `[skills.NAME]`: where each skill roles and projects attach is read from at a
    /// run's first use (then it is pinned with the run).
    pub skills: BTreeMap<String, gatehouse_agent::SkillSource>,
    /// The skills each project attaches to every agent of its runs, by project name.
    pub project_skills: BTreeMap<String, Vec<String>>,
}

/// [`RunnerOptions::home_limit`] unless set: 16 MiB.
pub const HOME_LIMIT: u64 = 16 * 1024 * 1024;

impl RunnerOptions {
    /// Defaults for a runner keeping runs' files under `data_dir`: 4 jobs at once, a
    /// 30-second lease, the `default` process profile, no roles, 1 MiB of output per
    /// attempt, 20 seconds for jobs in flight to finish at shutdown, no check of the roles
    /// at start, 16 MiB for a conversation's home.
    pub fn new(data_dir: PathBuf) -> Self {
        Self {
            concurrency: 4,
            ack_wait: Duration::from_secs(30),
            data_dir,
            delivery: None,
            profiles: BTreeMap::from([("default".to_owned(), Profile::default())]),
            roles: BTreeMap::new(),
            providers: Vec::new(),
            mcp: crate::mcp::McpServers::default(),
            relay: None,
            acp: None,
            prices: PriceTable::new(),
            budgets: Budgets::default(),
            log_limit: 1024 * 1024,
            shutdown_grace: Duration::from_secs(20),
            id: "runner".to_owned(),
            check_at_start: false,
            home_limit: HOME_LIMIT,
            skills: BTreeMap::new(),
            project_skills: BTreeMap::new(),
        }
    }
}
