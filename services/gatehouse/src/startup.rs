//! What a process does before its services start: it catches signals, creates its data
//! directory, connects to the store and the bus (`up` insists, a `serve` replica waits),
//! opens its HTTP listeners with the probes and metrics, and brings `[[schedules]]` into
//! the store.

use crate::config::{BlobBackend, StorageConfig};
use gatehouse_blobs::{Blobs, LocalBlobs, NatsBlobs};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Context;
use gatehouse_bus::{Bus, InProcessBus, JetStreamBus};
use gatehouse_store::Store;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::{Config, ServerConfig};
use crate::health::Backends;

/// How often a `serve` process waiting for its database, migrations or NATS looks again.
const READY_POLL: Duration = Duration::from_secs(2);

/// The store and the bus. `up` is started by hand: when its database or NATS is not there,
/// it says so and stops (and applies the migrations itself). A `serve` replica is started by
/// an orchestrator, often before them: it connects lazily and waits for as long as it takes
/// (saying why on `/readyz`) instead of exiting into a restart loop.
pub async fn connect(
    server: &ServerConfig,
    storage: &StorageConfig,
    insist: bool,
) -> anyhow::Result<(Store, Arc<dyn Bus>, Blobs)> {
    let store = if insist {
        let store =
            Store::connect(&server.effective_database_url(), crate::startup_retry()).await?;
        store.migrate().await.context("applying migrations")?;
        store
    } else {
        Store::connect_lazy(&server.effective_database_url())?
    };
    let jetstream = if server.nats_url.is_empty() {
        None
    } else if insist {
        Some(
            JetStreamBus::connect(
                &server.nats_url,
                server.nats_prefix.clone(),
                crate::startup_retry(),
            )
            .await?,
        )
    } else {
        Some(JetStreamBus::connect_lazy(&server.nats_url, server.nats_prefix.clone()).await?)
    };
    let blobs: Blobs = match (storage.backend(&server.nats_url), &jetstream) {
        (BlobBackend::Local, _) => Arc::new(LocalBlobs::new(
            std::path::absolute(&server.data_dir)?.join("blobs"),
        )),
        (BlobBackend::Nats, Some(jetstream)) => Arc::new(NatsBlobs::new(
            jetstream.context(),
            server.nats_prefix.blob_bucket(),
        )?),
        // Refused before the start by `settings::check::refusals`.
        (BlobBackend::Nats, None) => anyhow::bail!(
            "storage.blobs = \"nats\" needs NATS: set server.nats_url (or --nats, GATEHOUSE_NATS_URL)"
        ),
    };
    let bus: Arc<dyn Bus> = match jetstream {
        Some(jetstream) => Arc::new(jetstream),
        None => Arc::new(InProcessBus::in_place(store.clone())),
    };
    Ok((store, bus, blobs))
}

/// Opens `listen` (and `metrics_listen` when set) and serves the probes and metrics at
/// once; the service's own routes (ingest's API) are served once they are set in `routes`.
/// The address it listens on, as bound (`:0` gives a real port).
pub async fn listen(
    server: &ServerConfig,
    metrics: metrics_exporter_prometheus::PrometheusHandle,
    backends: &Backends,
    routes: &Arc<OnceLock<axum::Router>>,
    tasks: &mut JoinSet<()>,
    shutdown: &CancellationToken,
) -> anyhow::Result<std::net::SocketAddr> {
    let listener = bind(
        &server.listen,
        "pass --listen HOST:PORT (or set server.listen) for another",
    )
    .await?;
    let bound = listener
        .local_addr()
        .with_context(|| format!("listening on {}", server.listen))?;
    let limits = crate::settings::limits(server);
    let metrics_token = server
        .metrics_token
        .as_ref()
        .map(|t| t.resolve().context("server.metrics_token"))
        .transpose()?;
    let metrics = crate::metrics::router(metrics, metrics_token);
    let health = crate::health::router(backends.clone(), routes.clone());
    let app = if server.metrics_listen.is_empty() {
        health.merge(metrics)
    } else {
        let metrics_listener = bind(
            &server.metrics_listen,
            "set server.metrics_listen to another address",
        )
        .await?;
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
    Ok(bound)
}

/// A listener on `addr`; an address another process holds is refused saying so and what
/// to do (`instead`).
async fn bind(addr: &str, instead: &str) -> anyhow::Result<tokio::net::TcpListener> {
    match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => Ok(listener),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => anyhow::bail!(
            "cannot listen on {addr}: the address is already in use (by another Gatehouse, or \
             another program); {instead}"
        ),
        Err(e) => Err(e).with_context(|| format!("listening on {addr}")),
    }
}

/// How long the start-up wait gives each backend to answer before it asks again.
const READY_CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// Waits until the store, the bus and the blob store are ready (a signal ends the wait:
/// `false`).
pub async fn wait_until_ready(backends: &Backends, signalled: &CancellationToken) -> bool {
    let mut told = false;
    loop {
        let problem = tokio::select! {
            problem = backends.problem(READY_CHECK_TIMEOUT) => problem,
            () = signalled.cancelled() => return false,
        };
        let Some((what, why)) = problem else {
            return true;
        };
        if !told {
            tracing::warn!(problem = %format!("{what}: {why}"), "not ready yet; waiting (see /readyz)");
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
pub fn signals() -> anyhow::Result<CancellationToken> {
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
pub fn create_data_dir(dir: &Path) -> anyhow::Result<()> {
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
pub async fn sync_schedules(store: &Store, config: &Config) -> anyhow::Result<()> {
    let now = chrono::Utc::now();
    for s in &config.schedules {
        let timing = s.timing()?;
        if timing.next_fire(jiff::Timestamp::now()).is_none() {
            tracing::warn!(schedule = %s.name, "the schedule has ended: it will not fire again");
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
