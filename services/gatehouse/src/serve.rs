//! Running the services: `gatehouse up` runs all four in one process (on the embedded
//! defaults, or on Postgres and NATS when configured); `gatehouse serve SERVICE` runs one of
//! them on Postgres and NATS JetStream, as many replicas of each as wanted. Either way each
//! process also relays its own outbox and answers `/healthz`, `/readyz` and `/metrics`.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Context;
use gatehouse_bus::{Bus, InProcessBus, JetStreamBus};
use gatehouse_fleet::{Fleet, FleetBuilder};
use gatehouse_ingest::ApiState;
use gatehouse_notifier::Notifier;
use gatehouse_sop::Catalog;
use gatehouse_store::Store;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::Config;

/// One of the four services.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Service {
    /// The HTTP API, webhooks and the Discord gateway: stateless, any number of replicas.
    Ingest,
    /// The SOP engine and cron schedules: replicas share the work.
    Scheduler,
    /// Runs script, agent and deliver nodes from the work queue.
    Runner,
    /// Approval cards, progress and GitHub comments.
    Notifier,
}

impl Service {
    const ALL: [Service; 4] = [
        Service::Ingest,
        Service::Scheduler,
        Service::Runner,
        Service::Notifier,
    ];

    /// The service's name, as `serve` takes it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Service::Ingest => "ingest",
            Service::Scheduler => "scheduler",
            Service::Runner => "runner",
            Service::Notifier => "notifier",
        }
    }
}

/// How often a `serve` process waiting for its database, migrations or NATS looks again.
const READY_POLL: Duration = Duration::from_secs(2);

/// Runs every service in this process until SIGINT or SIGTERM, applying migrations first.
pub async fn up(config: &Config) -> anyhow::Result<()> {
    run(config, &Service::ALL, true).await
}

/// Runs one service until SIGINT or SIGTERM. It needs Postgres and NATS (replicas in other
/// processes must see the same state and bus) and expects `gatehouse migrate` to have run:
/// until the migrations are applied it answers `/readyz` with 503 and waits.
pub async fn serve(config: &Config, service: Service) -> anyhow::Result<()> {
    let server = &config.server;
    if server.nats_url.is_empty() {
        anyhow::bail!(
            "`serve {}` needs NATS JetStream: set server.nats_url (or --nats, GATEHOUSE_NATS_URL)",
            service.name()
        );
    }
    if !server.database_url.starts_with("postgres") {
        anyhow::bail!(
            "`serve {}` needs Postgres: set server.database_url to postgres://... (or --database-url, GATEHOUSE_DATABASE_URL)",
            service.name()
        );
    }
    run(config, &[service], false).await
}

