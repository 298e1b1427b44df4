//! `gatehouse up`: every service in one process, on the embedded defaults.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use gatehouse_bus::{Bus, InProcessBus, JetStreamBus, Relay, RelayOptions};
use gatehouse_ingest::{ApiState, hash_token, new_token};
use gatehouse_notifier::Notifier;
use gatehouse_runner::{Runner, RunnerOptions};
use gatehouse_scheduler::Scheduler;
use gatehouse_sop::Catalog;
use gatehouse_store::Store;
use tokio_util::sync::CancellationToken;

use crate::config::Config;

/// Runs ingest (the API), scheduler, runner and the outbox relay until SIGINT or SIGTERM.
pub async fn up(config: &Config) -> anyhow::Result<()> {
    let server = &config.server;
    let metrics = crate::metrics::install()?;
    std::fs::create_dir_all(&server.data_dir)
        .with_context(|| format!("creating the data directory {}", server.data_dir.display()))?;
    let store = Store::connect(&server.effective_database_url(), crate::startup_retry()).await?;
    store.migrate().await.context("applying migrations")?;
    let (mut catalog, invalid) = Catalog::load(&server.sop_dirs);
    for task in config.schedules.iter().filter_map(|s| s.agent_task()) {
        // Checked when the configuration was loaded.
        catalog.insert(task.context("an agent task of [[schedules]]")?);
    }
    catalog.require_roles(config.roles.keys().map(String::as_str));
    for error in &invalid {
        tracing::warn!("skipped an invalid SOP file:\n{error}");
    }
    let bus: Arc<dyn Bus> = if server.nats_url.is_empty() {
        Arc::new(InProcessBus::new(store.clone()))
    } else {
        Arc::new(
            JetStreamBus::connect(
                &server.nats_url,
                server.nats_prefix.clone(),
                crate::startup_retry(),
            )
            .await?,
        )
    };
    sync_schedules(&store, config, &catalog).await?;
    let token_file = server.data_dir.join("admin.token");
    ensure_admin_token(&store, &token_file).await?;

    let listener = tokio::net::TcpListener::bind(&server.listen)
        .await
        .with_context(|| format!("listening on {}", server.listen))?;
    let shutdown = CancellationToken::new();
    let catalog = Arc::new(catalog);
    let mut tasks = tokio::task::JoinSet::new();
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
    tasks.spawn(Scheduler::new(store.clone(), catalog.clone()).run(bus.clone(), shutdown.clone()));
    // Scripts run in their workspace, so the paths they are given must not be relative.
    let data_dir = std::path::absolute(&server.data_dir)?;
    let sandbox = crate::sandbox::sandboxes(config, &data_dir).await?;
    let github_client = match &config.github {
        Some(github) => github_client(github)?,
        None => None,
    };
    let delivery = match (&config.github, &github_client) {
        (Some(github), Some(client)) => Some(Arc::new(gatehouse_runner::Deliverer {
            github: client.clone(),
            git_url: github.git_base(),
            author_name: github.commit_author.clone(),
            author_email: github.commit_email.clone(),
        })),
        _ => None,
    };
    let runner_options = RunnerOptions {
        concurrency: config.runner.concurrency,
        ack_wait: config.runner.lease,
        data_dir: data_dir.clone(),
        delivery,
        profiles: config.sandbox.profiles.clone(),
        roles: config.roles.clone(),
        prices: config.pricing.clone(),
        log_limit: usize::try_from(config.runner.log_limit.as_u64()).unwrap_or(usize::MAX),
    };
    tasks.spawn(
        Runner::new(store.clone(), Arc::new(sandbox), runner_options)
            .run(bus.clone(), shutdown.clone()),
    );
    let slack_client = crate::chat::slack_client(config)?;
    let mut api = ApiState::new(store.clone(), catalog.clone())
        .with_people(people(config))
        .with_chat(crate::chat::settings(
            config,
            &catalog,
            slack_client.as_ref(),
        )?);
    if let Some(github) = &config.github {
        api = api.with_github(github_settings(github)?);
    }
    if config.github.is_some() || config.slack.is_some() || config.discord.is_some() {
        tasks.spawn(gatehouse_ingest::process_deliveries(
            api.clone(),
            shutdown.clone(),
        ));
    }
    crate::chat::spawn_gateway(config, &api, &mut tasks, &shutdown)?;
    if let Some(github) = &config.github {
        match &github_client {
            Some(client) => {
                tasks.spawn(gatehouse_ingest::reconcile_github(
                    api.clone(),
                    client.clone(),
                    github.reconcile_interval,
                    shutdown.clone(),
                ));
            }
            None => tracing::warn!(
                "[github] has no token (nor app_id and private_key): no status comments, replies, reconciliation or delivery"
            ),
        }
    }
    let mut notifier = Notifier::new(store.clone(), github_client)
        .with_chat(crate::chat::outputs(config, slack_client)?)
        .with_data_dir(&data_dir);
    if !server.public_url.is_empty() {
        notifier = notifier.with_public_url(&server.public_url);
    }
    tasks.spawn(notifier.run(bus.clone(), shutdown.clone()));
    let app = gatehouse_ingest::router(api).merge(crate::metrics::router(metrics));
    let serve_shutdown = shutdown.clone();
    tasks.spawn(async move {
        let serve = axum::serve(listener, app)
            .with_graceful_shutdown(async move { serve_shutdown.cancelled().await });
        if let Err(err) = serve.await {
            tracing::error!(error = %err, "the HTTP server stopped");
        }
    });
    tracing::info!(
        listen = %server.listen,
        database = %store.target(),
        bus = if server.nats_url.is_empty() { "in-process" } else { "NATS JetStream" },
        sops = catalog.iter().count(),
        token = %token_file.display(),
        "Gatehouse is up"
    );
    eprintln!(
        "Gatehouse is up on http://{} (admin token in {})",
        server.listen,
        token_file.display()
    );

    wait_for_signal().await;
    tracing::info!("shutting down");
    shutdown.cancel();
    while tasks.join_next().await.is_some() {}
    store.close().await;
    Ok(())
}

async fn wait_for_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

/// Writes an admin token to `path` (mode 0600) on first start, and makes sure the store
/// knows it on every start (a fresh database keeps working with the old file).
async fn ensure_admin_token(store: &Store, path: &Path) -> anyhow::Result<()> {
    let token = match std::fs::read_to_string(path) {
        Ok(token) => token.trim().to_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let token = new_token();
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .with_context(|| format!("writing {}", path.display()))?;
            writeln!(file, "{token}")?;
            token
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let hash = hash_token(&token);
    if store.token_name(&hash).await?.is_none() {
        store.create_token("admin", &hash).await?;
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
            gatehouse_ingest::Trigger::new(
                &t.label,
                &t.sop,
                &t.repos,
                t.cancel_on_unlabel,
                t.allow_forks,
            )
            .with_context(|| format!("github.triggers `{}`: repos", t.label))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(gatehouse_ingest::GithubSettings {
        webhook_secrets,
        triggers,
        bot_login: github.bot_login.clone(),
        max_body_bytes: github.max_body_bytes,
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
