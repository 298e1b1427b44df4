//! The composition root. Services never import each other; something has to start them side
//! by side on one store and bus, and that is this crate: `gatehouse up` (all four in one
//! process), `gatehouse serve SERVICE` (one of them) and every end-to-end suite build their
//! fleet with the same [`Fleet::builder`], so what the tests run is what users run.
//!
//! The builder takes services already configured (a [`Runner`] with its sandbox, a
//! [`Notifier`] with its outputs, ingest's [`ApiState`]); turning the configuration file into
//! those is the binary's job. It adds what every process needs whatever it runs: the relay
//! that publishes this process's outbox, and the HTTP listener ([`serve`]) with the limits
//! a server on the open internet needs.

mod gateway;
mod listener;
mod sop_watch;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_bus::{Bus, Relay, RelayOptions};
use gatehouse_github::GithubClient;
use gatehouse_ingest::{ApiState, Assistant, WebhookLimits};
use gatehouse_notifier::Notifier;
use gatehouse_project::Projects;
use gatehouse_runner::Runner;
use gatehouse_scheduler::{AssistantSettings, Scheduler};
use gatehouse_sop::{Catalog, Library};
use gatehouse_store::Store;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

pub use gateway::DiscordGateway;
pub use listener::{Limits, serve};

/// A task of the fleet, started with the fleet's shutdown token.
type Task = Box<dyn FnOnce(CancellationToken) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// The services running in this process, until [`Fleet::stop`] (or the shutdown token given
/// to [`FleetBuilder::spawn`]) ends them.
pub struct Fleet {
    routes: Option<axum::Router>,
    /// The state ingest serves, with the projects and the assistant added.
    api: Option<ApiState>,
    tasks: JoinSet<()>,
    shutdown: CancellationToken,
}

/// What [`Fleet::builder`] collects: each service is optional, the relay is always there.
pub struct FleetBuilder {
    store: Store,
    bus: Arc<dyn Bus>,
    catalog: Arc<Library>,
    /// How often the SOP files are looked at for changes; `None`: never.
    sop_reload: Option<Duration>,
    projects: Arc<Projects>,
    relay: RelayOptions,
    scheduler: bool,
    /// `runner.interrupt_retries`, for the scheduler.
    interrupt_retries: u32,
    ingest: Option<ApiState>,
    ingest_work: IngestWork,
    runner: Option<Runner>,
    notifier: Option<Notifier>,
    /// `[assistant]` and every configured role, with whether `ask` may name it:
    /// conversations in chat threads.
    assistant: Option<(AssistantSettings, BTreeMap<String, bool>)>,
    tasks: Vec<Task>,
}

/// The work ingest does beside answering requests (whatever order the builder was told).
#[derive(Default)]
struct IngestWork {
    limits: WebhookLimits,
    process_deliveries: bool,
    reconcile: Option<(GithubClient, Duration)>,
    gateway: Option<DiscordGateway>,
}

impl Fleet {
    /// A fleet on `store` and `bus` with no services yet and an empty catalog; the relay
    /// polls every 200 ms for rows other processes wrote.
    pub fn builder(store: Store, bus: Arc<dyn Bus>) -> FleetBuilder {
        FleetBuilder {
            store,
            bus,
            catalog: Arc::new(Library::fixed(Catalog::default())),
            sop_reload: None,
            projects: Arc::default(),
            relay: RelayOptions {
                poll: Duration::from_millis(200),
                ..RelayOptions::default()
            },
            scheduler: false,
            interrupt_retries: 2,
            ingest: None,
            ingest_work: IngestWork::default(),
            runner: None,
            notifier: None,
            assistant: None,
            tasks: Vec::new(),
        }
    }

    /// Ingest's routes (the API and the webhooks), when this fleet runs ingest.
    pub fn routes(&self) -> Option<axum::Router> {
        self.routes.clone()
    }

    /// The state ingest serves, as configured (projects, the assistant): what takes
    /// deliveries that arrive other than over HTTP, like the Discord gateway's.
    pub fn api(&self) -> Option<&ApiState> {
        self.api.as_ref()
    }

    /// Waits until every service has stopped (after the shutdown token is cancelled).
    pub async fn join(mut self) {
        while self.tasks.join_next().await.is_some() {}
    }

    /// Stops every service and waits until they have: no new work is taken, work in
    /// flight is finished or handed back.
    pub async fn stop(self) {
        self.shutdown.cancel();
        self.join().await;
    }

    /// Ends every task at once, as a crash would: nothing is finished or handed back.
    pub fn abort(mut self) {
        self.tasks.abort_all();
    }
}

impl FleetBuilder {
    /// The SOPs the scheduler runs and ingest starts.
    pub fn catalog(mut self, catalog: Arc<Library>) -> Self {
        self.catalog = catalog;
        self
    }

    /// Looks at the SOP files every `every` and offers what changed from then on.
    pub fn reload_sops(mut self, every: Duration) -> Self {
        self.sop_reload = Some(every);
        self
    }

    /// The projects runs work on: ingest binds requests to them, the scheduler schedules.
    pub fn projects(mut self, projects: Arc<Projects>) -> Self {
        self.projects = projects;
        self
    }

    /// How the relay publishes this process's outbox (tests poll faster).
    pub fn relay(mut self, options: RelayOptions) -> Self {
        self.relay = options;
        self
    }

