//! The notifier's consumer: `run.updated` snapshots become the wanted text of the run's
//! status comment on its GitHub issue, and its approval cards and progress in chat.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use gatehouse_bus::{Bus, Consumer, ConsumerOptions, ConsumerSpec, Handler, HandlerError};
use gatehouse_engine::RunState;
use gatehouse_events::{Envelope, Event, RequirementSource};
use gatehouse_github::GithubClient;
use gatehouse_sop::Sop;
use gatehouse_store::{RequirementRow, RunRow, Store, Tx};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::{ChatOutputs, Links, RunNotes, render_status};

/// The notifier: cheap to clone.
#[derive(Clone)]
pub struct Notifier {
    pub(crate) store: Store,
    pub(crate) github: Option<GithubClient>,
    /// Wakes the poster when a comment's text changed.
    pub(crate) wake: Arc<Notify>,
    /// Slack and Discord, where configured.
    pub(crate) chat: ChatOutputs,
    /// Wakes the chat poster when a message changed.
    pub(crate) chat_wake: Arc<Notify>,
    /// Where artifacts are, for excerpts on cards.
    pub(crate) data_dir: Option<PathBuf>,
    /// The blob store the runners put artifacts in, for the excerpts on cards.
    pub(crate) blobs: Option<gatehouse_blobs::Blobs>,
    /// The console's address (`server.public_url`), without a trailing slash.
    pub(crate) public_url: Option<String>,
    /// This notifier among its replicas, for the posting leases.
    holder: Arc<str>,
}

/// The posting leases: one notifier replica posts chat messages (and one GitHub comments)
/// at a time, so two can never race to create the same message. A holder renews before
/// every post; one that stops (crash, stall) loses it after this long.
const POSTING_LEASE: Duration = Duration::from_secs(15);
/// Snapshots applied in one transaction when several are waiting.
const BATCH: usize = 64;
/// How long a snapshot waits before it is applied: a status comment or card a few
/// milliseconds later is not noticed, and the commits that start the run's nodes go first.
const LINGER: Duration = Duration::from_millis(5);
/// The lease of chat posting.
pub(crate) const CHAT_LEASE: &str = "notifier-chat";
/// The lease of comment posting.
pub(crate) const COMMENTS_LEASE: &str = "notifier-comments";

impl Notifier {
    /// A notifier posting to GitHub through `github` (none: status is kept, not posted).
    pub fn new(store: Store, github: Option<GithubClient>) -> Self {
        Self {
            store,
            github,
            wake: Arc::default(),
            chat: ChatOutputs::default(),
            chat_wake: Arc::default(),
            data_dir: None,
            blobs: None,
            public_url: None,
            holder: Uuid::now_v7().to_string().into(),
        }
    }

    /// Links status comments, cards and progress messages to the console's pages at `url`
    /// (`server.public_url`).
    pub fn with_public_url(mut self, url: &str) -> Self {
        self.public_url = Some(url.trim_end_matches('/').to_owned());
        self
    }

    /// Posts approval cards and progress to these chats.
    pub fn with_chat(mut self, chat: ChatOutputs) -> Self {
        self.chat = chat;
        self
    }

    /// Reads artifacts from `blobs` for the excerpts on cards.
    pub fn with_blobs(mut self, blobs: gatehouse_blobs::Blobs) -> Self {
        self.blobs = Some(blobs);
        self
    }

    /// Reads artifacts recorded before the blob store under `dir` (`server.data_dir`),
    /// for the excerpts on cards.
    pub fn with_data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }

    /// The run's page in the console, when `server.public_url` is known.
    pub(crate) fn run_url(&self, run: Uuid) -> Option<String> {
        self.public_url
            .as_ref()
            .map(|url| format!("{url}/runs/{run}"))
    }

    /// Consumes run snapshots and agents' questions, and posts comments and chat messages,
    /// until `shutdown`.
    pub async fn run(self, bus: Arc<dyn Bus>, shutdown: CancellationToken) {
        // Every effect of `handle` is in its transaction (the posters act after the
        // commit): snapshots waiting together are applied in one commit.
        let options = ConsumerOptions {
            retry_delay: Duration::from_millis(500),
            batch: BATCH,
            linger: LINGER,
            ..ConsumerOptions::new(ConsumerSpec::new("notifier-runs", "run.updated"))
        };
        let consumer = Consumer::new(bus.clone(), self.store.clone(), options);
        // Agents' questions: their cards, and the status comment that lists them.
        let questions = Consumer::new(
            bus,
            self.store.clone(),
            ConsumerOptions {
                retry_delay: Duration::from_millis(500),
                ..ConsumerOptions::new(ConsumerSpec::new(
                    crate::questions::CONSUMER,
                    crate::questions::TOPICS,
                ))
            },
        );
        let poster = tokio::spawn(self.clone().post_comments(shutdown.clone()));
        let chat_poster = tokio::spawn(self.clone().post_chat(shutdown.clone()));
        let asked = crate::questions::Questions(self.clone());
        tokio::join!(
            consumer.run(&self, shutdown.clone()),
            questions.run(&asked, shutdown)
        );
        let _ = poster.await;
        let _ = chat_poster.await;
        // Another replica need not wait for the leases to run out.
        for lease in [CHAT_LEASE, COMMENTS_LEASE] {
            let _ = self.store.release_lease(lease, &self.holder).await;
        }
    }

    /// Whether this replica may post under `lease` now (taking or renewing it).
    pub(crate) async fn may_post(&self, lease: &str) -> bool {
        match self
            .store
            .hold_lease(lease, &self.holder, POSTING_LEASE)
            .await
        {
            Ok(held) => held,
            Err(e) => {
                tracing::warn!(%lease, error = %e, "taking the posting lease failed");
                false
            }
        }
    }

    async fn definition(&self, version: &str) -> Result<Arc<Sop>, HandlerError> {
        Ok(self
            .store
            .sop_definition(version)
            .await?
            .ok_or_else(|| format!("SOP version {version} is not stored"))?)
    }
}