/// Starts `services`, the outbox relay and the HTTP listener, then waits for a signal and
/// shuts everything down: no new work is taken, work in flight is finished or handed back.
async fn run(config: &Config, services: &[Service], migrate: bool) -> anyhow::Result<()> {
    let server = &config.server;
    let has = |s: Service| services.contains(&s);
    let signalled = signals()?;
    let metrics = crate::metrics::install()?;
    create_data_dir(&server.data_dir)?;
    // `up` is started by hand: when its database or NATS is not there, it says so and
    // stops. A `serve` replica is started by an orchestrator, often before them: it waits
    // for as long as it takes (saying why on `/readyz`) instead of exiting into a restart
    // loop.
    let store = if migrate {
        let store =
            Store::connect(&server.effective_database_url(), crate::startup_retry()).await?;
        store.migrate().await.context("applying migrations")?;
        store
    } else {
        Store::connect_lazy(&server.effective_database_url())?
    };
    let bus: Arc<dyn Bus> = if server.nats_url.is_empty() {
        Arc::new(InProcessBus::new(store.clone()))
    } else if migrate {
        Arc::new(
            JetStreamBus::connect(
                &server.nats_url,
                server.nats_prefix.clone(),
                crate::startup_retry(),
            )
            .await?,
        )
    } else {
        Arc::new(JetStreamBus::connect_lazy(&server.nats_url, server.nats_prefix.clone()).await?)
    };
    let listener = tokio::net::TcpListener::bind(&server.listen)
        .await
        .with_context(|| format!("listening on {}", server.listen))?;
    let shutdown = CancellationToken::new();
    let mut tasks = JoinSet::new();
    // The probes and metrics answer from the start; the service's own routes (ingest's API)
    // once it runs. A replica started before `gatehouse migrate` waits instead of failing.
    let routes = Arc::new(OnceLock::new());
    let limits = crate::settings::limits(server);
    let metrics_token = server
        .metrics_token
        .as_ref()
        .map(|t| t.resolve().context("server.metrics_token"))
        .transpose()?;
    let metrics = crate::metrics::router(metrics, metrics_token);
    let health = crate::health::router(store.clone(), bus.clone(), routes.clone());
    let app = if server.metrics_listen.is_empty() {
        health.merge(metrics)
    } else {
        let metrics_listener = tokio::net::TcpListener::bind(&server.metrics_listen)
            .await
            .with_context(|| {
                format!(
                    "listening on {} (server.metrics_listen)",
                    server.metrics_listen
                )
            })?;
        tasks.spawn(gatehouse_fleet::serve(
            metrics_listener,
            metrics,
            limits,
            "metrics",
            shutdown.clone(),
        ));
        health.merge(crate::metrics::elsewhere())
    };
    tasks.spawn(gatehouse_fleet::serve(
        listener,
        app,
        limits,
        "main",
        shutdown.clone(),
    ));
    if !wait_until_ready(&store, bus.as_ref(), &signalled).await {
        shutdown.cancel();
        while tasks.join_next().await.is_some() {}
        return Ok(());
    }

    let catalog = crate::settings::catalog(config)?;
    // Scripts run in their workspace, so the paths they are given must not be relative.
    let data_dir = std::path::absolute(&server.data_dir)?;
    let github_client = match &config.github {
        Some(github) if has(Service::Ingest) || has(Service::Runner) || has(Service::Notifier) => {
            crate::settings::github::client(github)?
        }
        _ => None,
    };
    let slack_client = if has(Service::Ingest) || has(Service::Notifier) {
        crate::settings::chat::slack_client(config)?
    } else {
        None
    };
    let mut fleet = Fleet::builder(store.clone(), bus.clone()).catalog(catalog.clone());
    if has(Service::Scheduler) {
        sync_schedules(&store, config, &catalog).await?;
        fleet = fleet.scheduler();
    }
    if has(Service::Runner) {
        let runner =
            crate::settings::runner(config, &store, &data_dir, github_client.as_ref()).await?;
        fleet = fleet.runner(runner);
    }
    let mut token_file = None;
    if has(Service::Ingest) {
        let file = server.data_dir.join("admin.token");
        crate::admin_token::ensure_admin_token(&store, &file).await?;
        token_file = Some(file);
        fleet = ingest(
            fleet,
            &store,
            config,
            &catalog,
            &data_dir,
            &github_client,
            &slack_client,
        )?;
    }
    if has(Service::Notifier) {
        let mut notifier = Notifier::new(store.clone(), github_client)
            .with_chat(crate::settings::chat::outputs(config, slack_client)?)
            .with_data_dir(&data_dir);
        if !server.public_url.is_empty() {
            notifier = notifier.with_public_url(&server.public_url);
        }
        fleet = fleet.notifier(notifier);
    }
    let fleet = fleet.spawn(shutdown.clone());
    if let Some(api) = fleet.routes() {
        let _ = routes.set(api);
    }
    // Services without routes of their own are ready now.
    let _ = routes.set(axum::Router::new());
    let names: Vec<&str> = services.iter().map(|s| s.name()).collect();
    tracing::info!(
        services = %names.join(","),
        listen = %server.listen,
        database = %store.target(),
        bus = if server.nats_url.is_empty() { "in-process" } else { "NATS JetStream" },
        sops = catalog.iter().count(),
        "Gatehouse is up"
    );
    match &token_file {
        Some(token) if services.len() == Service::ALL.len() => eprintln!(
            "Gatehouse is up on http://{} (admin token in {})",
            server.listen,
            token.display()
        ),
        _ => eprintln!(
            "Gatehouse {} is up on http://{}",
            names.join(", "),
            server.listen
        ),
    }

    signalled.cancelled().await;
    tracing::info!("shutting down");
    shutdown.cancel();
    fleet.join().await;
    while tasks.join_next().await.is_some() {}
    store.close().await;
    Ok(())
}

