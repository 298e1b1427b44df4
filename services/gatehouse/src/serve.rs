//! Running the services: `gatehouse up` runs all four in one process (on the embedded
//! defaults, or on Postgres and NATS when configured); `gatehouse serve SERVICE` runs one of
//! them on Postgres and NATS JetStream, as many replicas of each as wanted. Either way each
//! process also relays its own outbox and answers `/healthz`, `/readyz` and `/metrics`.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Context;
use gatehouse_bus::{Bus, InProcessBus, JetStreamBus, Relay, RelayOptions};
use gatehouse_ingest::{ApiState, BOOTSTRAP_ADMIN, Scopes, hash_token, new_token};
use gatehouse_notifier::Notifier;
use gatehouse_runner::{Runner, RunnerOptions};
use gatehouse_scheduler::Scheduler;
use gatehouse_sop::Catalog;
use gatehouse_store::{NewToken, Store};
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
    let limits = crate::listener::Limits::of(server);
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
        tasks.spawn(crate::listener::serve(
            metrics_listener,
            metrics,
            limits,
            "metrics",
            shutdown.clone(),
        ));
        health.merge(crate::metrics::elsewhere())
    };
    tasks.spawn(crate::listener::serve(
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

    let (mut catalog, invalid) = Catalog::load(&server.sop_dirs);
    for task in config.schedules.iter().filter_map(|s| s.agent_task()) {
        // Checked when the configuration was loaded.
        catalog.insert(task.context("an agent task of [[schedules]]")?);
    }
    catalog.require_roles(config.roles.keys().map(String::as_str));
    for error in &invalid {
        tracing::warn!("skipped an invalid SOP file:\n{error}");
    }
    let catalog = Arc::new(catalog);
    tasks.spawn(
        Relay::new(
            store.clone(),
            bus.clone(),
            RelayOptions {
                poll: Duration::from_millis(200),
                ..RelayOptions::default()
            },
        )
        .run(shutdown.clone()),
    );
    if has(Service::Scheduler) {
        sync_schedules(&store, config, &catalog).await?;
        tasks.spawn(
            Scheduler::new(store.clone(), catalog.clone()).run(bus.clone(), shutdown.clone()),
        );
    }
    // Scripts run in their workspace, so the paths they are given must not be relative.
    let data_dir = std::path::absolute(&server.data_dir)?;
    let github_client = match &config.github {
        Some(github) if has(Service::Ingest) || has(Service::Runner) || has(Service::Notifier) => {
            github_client(github)?
        }
        _ => None,
    };
    if has(Service::Runner) {
        spawn_runner(
            config,
            &store,
            &bus,
            &data_dir,
            github_client.as_ref(),
            &mut tasks,
            &shutdown,
        )
        .await?;
    }
    let slack_client = if has(Service::Ingest) || has(Service::Notifier) {
        crate::chat::slack_client(config)?
    } else {
        None
    };
    let mut token_file = None;
    if has(Service::Ingest) {
        let file = server.data_dir.join("admin.token");
        ensure_admin_token(&store, &file).await?;
        token_file = Some(file);
        let api = ApiState::new(store.clone(), catalog.clone())
            .with_data_dir(&data_dir)
            .with_people(people(config))
            .with_chat(crate::chat::settings(
                config,
                &catalog,
                slack_client.as_ref(),
            )?);
        let api = spawn_ingest(config, api, github_client.clone(), &mut tasks, &shutdown)?;
        let limits = gatehouse_ingest::WebhookLimits {
            max_unverified_bodies: server.max_unverified_bodies,
        };
        let _ = routes.set(gatehouse_ingest::router_with(api, limits));
    }
    if has(Service::Notifier) {
        let mut notifier = Notifier::new(store.clone(), github_client)
            .with_chat(crate::chat::outputs(config, slack_client)?)
            .with_data_dir(&data_dir);
        if !server.public_url.is_empty() {
            notifier = notifier.with_public_url(&server.public_url);
        }
        tasks.spawn(notifier.run(bus.clone(), shutdown.clone()));
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
    while tasks.join_next().await.is_some() {}
    store.close().await;
    Ok(())
}

/// Starts a runner on this process's sandboxes (what a crash left behind is cleaned up
/// first), delivering to GitHub when a client is configured.
async fn spawn_runner(
    config: &Config,
    store: &Store,
    bus: &Arc<dyn Bus>,
    data_dir: &Path,
    github_client: Option<&gatehouse_github::GithubClient>,
    tasks: &mut JoinSet<()>,
    shutdown: &CancellationToken,
) -> anyhow::Result<()> {
    let sandbox = crate::sandbox::sandboxes(config, data_dir).await?;
    let delivery = match (&config.github, github_client) {
        (Some(github), Some(client)) => Some(Arc::new(gatehouse_runner::Deliverer {
            github: client.clone(),
            git_url: github.git_base(),
            author_name: github.commit_author.clone(),
            author_email: github.commit_email.clone(),
        })),
        _ => None,
    };
    let options = RunnerOptions {
        concurrency: config.runner.concurrency,
        ack_wait: config.runner.lease,
        data_dir: data_dir.to_owned(),
        delivery,
        profiles: config.sandbox.profiles.clone(),
        roles: config.roles.clone(),
        prices: config.pricing.clone(),
        log_limit: usize::try_from(config.runner.log_limit.as_u64()).unwrap_or(usize::MAX),
        shutdown_grace: config.runner.shutdown_grace,
    };
    tasks.spawn(
        Runner::new(store.clone(), Arc::new(sandbox), options)
            .with_artifact_limit(config.runner.artifact_limit.as_u64())
            .run(bus.clone(), shutdown.clone()),
    );
    Ok(())
}

/// Completes ingest's state with GitHub, and starts what ingest runs beside its routes:
/// processing stored deliveries, the Discord gateway, GitHub reconciliation.
fn spawn_ingest(
    config: &Config,
    mut api: ApiState,
    github_client: Option<gatehouse_github::GithubClient>,
    tasks: &mut JoinSet<()>,
    shutdown: &CancellationToken,
) -> anyhow::Result<ApiState> {
    if let Some(github) = &config.github {
        api = api.with_github(github_settings(github)?);
    }
    if config.github.is_some() || config.slack.is_some() || config.discord.is_some() {
        tasks.spawn(gatehouse_ingest::process_deliveries(
            api.clone(),
            shutdown.clone(),
        ));
    }
    crate::chat::spawn_gateway(config, &api, tasks, shutdown)?;
    if let Some(github) = &config.github {
        match github_client {
            Some(client) => {
                tasks.spawn(gatehouse_ingest::reconcile_github(
                    api.clone(),
                    client,
                    github.reconcile_interval,
                    shutdown.clone(),
                ));
            }
            None => tracing::warn!(
                "[github] has no token (nor app_id and private_key): no status comments, replies, reconciliation or delivery"
            ),
        }
    }
    Ok(api)
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

/// Writes an admin token to `path` (mode 0600) on first start, and makes sure the store
/// knows it on every start (a fresh database keeps working with the old file). Replicas
/// sharing a data directory may start together: the file appears whole or not at all (a
/// hard link of a finished file), the first one wins, and the others adopt its token.
async fn ensure_admin_token(store: &Store, path: &Path) -> anyhow::Result<()> {
    let token = match read_token(path)? {
        Some(token) => token,
        None => {
            let token = new_token();
            let draft = path.with_extension(format!("{}.tmp", uuid::Uuid::now_v7()));
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&draft)
                .with_context(|| format!("writing {}", draft.display()))?;
            writeln!(file, "{token}")?;
            drop(file);
            let linked = std::fs::hard_link(&draft, path);
            let _ = std::fs::remove_file(&draft);
            match linked {
                Ok(()) => token,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_token(path)?
                    .with_context(|| format!("{} vanished while being read", path.display()))?,
                Err(e) => return Err(e).with_context(|| format!("writing {}", path.display())),
            }
        }
    };
    let hash = hash_token(&token);
    // Named `admin`, or after its hash when an earlier admin token holds that name (the
    // file was replaced while the database stayed).
    for name in [
        BOOTSTRAP_ADMIN.to_owned(),
        format!("{BOOTSTRAP_ADMIN}-{}", &hash[..8]),
    ] {
        match store.token_by_hash(&hash).await? {
            Some(row) if row.revoked_at.is_some() => {
                tracing::warn!(token = %row.name, file = %path.display(),
                    "the admin token in this file was revoked; delete the file and restart for a new one");
                return Ok(());
            }
            Some(_) => return Ok(()),
            None => {}
        }
        let new = NewToken {
            name: &name,
            person: BOOTSTRAP_ADMIN,
            created_by: BOOTSTRAP_ADMIN,
            scopes: &Scopes::all().to_stored(),
            expires_at: None,
            hash: &hash,
        };
        // `None`: another replica registered this token in between, or the name is taken.
        if store.create_token(&new).await?.is_some() {
            return Ok(());
        }
    }
    match store.token_by_hash(&hash).await? {
        Some(_) => Ok(()),
        None => anyhow::bail!("could not register the admin token of {}", path.display()),
    }
}

/// The token in `path`, or `None` when there is no such file yet.
fn read_token(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(token) => Ok(Some(token.trim().to_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
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
        let ms = |t: &Option<String>| -> anyhow::Result<Option<i64>> {
            Ok(t.as_deref()
                .map(gatehouse_schedule::parse_time)
                .transpose()?
                .map(|t| t.as_millisecond()))
        };
        let sop = s.target();
        if catalog.get(&sop).is_none() {
            tracing::warn!(schedule = %s.name, %sop, "the schedule's SOP does not exist; its fires will not start runs");
        }
        store
            .upsert_schedule(&gatehouse_store::ScheduleRow {
                name: s.name.clone(),
                cron: s.cron.clone(),
                timezone: s.timezone.clone(),
                sop,
                params: serde_json::to_string(&s.params)?,
                overlap: s.overlap.clone(),
                catchup_window_ms: i64::try_from(s.catchup_window.as_millis()).unwrap_or(i64::MAX),
                jitter_ms: i64::try_from(s.jitter.as_millis()).unwrap_or(i64::MAX),
                starts_ms: ms(&s.start)?,
                ends_ms: ms(&s.end)?,
                next_due_ms: Some(0),
                revision: 0,
                paused: false,
                pause_note: None,
                source: "config".into(),
                owner: s.owner.clone(),
                since_ms: now.timestamp_millis(),
                created_at: now,
                updated_at: now,
            })
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

/// `[[people]]` as the API and the webhooks see them.
fn people(config: &Config) -> gatehouse_ingest::People {
    gatehouse_ingest::People::new(
        config
            .people
            .iter()
            .map(|p| gatehouse_ingest::Person {
                id: p.id.clone(),
                github: p.github.clone(),
                slack: p.slack.clone(),
                discord: p.discord.clone(),
                groups: p.groups.clone(),
            })
            .collect(),
    )
}

/// `[github]` as ingest uses it: secrets read, repository globs compiled.
fn github_settings(
    github: &crate::config::GithubConfig,
) -> anyhow::Result<gatehouse_ingest::GithubSettings> {
    let webhook_secrets = github
        .webhook_secrets
        .iter()
        .map(|s| s.resolve().context("github.webhook_secrets"))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if webhook_secrets.is_empty() {
        tracing::warn!("[github] has no webhook_secrets: every delivery will be refused with 401");
    }
    let triggers = github
        .triggers
        .iter()
        .map(|t| {
            t.to_trigger()
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("github.triggers (label `{}`)", t.label))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(gatehouse_ingest::GithubSettings {
        webhook_secrets,
        triggers,
        bot_login: github.bot_login.clone(),
        max_body_bytes: github.max_body_bytes,
        repositories: gatehouse_ingest::Repositories::new(&github.repositories)
            .context("github.repositories")?,
    })
}

/// The GitHub client `[github]` asks for: a token, or a GitHub App (`app_id` +
/// `private_key`); none without either.
fn github_client(
    github: &crate::config::GithubConfig,
) -> anyhow::Result<Option<gatehouse_github::GithubClient>> {
    if let Some(token) = &github.token {
        let token = token.resolve().context("github.token")?;
        return Ok(Some(
            gatehouse_github::GithubClient::new(&github.api_url, token)
                .context("github.api_url")?,
        ));
    }
    match (github.app_id, &github.private_key) {
        (Some(app_id), Some(key)) => {
            let key = key.resolve().context("github.private_key")?;
            Ok(Some(gatehouse_github::GithubClient::app(
                &github.api_url,
                app_id,
                &key,
            )?))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replicas starting together on one data directory end up with one admin token, which
    /// the store knows, and none of them fails.
    #[tokio::test]
    async fn replicas_starting_together_share_one_admin_token() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite:{}", dir.path().join("g.db").display());
        let store = Store::connect(&url, crate::startup_retry()).await.unwrap();
        store.migrate().await.unwrap();
        let path = dir.path().join("admin.token");
        let starts = (0..8).map(|_| ensure_admin_token(&store, &path));
        for started in futures::future::join_all(starts).await {
            started.unwrap();
        }
        let token = std::fs::read_to_string(&path).unwrap();
        let row = store
            .token_by_hash(&hash_token(token.trim()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!((row.name.as_str(), row.person.as_str()), ("admin", "admin"));
        assert_eq!(row.scopes, "read,run,decide,admin");
        let drafts: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(drafts.is_empty(), "drafts left behind: {drafts:?}");
    }
}
