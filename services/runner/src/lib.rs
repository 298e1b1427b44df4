//! The runner service.
//!
//! Runners take jobs from the work queue and run them in a sandbox. The queue loop
//! (`queue`) takes every kind of work (`work::Work`) the same way: one durable consumer
//! per kind, the job slots shared, each job's lease kept alive while it runs, then settled;
//! a job that cannot be read is parked. The kinds of work, listed in [`Runner::run`], are:
//!
//! - node jobs (`nodes`): `node.dispatch`, each running one attempt of a node, storing its
//!   output and artifacts, and reporting `node.progress` when it starts and `node.finished`
//!   when it ends. A job whose runner died comes back and is reported as interrupted, so the
//!   engine decides whether a new attempt follows; an attempt is never run twice. Runners
//!   also watch run snapshots and stop attempts the scheduler no longer wants (cancel,
//!   fail-fast, send back).
//! - conversations' turns (`turns`): `turn.dispatch`, run the same way.
//!
//! Both use the services at the crate root rather than each other: what a job works on
//! (`scope`), the secrets it declares (`secrets`), what delivering needs
//! (`delivering`, `deliver`), the workspaces' names (`workspaces`) and their
//! checkpoints (`checkpoint`), where their files live (`files`). The `runner` holds
//! what every kind shares and is how the service is built; `doctor` checks that every
//! role can work (`gatehouse doctor`, and at start).

mod acp;
mod agent;
mod artifacts;
#[doc(hidden)]
pub mod bench;
mod budgets;
mod checkpoint;
mod deliver;
mod delivering;
mod doctor;
mod durably;
mod files;
mod git;
mod gitdir;
mod logs;
mod mcp;
mod network;
mod observe;
mod outcome;
mod patience;
mod queue;
mod remotes;
mod runner;
mod running;
mod scope;
mod scratch;
mod secrets;
mod skills;
mod work;
mod workspaces;

// The kinds of work, each one line in `Runner::run`.
mod nodes;
mod turns;

pub use budgets::{Budgets, ProjectBudget};
pub use deliver::{Deliverer, MIRROR_LIMIT, Mirrors};
pub use doctor::{Check, Checkup, Finding, Outcome};
pub use mcp::McpServers;
pub use remotes::{Credential, ForgeAccess, Remotes};
pub use runner::{HOME_LIMIT, Runner, RunnerOptions};

use std::sync::Arc;

use gatehouse_bus::Bus;
use tokio_util::sync::CancellationToken;

use nodes::Nodes;
use queue::Queue;
use turns::Turns;

impl Runner {
    /// Takes jobs and watches runs and turns until `shutdown` is cancelled. Then it takes
    /// no more, hands back jobs pulled but not started, and gives those in flight
    /// [`RunnerOptions::shutdown_grace`] to finish; node attempts still running after that
    /// are stopped and reported as interrupted, so the engine retries them at once rather
    /// than after their lease runs out (turn attempts are stopped and handed back, and
    /// their redelivery reports them interrupted).
    pub async fn run(mut self, bus: Arc<dyn Bus>, shutdown: CancellationToken) {
        self.start_network(&shutdown).await;
        if self.options.check_at_start {
            // Logged as it goes; jobs are taken meanwhile.
            tokio::spawn(self.clone().log_checkup(shutdown.child_token()));
        }
        let mut queue = Queue::new(&self, bus, shutdown);
        // The kinds of work this runner takes: a new kind is a module of its own and one
        // line here.
        queue.take(Nodes::new(&self));
        queue.take(Turns::new(&self));
        queue.finish().await;
    }
}
