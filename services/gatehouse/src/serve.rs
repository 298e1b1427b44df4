//! Running the services: `gatehouse up` runs all four in one process (on the embedded
//! defaults, or on Postgres and NATS when configured); `gatehouse serve SERVICE` runs one of
//! them on Postgres and NATS JetStream, as many replicas of each as wanted. Either way each
//! process also relays its own outbox and answers `/healthz`, `/readyz` and `/metrics`.

use gatehouse_blobs::Blobs;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use gatehouse_bus::Bus;
use gatehouse_fleet::{Fleet, FleetBuilder};
use gatehouse_ingest::{ApiState, ChatSettings};
use gatehouse_notifier::Notifier;
use gatehouse_store::Store;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::health::Backends;
use crate::startup;

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
async fn run(config: &Config, services: &[Service], insist: bool) -> anyhow::Result<()> {
    let server = &config.server;
    let catalog = crate::settings::catalog(config)?;
    let problems = crate::settings::check::refusals(config, &catalog.current());
    if !problems.is_empty() {
        anyhow::bail!(
            "the configuration cannot be used (gatehouse config check says the same):\n  {}",
            problems.join("\n  ")
        );
    }
    let signalled = startup::signals()?;
    let metrics = crate::metrics::install()?;
    startup::create_data_dir(&server.data_dir)?;
    // The process serving the API says where it listens; a stale address goes first, so
    // a start that fails leaves none behind.
    let serves_api = services.contains(&Service::Ingest);
    if serves_api {
        crate::server_url::forget(&server.data_dir)?;
    }
    let (store, bus, blobs) = startup::connect(server, &config.storage, insist).await?;
    let shutdown = CancellationToken::new();
    let mut tasks = JoinSet::new();
    // The probes and metrics answer from the start; the service's own routes once it runs.
    let routes = Arc::new(OnceLock::new());
    let backends = Backends {
        store: store.clone(),
        bus: bus.clone(),
        blobs: blobs.clone(),
    };
    let bound = startup::listen(server, metrics, &backends, &routes, &mut tasks, &shutdown).await?;
    let url = crate::server_url::url_of(bound);
    // Removed again however this function ends, once the listener is gone.
    let _recorded = if serves_api {
        Some(crate::server_url::Recorded::write(&server.data_dir, &url)?)
    } else {
        None
    };
    if !startup::wait_until_ready(&backends, &signalled).await {
        shutdown.cancel();
        while tasks.join_next().await.is_some() {}
        return Ok(());
    }
    let (fleet, started) = fleet(config, catalog, services, &store, &bus, &blobs).await?;
    let fleet = fleet.spawn(shutdown.clone());
    if let Some(api) = fleet.routes() {
        let _ = routes.set(api);
    }
    // Services without routes of their own are ready now.
    let _ = routes.set(axum::Router::new());
    announce(&url, services, &store, &started);

    signalled.cancelled().await;
    tracing::info!("shutting down");
    shutdown.cancel();
    fleet.join().await;
    while tasks.join_next().await.is_some() {}
    store.close().await;
    Ok(())
}

/// What [`announce`] tells of a process that started.
struct Started {
    /// SOPs loaded.
    sops: usize,
    /// With ingest, the file holding the admin token.
    token_file: Option<PathBuf>,
    /// Whether the bus is NATS JetStream (else in-process).
    nats: bool,
}

/// The services of this process, from the configuration.
async fn fleet(
    config: &Config,
    catalog: std::sync::Arc<gatehouse_sop::Library>,
    services: &[Service],
    store: &Store,
    bus: &Arc<dyn Bus>,
    blobs: &Blobs,
) -> anyhow::Result<(FleetBuilder, Started)> {
    let server = &config.server;
    let has = |s: Service| services.contains(&s);
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
    let projects = crate::settings::projects(config, &catalog.current())?;
    let mut fleet = Fleet::builder(store.clone(), bus.clone())
        .catalog(catalog.clone())
        .projects(projects);
    if !server.sop_reload.is_zero() {
        fleet = fleet.reload_sops(server.sop_reload);
    }
    if let Some((assistant, roles)) = crate::settings::assistant(config) {
        fleet = fleet.assistant(assistant, roles);
    }
    if has(Service::Scheduler) {
        startup::sync_schedules(store, config).await?;
        fleet = fleet
            .scheduler()
            .interrupt_retries(config.runner.interrupt_retries);
    }
    if has(Service::Runner) {
        let runner =
            crate::settings::runner(config, store, &data_dir, github_client.as_ref()).await?;
        fleet = fleet.runner(runner.with_blobs(blobs.clone()));
    }
    let mut token_file = None;
    if has(Service::Ingest) {
        let file = server.data_dir.join("admin.token");
        crate::admin_token::ensure_admin_token(store, &file).await?;
        token_file = Some(file);
        let chat = crate::settings::chat::settings(config, slack_client.as_ref())?;
        let api = ApiState::new(store.clone(), catalog.clone())
            .with_data_dir(&data_dir)
            .with_blobs(blobs.clone());
        fleet = ingest(fleet, api, config, chat, &github_client)?;
    }
    if has(Service::Notifier) {
        let mut notifier = Notifier::new(store.clone(), github_client)
            .with_chat(crate::settings::chat::outputs(config, slack_client)?)
            .with_data_dir(&data_dir)
            .with_blobs(blobs.clone());
        if !server.public_url.is_empty() {
            notifier = notifier.with_public_url(&server.public_url);
        }
        fleet = fleet.notifier(notifier);
    }
    let sops = catalog.current().iter().count();
    let nats = !server.nats_url.is_empty();
    Ok((
        fleet,
        Started {
            sops,
            token_file,
            nats,
        },
    ))
}

/// Says what is running, in the log and (for whoever started it) on stderr.
fn announce(url: &str, services: &[Service], store: &Store, started: &Started) {
    let names: Vec<&str> = services.iter().map(|s| s.name()).collect();
    tracing::info!(
        services = %names.join(","),
        listen = %url,
        database = %store.target(),
        bus = if started.nats { "NATS JetStream" } else { "in-process" },
        sops = started.sops,
        "Gatehouse is up"
    );
    match &started.token_file {
        Some(token) if services.len() == Service::ALL.len() => eprintln!(
            "Gatehouse is up on {url} (admin token in {})",
            token.display()
        ),
        _ => eprintln!("Gatehouse {} is up on {url}", names.join(", ")),
    }
}

/// Adds ingest to `fleet` on `api` (its store, SOPs and storage): its API and webhooks,
/// processing stored deliveries, the Discord gateway and GitHub reconciliation, as the
/// configuration asks.
fn ingest(
    fleet: FleetBuilder,
    api: ApiState,
    config: &Config,
    chat: ChatSettings,
    github_client: &Option<gatehouse_github::GithubClient>,
) -> anyhow::Result<FleetBuilder> {
    let mut api = api
        .with_people(crate::settings::people(config))
        .with_console(crate::settings::console(config)?)
        .with_chat(chat);
    if let Some(github) = &config.github {
        api = api.with_github(crate::settings::github::ingest(github, &config.projects)?);
    }
    if let Some(client) = github_client {
        api = api.with_github_client(client.clone());
    }
    let mut fleet = fleet
        .ingest(api)
        .webhook_limits(gatehouse_ingest::WebhookLimits {
            max_unverified_bodies: config.server.max_unverified_bodies,
            slot_wait: config.server.webhook_slot_wait,
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
