//! The notifier's consumer: `run.updated` snapshots become the wanted text of the run's
//! status comment on its GitHub issue.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use gatehouse_bus::{Bus, Consumer, ConsumerOptions, ConsumerSpec, Handler, HandlerError};
use gatehouse_engine::RunState;
use gatehouse_events::{Envelope, Event, RequirementSource};
use gatehouse_github::GithubClient;
use gatehouse_sop::Sop;
use gatehouse_store::{Store, Tx};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::{Links, render_status};

/// The notifier: cheap to clone.
#[derive(Clone)]
pub struct Notifier {
    pub(crate) store: Store,
    pub(crate) github: Option<GithubClient>,
    /// Wakes the poster when a comment's text changed.
    pub(crate) wake: Arc<Notify>,
    public_url: Option<String>,
    definitions: Arc<Mutex<HashMap<String, Arc<Sop>>>>,
}

impl Notifier {
    /// A notifier posting to GitHub through `github` (none: status is kept, not posted).
    pub fn new(store: Store, github: Option<GithubClient>) -> Self {
        Self {
            store,
            github,
            wake: Arc::default(),
            public_url: None,
            definitions: Arc::default(),
        }
    }

    /// Links status comments to runs at `url` (`server.public_url`).
    pub fn with_public_url(mut self, url: &str) -> Self {
        self.public_url = Some(url.trim_end_matches('/').to_owned());
        self
    }

    /// Consumes run snapshots and posts comments until `shutdown`.
    pub async fn run(self, bus: Arc<dyn Bus>, shutdown: CancellationToken) {
        let options = ConsumerOptions {
            retry_delay: Duration::from_millis(500),
            ..ConsumerOptions::new(ConsumerSpec::new("notifier-runs", "run.updated"))
        };
        let consumer = Consumer::new(bus, self.store.clone(), options);
        let poster = tokio::spawn(self.clone().post_comments(shutdown.clone()));
        consumer.run(&self, shutdown).await;
        let _ = poster.await;
    }

    async fn definition(&self, version: &str) -> Result<Arc<Sop>, HandlerError> {
        if let Some(sop) = self
            .definitions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(version)
        {
            return Ok(sop.clone());
        }
        let (source, body) = self
            .store
            .sop_version_body(version)
            .await?
            .ok_or_else(|| format!("SOP version {version} is not stored"))?;
        let sop = Arc::new(gatehouse_sop::parse(&source, &body)?);
        self.definitions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(version.to_owned(), sop.clone());
        Ok(sop)
    }
}

#[async_trait]
impl Handler for Notifier {
    async fn handle(&self, tx: &mut Tx, envelope: &Envelope) -> Result<(), HandlerError> {
        // Without GitHub there is nowhere to show a status: keep no wanted comments around.
        if self.github.is_none() {
            return Ok(());
        }
        let Ok(Event::RunUpdated(update)) = envelope.decode() else {
            return Ok(());
        };
        let Some(requirement_id) = update.requirement_id else {
            return Ok(());
        };
        let Some(requirement) = self.store.requirement(requirement_id).await? else {
            return Ok(());
        };
        let Ok(RequirementSource::Github { repo, number, .. }) =
            serde_json::from_str::<RequirementSource>(&requirement.source)
        else {
            return Ok(());
        };
        // Render from the stored run, not the snapshot: a late snapshot must not roll the
        // comment back, and the stored run is always the newest.
        let Some(run) = self.store.run(update.run_id).await? else {
            return Ok(());
        };
        let sop = self.definition(&run.sop_version).await?;
        let state: RunState = serde_json::from_str(&run.state)?;
        let links = Links {
            run: self
                .public_url
                .as_ref()
                .map(|url| format!("{url}/api/v1/runs/{}", run.id)),
            pull_request: self
                .store
                .pull_request_of_run(run.id)
                .await?
                .filter(|(pull_repo, _)| *pull_repo == repo)
                .map(|(_, number)| number),
        };
        let body = render_status(run.id, &sop, &state, &links);
        tx.want_comment(&format!("run:{}", run.id), &repo, number, &body)
            .await?;
        self.wake.notify_one();
        Ok(())
    }
}