#[async_trait]
impl Handler for Notifier {
    async fn handle(&self, tx: &mut Tx, envelope: &Envelope) -> Result<(), HandlerError> {
        // With nowhere to show anything, keep no wanted messages around.
        if self.github.is_none() && !self.chat.any() {
            return Ok(());
        }
        let Ok(Event::RunUpdated(update)) = envelope.decode() else {
            return Ok(());
        };
        // GitHub shows only runs on an issue; chat cards go out for every run.
        if !self.chat.any() && update.requirement_id.is_none() {
            return Ok(());
        }
        // Render from the stored run, not the snapshot: a late snapshot must not roll a
        // message back, and the stored run is always the newest.
        let Some(run) = self.store.run(update.run_id).await? else {
            return Ok(());
        };
        let requirement = match run.requirement_id {
            Some(id) => self.store.requirement(id).await?,
            None => None,
        };
        let sop = self.definition(&run.sop_version).await?;
        let state: RunState = serde_json::from_str(&run.state)?;
        if self.github.is_some()
            && let Some(requirement) = &requirement
        {
            self.github_status(tx, &run, &sop, &state, requirement)
                .await?;
        }
        if self.chat.any() {
            self.update_chat(tx, &run, &sop, &state, requirement.as_ref(), &update)
                .await?;
        }
        Ok(())
    }

    async fn committed(&self, _event: &Envelope) {
        // The posters read what `handle` wrote: before the commit they would find nothing
        // and sleep their poll interval.
        self.wake.notify_one();
        self.chat_wake.notify_one();
    }
}

impl Notifier {
    /// Renders the status comment of run `run_id` again, from the stored run (an agent's
    /// question changed what it says without the run changing).
    pub(crate) async fn status_of_run(
        &self,
        tx: &mut Tx,
        run_id: Uuid,
    ) -> Result<(), HandlerError> {
        let Some(run) = self.store.run(run_id).await? else {
            return Ok(());
        };
        let Some(requirement) = (match run.requirement_id {
            Some(id) => self.store.requirement(id).await?,
            None => None,
        }) else {
            return Ok(());
        };
        let sop = self.definition(&run.sop_version).await?;
        let state: RunState = serde_json::from_str(&run.state)?;
        self.github_status(tx, &run, &sop, &state, &requirement)
            .await
    }

    /// The run's status comment on its GitHub issue.
    async fn github_status(
        &self,
        tx: &mut Tx,
        run: &RunRow,
        sop: &Sop,
        state: &RunState,
        requirement: &RequirementRow,
    ) -> Result<(), HandlerError> {
        let Ok(RequirementSource::Github { repo, number, .. }) =
            serde_json::from_str::<RequirementSource>(&requirement.source)
        else {
            return Ok(());
        };
        let links = Links {
            run: self.run_url(run.id),
            pull_requests: self
                .store
                .pull_requests_of_run(run.id)
                .await?
                .into_iter()
                .map(|(pull_repo, number)| {
                    if pull_repo == repo {
                        format!("#{number}")
                    } else {
                        format!("{pull_repo}#{number}")
                    }
                })
                .collect(),
        };
        // The hosts its sandboxes were refused and the budgets it used most of.
        let notes = RunNotes::read(&self.store, run).await?;
        let body = render_status(run.id, sop, state, &links, &notes);
        tx.want_comment(&format!("run:{}", run.id), &repo, number, &body)
            .await?;
        Ok(())
    }
}
