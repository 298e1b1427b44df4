//! The runner: what every kind of work it takes shares (the store, the sandbox, the
//! settings, where artifacts and checkpoints go, the halt at the end of the shutdown
//! grace), and how it is built. Its settings are [`options`]; taking work is
//! [`crate::queue`]'s.

mod options;

use std::sync::Arc;

use gatehouse_blobs::{Blobs, LocalBlobs};
use gatehouse_sandbox::Sandbox;
use gatehouse_store::Store;
use tokio_util::sync::CancellationToken;

use crate::artifacts::ARTIFACT_LIMIT;
use crate::budgets::Scoped;
use crate::checkpoint::{Checkpoints, HomeBounds, PACK_LIMIT};
use crate::network::{Ledger, Network, NoteTo, Reach, Wants};
pub use options::{HOME_LIMIT, RunnerOptions};

/// A runner: cheap to clone.
#[derive(Clone)]
pub struct Runner {
    pub(crate) store: Store,
    pub(crate) sandbox: Arc<dyn Sandbox>,
    pub(crate) options: RunnerOptions,
    /// Cancelled when the shutdown grace has run out: attempts stopped then are reported
    /// as interrupted by the shutdown, not as cancelled by someone. Every attempt's stop
    /// is a child of it.
    pub(crate) halted: CancellationToken,
    /// The most bytes an artifact may have; see [`Runner::with_artifact_limit`].
    pub(crate) artifact_limit: u64,
    /// Where artifacts and workspace checkpoints go; see [`Runner::with_blobs`].
    pub(crate) blobs: Blobs,
    pub(crate) checkpoints: Checkpoints,
    /// Conversations' homes (their CLIs' sessions), in the same blob store within
    /// [`RunnerOptions::home_limit`].
    pub(crate) homes: Checkpoints,
    /// The model gateway and egress proxy sandboxes reach the outside through; started
    /// by [`Runner::run`], the reason it is missing otherwise.
    pub(crate) network: Result<Arc<Network>, String>,
}

impl Runner {
    /// A runner recording into `store` and running jobs in `sandbox`.
    pub fn new(store: Store, sandbox: Arc<dyn Sandbox>, options: RunnerOptions) -> Self {
        let blobs: Blobs = Arc::new(LocalBlobs::new(options.data_dir.join("blobs")));
        let home = HomeBounds {
            limit: options.home_limit,
        };
        Self {
            checkpoints: Checkpoints::new(blobs.clone(), PACK_LIMIT),
            homes: Checkpoints::homes(blobs.clone(), home),
            blobs,
            store,
            sandbox,
            options,
            halted: CancellationToken::new(),
            artifact_limit: ARTIFACT_LIMIT,
            network: Err("the runner has not started".to_owned()),
        }
    }

    /// Refuses artifacts over `bytes` (64 MiB unless set): the attempt that left one fails,
    /// and an input over it is not copied. Sizes are checked before a byte is read.
    pub fn with_artifact_limit(mut self, bytes: u64) -> Self {
        self.artifact_limit = bytes;
        self
    }

    /// Refuses checkpoint packs over `bytes` (4 GiB unless set): a workspace whose pack
    /// would be larger fails its checkpoint, and a restore fetches no pack recorded as
    /// larger, nor more of any pack than its manifest records.
    pub fn with_checkpoint_pack_limit(mut self, bytes: u64) -> Self {
        self.checkpoints.pack_limit = bytes;
        self
    }

    /// Keeps artifacts, workspace checkpoints and conversations' homes in `blobs` (the data
    /// directory's `blobs` unless set): with a store every runner and ingest reach (NATS),
    /// runners need no shared disk.
    pub fn with_blobs(mut self, blobs: Blobs) -> Self {
        self.checkpoints = self.checkpoints.in_blobs(blobs.clone());
        self.homes = self.homes.in_blobs(blobs.clone());
        self.blobs = blobs;
        self
    }
}

impl Runner {
    /// Starts the gateway and egress proxy this runner's sandboxes reach the outside
    /// through, serving until `shutdown`. A failure is logged and kept: attempts that need
    /// them fail with it, the others run.
    pub(crate) async fn start_network(&mut self, shutdown: &CancellationToken) {
        // The runner's environment holds the providers' keys: a script of the same user
        // (a process sandbox without namespaces) must not read them from
        // /proc/<runner>/environ, nor trace the runner. Not dumpable, only a process with
        // CAP_SYS_PTRACE can.
        if let Err(e) =
            rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
        {
            tracing::warn!("making the runner undumpable failed: {e}");
        }
        // Whether the process sandbox can make namespaces is probed once, with a fork or
        // two: here, off the runtime's threads, rather than in the first attempt's
        // preparation, which asks synchronously.
        let sandbox = self.sandbox.clone();
        let probed = tokio::task::spawn_blocking(move || {
            sandbox.isolates_network(&gatehouse_sandbox::Profile::default())
        });
        if let Err(e) = probed.await {
            tracing::warn!("probing the process sandbox's namespaces failed: {e}");
        }
        let dir = self.options.data_dir.join("sockets").join(&self.options.id);
        self.network = Network::start(
            &dir,
            self.options.providers.clone(),
            self.options.relay.clone(),
            self.options.mcp.remotes.clone(),
            shutdown.clone(),
        )
        .await
        .map(Arc::new)
        .inspect_err(|why| tracing::error!("the sandboxes' gateway and egress proxy: {why}"));
    }

    /// The ledger an attempt's model requests are admitted and charged against, for these
    /// limits; `None` when there are none.
    pub(crate) fn ledger(&self, scoped: Vec<Scoped>, note_to: NoteTo) -> Option<Arc<Ledger>> {
        if scoped.is_empty() {
            return None;
        }
        let budgets = &self.options.budgets;
        Some(Arc::new(Ledger::new(
            self.store.clone(),
            self.options.prices.clone(),
            scoped,
            (budgets.hold, budgets.wait),
            note_to,
        )))
    }

    /// The access an attempt of `profile` gets to its model and the hosts it may reach;
    /// `None` when it wants neither.
    pub(crate) fn reach(&self, mut wants: Wants<'_>) -> Result<Option<Reach>, String> {
        let isolated = self.sandbox.isolates_network(wants.profile);
        // Gatehouse's tools are offered where the sandbox can reach them: an isolated one
        // only through the relay. Without it the agent works with its CLI's own tools.
        let reachable = self
            .network
            .as_ref()
            .is_ok_and(|network| !isolated || network.has_relay());
        if wants.tools.is_some() && !reachable {
            tracing::debug!(label = %wants.label, "Gatehouse's tools are out of the sandbox's reach");
            wants.tools = None;
        }
        let Some(policy) = Network::wanted(&wants)? else {
            return Ok(None);
        };
        match &self.network {
            Ok(network) => network.open(wants, policy, isolated).map(Some),
            Err(why) => Err(format!(
                "the sandboxes' gateway and egress proxy are not running: {why}"
            )),
        }
    }
}