/// Adds ingest to `fleet`: its API and webhooks, processing stored deliveries, the Discord
/// gateway and GitHub reconciliation, as the configuration asks.
fn ingest(
    fleet: FleetBuilder,
    store: &Store,
    config: &Config,
    catalog: &Arc<Catalog>,
    data_dir: &Path,
    github_client: &Option<gatehouse_github::GithubClient>,
    slack_client: &Option<gatehouse_slack::SlackClient>,
) -> anyhow::Result<FleetBuilder> {
    let chat = crate::settings::chat::settings(config, catalog, slack_client.as_ref())?;
    let mut api = ApiState::new(store.clone(), catalog.clone())
        .with_data_dir(data_dir)
        .with_people(crate::settings::people(config))
        .with_chat(chat);
    if let Some(github) = &config.github {
        api = api.with_github(crate::settings::github::ingest(github)?);
    }
    let mut fleet = fleet
        .ingest(api)
        .webhook_limits(gatehouse_ingest::WebhookLimits {
            max_unverified_bodies: config.server.max_unverified_bodies,
        });
    if config.github.is_some() || config.slack.is_some() || config.discord.is_some() {
        fleet = fleet.process_deliveries();
    }
    if let Some(gateway) = crate::settings::chat::discord_gateway(config)? {
        fleet = fleet.discord_gateway(gateway);
    }
    if let Some(github) = &config.github {
        match github_client {
            Some(client) => {
                fleet = fleet.reconcile_github(client.clone(), github.reconcile_interval);
            }
            None => tracing::warn!(
                "[github] has no token (nor app_id and private_key): no status comments, replies, reconciliation or delivery"
            ),
        }
    }
    Ok(fleet)
}

/// Waits until the store and the bus are ready (a signal ends the wait: `false`).
async fn wait_until_ready(store: &Store, bus: &dyn Bus, signalled: &CancellationToken) -> bool {
    let mut told = false;
    loop {
        let check = async {
            match store.check_ready().await {
                Err(e) => Some(e.to_string()),
                Ok(()) => bus.check_ready().await.err().map(|e| e.to_string()),
            }
        };
        let problem = tokio::select! {
            problem = check => problem,
            () = signalled.cancelled() => return false,
        };
        let Some(problem) = problem else {
            return true;
        };
        if !told {
            tracing::warn!(%problem, "not ready yet; waiting (see /readyz)");
            told = true;
        }
        tokio::select! {
            () = tokio::time::sleep(READY_POLL) => {}
            () = signalled.cancelled() => return false,
        }
    }
}

/// A token cancelled at the first SIGINT or SIGTERM. The handlers are installed at once,
/// so a signal that arrives while the process is busy starting (or checking its database)
/// is not lost.
fn signals() -> anyhow::Result<CancellationToken> {
    use tokio::signal::unix::{SignalKind, signal};
    let signalled = CancellationToken::new();
    let mut terminate = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
    tokio::spawn({
        let signalled = signalled.clone();
        async move {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
            signalled.cancel();
        }
    });
    Ok(signalled)
}

/// Creates the data directory, readable by this user only (0700): it holds the SQLite
/// database, the admin token, workspaces and artifacts. One that exists keeps its mode
/// (it may be a volume shared on purpose), with a warning when others can read it.
fn create_data_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating the data directory {}", dir.display()))?;
    let mode = std::fs::metadata(dir)?.permissions().mode();
    if mode & 0o077 != 0 {
        tracing::warn!(dir = %dir.display(), mode = format!("{:o}", mode & 0o777),
            "the data directory is open to other users; `chmod 700` it unless that is meant");
    }
    Ok(())
}

/// Makes the stored schedules from the configuration match `[[schedules]]`: new ones start
/// owing fires from now, changed ones keep their history and pause, removed ones stop.
async fn sync_schedules(store: &Store, config: &Config, catalog: &Catalog) -> anyhow::Result<()> {
    let now = chrono::Utc::now();
    for s in &config.schedules {
        let timing = s.timing()?;
        if timing.next_fire(jiff::Timestamp::now()).is_none() {
            tracing::warn!(schedule = %s.name, "the schedule has ended: it will not fire again");
        }
        let sop = s.target();
        if catalog.get(&sop).is_none() {
            tracing::warn!(schedule = %s.name, %sop, "the schedule's SOP does not exist; its fires will not start runs");
        }
        store
            .upsert_schedule(&crate::settings::schedule_row(s, now)?)
            .await?;
    }
    let names: Vec<String> = config.schedules.iter().map(|s| s.name.clone()).collect();
    let removed = store.prune_schedules("config", &names).await?;
    if removed > 0 {
        tracing::info!(
            removed,
            "schedules removed from the configuration no longer fire"
        );
    }
    Ok(())
}
