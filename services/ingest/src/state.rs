//! What handlers share.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use gatehouse_engine::RunState;
use gatehouse_events::{Actor, Channel, Envelope, Event};
use gatehouse_sop::{Catalog, Sop};
use gatehouse_store::{RunRow, Store, Tx};
use uuid::Uuid;

use crate::{ApiError, ChatSettings, GithubSettings, People};

/// The API's shared state: cheap to clone.
#[derive(Clone)]
pub struct ApiState {
    pub(crate) store: Store,
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) people: Arc<People>,
    pub(crate) github: Option<Arc<GithubSettings>>,
    pub(crate) chat: Arc<ChatSettings>,
    /// Where the runner keeps artifacts (the same data directory), to serve them.
    pub(crate) data_dir: Option<std::path::PathBuf>,
    /// Wakes the delivery processor when a webhook was stored.
    pub(crate) deliveries: Arc<tokio::sync::Notify>,
    definitions: Arc<Mutex<HashMap<String, Arc<Sop>>>>,
}

impl ApiState {
    /// An API over `store`, offering the SOPs in `catalog`.
    pub fn new(store: Store, catalog: Arc<Catalog>) -> Self {
        Self {
            store,
            catalog,
            people: Arc::default(),
            github: None,
            chat: Arc::default(),
            data_dir: None,
            deliveries: Arc::default(),
            definitions: Arc::default(),
        }
    }

    /// Accepts GitHub webhooks at `/webhooks/github` with these settings.
    pub fn with_github(mut self, github: GithubSettings) -> Self {
        self.github = Some(Arc::new(github));
        self
    }

    /// Accepts Slack and Discord at `/webhooks/slack/*` and `/webhooks/discord/*`.
    pub fn with_chat(mut self, chat: ChatSettings) -> Self {
        self.chat = Arc::new(chat);
        self
    }

    /// Serves artifacts from `data_dir` (where the runners write them).
    pub fn with_data_dir(mut self, data_dir: impl Into<std::path::PathBuf>) -> Self {
        self.data_dir = Some(data_dir.into());
        self
    }

    /// Who is who, for permissions (`[[people]]`).
    pub fn with_people(mut self, people: People) -> Self {
        self.people = Arc::new(people);
        self
    }

    /// A run with its frozen definition and decoded state, or 404.
    pub(crate) async fn load(&self, id: Uuid) -> Result<(RunRow, Arc<Sop>, RunState), ApiError> {
        let row = self
            .store
            .run(id)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("no run {id}")))?;
        self.decode(row).await
    }

    /// The definition and decoded state of a run already read.
    pub(crate) async fn decode(
        &self,
        row: RunRow,
    ) -> Result<(RunRow, Arc<Sop>, RunState), ApiError> {
        let sop = self.definition(&row.sop_version).await?;
        let state = serde_json::from_str(&row.state)
            .map_err(|e| ApiError::Internal(format!("run {} has unreadable state: {e}", row.id)))?;
        Ok((row, sop, state))
    }

    async fn definition(&self, version: &str) -> Result<Arc<Sop>, ApiError> {
        if let Some(sop) = self
            .definitions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(version)
        {
            return Ok(sop.clone());
        }
        let (source, body) =
            self.store.sop_version_body(version).await?.ok_or_else(|| {
                ApiError::Internal(format!("SOP version {version} is not stored"))
            })?;
        let sop = Arc::new(
            gatehouse_sop::parse(&source, &body).map_err(|e| ApiError::Internal(e.to_string()))?,
        );
        self.definitions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(version.to_owned(), sop.clone());
        Ok(sop)
    }

    /// Appends an event to the outbox for the scheduler.
    pub(crate) async fn emit(&self, event: Event) -> Result<Uuid, ApiError> {
        let mut tx = self.store.begin().await?;
        let id = self.append(&mut tx, event).await?;
        tx.commit().await?;
        Ok(id)
    }

    /// Appends an event to the outbox within the caller's transaction, so it is sent if and
    /// only if the rest of the transaction commits.
    pub(crate) async fn append(&self, tx: &mut Tx, event: Event) -> Result<Uuid, ApiError> {
        // Continues the trace of the request or delivery being handled.
        let envelope = Envelope::new("ingest", &event, Some(crate::trace::for_event()))?;
        tx.append_outbox(&envelope).await?;
        Ok(envelope.id)
    }
}

/// The caller as an actor on the API channel.
pub(crate) fn actor(person: &str) -> Actor {
    Actor {
        channel: Channel::Api,
        handle: person.to_owned(),
        person: Some(person.to_owned()),
    }
}