    /// Runs the scheduler: the SOP engine, timers and cron schedules.
    pub fn scheduler(mut self) -> Self {
        self.scheduler = true;
        self
    }

    /// How many times the scheduler runs a node's attempt again after the infrastructure
    /// lost it (`runner.interrupt_retries`; default 2).
    pub fn interrupt_retries(mut self, retries: u32) -> Self {
        self.interrupt_retries = retries;
        self
    }

    /// Runs ingest on `api`: its routes are [`Fleet::routes`].
    pub fn ingest(mut self, api: ApiState) -> Self {
        self.ingest = Some(api);
        self
    }

    /// Limits on the webhooks' unverified bodies (with [`FleetBuilder::ingest`]).
    pub fn webhook_limits(mut self, limits: WebhookLimits) -> Self {
        self.ingest_work.limits = limits;
        self
    }

    /// Turns stored webhook deliveries into requirements, runs and decisions (a process
    /// that receives webhooks does; one that restarts picks up what was left). With
    /// [`FleetBuilder::ingest`].
    pub fn process_deliveries(mut self) -> Self {
        self.ingest_work.process_deliveries = true;
        self
    }

    /// Looks for labelled issues GitHub failed to deliver, every `interval` (with
    /// [`FleetBuilder::ingest`]).
    pub fn reconcile_github(mut self, client: GithubClient, interval: Duration) -> Self {
        self.ingest_work.reconcile = Some((client, interval));
        self
    }

    /// Listens on the Discord gateway for mentions and clicks (with [`FleetBuilder::ingest`]).
    pub fn discord_gateway(mut self, gateway: DiscordGateway) -> Self {
        self.ingest_work.gateway = Some(gateway);
        self
    }

    /// Talks with people in chat threads: ingest opens a conversation per thread and the
    /// scheduler runs its turns as the assistant role; `roles` are every configured role,
    /// each with whether `ask` may name it (its `askable`).
    pub fn assistant(mut self, settings: AssistantSettings, roles: BTreeMap<String, bool>) -> Self {
        self.assistant = Some((settings, roles));
        self
    }

    /// Runs script, agent and deliver nodes from the work queue.
    pub fn runner(mut self, runner: Runner) -> Self {
        self.runner = Some(runner);
        self
    }

    /// Posts approval cards, progress and GitHub comments.
    pub fn notifier(mut self, notifier: Notifier) -> Self {
        self.notifier = Some(notifier);
        self
    }

    /// Starts everything; `shutdown` (or [`Fleet::stop`]) ends it.
    pub fn spawn(self, shutdown: CancellationToken) -> Fleet {
        let mut tasks = JoinSet::new();
        let bus = self.bus;
        tasks.spawn(Relay::new(self.store.clone(), bus.clone(), self.relay).run(shutdown.clone()));
        if self.scheduler {
            let mut scheduler = Scheduler::new(self.store.clone(), self.catalog.clone())
                .with_projects(self.projects.clone())
                .with_interrupt_retries(self.interrupt_retries);
            if let Some((settings, _)) = &self.assistant {
                scheduler = scheduler.with_assistant(settings.clone());
            }
            tasks.spawn(scheduler.run(bus.clone(), shutdown.clone()));
        }
        if let Some(every) = self.sop_reload {
            tasks.spawn(sop_watch::watch_sops(
                self.catalog.clone(),
                every,
                shutdown.clone(),
            ));
        }
        if let Some(runner) = self.runner {
            tasks.spawn(runner.run(bus.clone(), shutdown.clone()));
        }
        if let Some(notifier) = self.notifier {
            tasks.spawn(notifier.run(bus.clone(), shutdown.clone()));
        }
        let work = self.ingest_work;
        let projects = self.projects;
        let assistant = self.assistant;
        let api = self.ingest.map(|api| {
            let mut api = api.with_projects(projects);
            if let Some((settings, roles)) = assistant {
                api = api.with_assistant(Assistant {
                    role: settings.role,
                    askable: roles
                        .iter()
                        .filter(|(_, askable)| **askable)
                        .map(|(name, _)| name.clone())
                        .collect(),
                    roles: roles.into_keys().collect(),
                });
            }
            if work.process_deliveries {
                tasks.spawn(gatehouse_ingest::process_deliveries(
                    api.clone(),
                    shutdown.clone(),
                ));
            }
            if let Some((client, interval)) = work.reconcile {
                tasks.spawn(gatehouse_ingest::reconcile_github(
                    api.clone(),
                    client,
                    interval,
                    shutdown.clone(),
                ));
            }
            if let Some(gateway) = work.gateway {
                tasks.spawn(gateway.run(api.clone(), shutdown.clone()));
            }
            api
        });
        let routes = api
            .clone()
            .map(|api| gatehouse_ingest::router_with(api, work.limits));
        for task in self.tasks {
            tasks.spawn(task(shutdown.clone()));
        }
        Fleet {
            routes,
            api,
            tasks,
            shutdown,
        }
    }

    /// Runs `task` beside the services, with the fleet's shutdown token.
    pub fn task<F>(mut self, task: impl FnOnce(CancellationToken) -> F + Send + 'static) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.tasks
            .push(Box::new(move |shutdown| Box::pin(task(shutdown))));
        self
    }
}
