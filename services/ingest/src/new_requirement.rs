//! What every new requirement gets, whatever it came from: its row and
//! `requirement.created`, in the caller's transaction.

use chrono::Utc;
use gatehouse_events::{Actor, Event, RequirementCreated, RequirementSource, RequirementState};
use gatehouse_store::{RequirementRow, Tx};
use uuid::Uuid;

use crate::{ApiError, outbox};

/// A requirement about to be created.
pub(crate) struct NewRequirement {
    /// Unique per source (`github:owner/repo#12`, `slack:C…:ts`).
    pub key: String,
    /// Where it lives.
    pub source: RequirementSource,
    pub title: String,
    pub body: String,
    /// Link, when there is one.
    pub url: Option<String>,
    pub state: RequirementState,
    /// The source's own last-change time; empty when unknown.
    pub source_updated_at: String,
    /// Who asked.
    pub author: Actor,
    /// The project its source belongs to (a project's repository or channel).
    pub project: Option<String>,
}

/// Stores `new` and emits `requirement.created`.
pub(crate) async fn create(tx: &mut Tx, new: NewRequirement) -> Result<RequirementRow, ApiError> {
    let now = Utc::now();
    let row = RequirementRow {
        id: Uuid::now_v7(),
        source_key: new.key,
        source: serde_json::to_string(&new.source)?,
        title: new.title,
        body: new.body,
        url: new.url,
        state: new.state,
        requested_by: new
            .author
            .person
            .clone()
            .unwrap_or_else(|| new.author.handle.clone()),
        source_updated_at: new.source_updated_at,
        project: new.project,
        created_at: now,
        updated_at: now,
    };
    tx.insert_requirement(&row).await?;
    let created = RequirementCreated {
        requirement_id: row.id,
        source: new.source,
        title: row.title.clone(),
        body: row.body.clone(),
        url: row.url.clone(),
        requested_by: new.author,
    };
    outbox::append(tx, Event::RequirementCreated(created)).await?;
    Ok(row)
}
