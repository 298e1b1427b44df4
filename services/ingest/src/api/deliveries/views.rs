//! Bodies of `/deliveries`: every webhook and chat event Gatehouse received, with what
//! became of it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// A delivery in a list.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct DeliverySummary {
    /// `SOURCE:DELIVERY_ID`, unique across sources: what `GET /deliveries/{id}` takes.
    pub id: String,
    /// github, slack or discord.
    pub source: String,
    /// The sender's id for it (GitHub's `X-GitHub-Delivery`, Slack's event id).
    pub delivery_id: String,
    /// What it was, with its action: `issues.labeled`, `event.app_mention`, `interaction`.
    pub event: String,
    pub received_at: DateTime<Utc>,
    /// When processing finished it.
    pub processed_at: Option<DateTime<Utc>>,
    /// processed, ignored, pending (not processed yet) or failed (processing failed; it
    /// is tried again).
    pub status: String,
    /// What became of it, in words: what it started, or why it was ignored.
    pub outcome: String,
    /// The project it concerns, when one was known as it arrived.
    pub project: Option<String>,
    /// The runs it started or acted on.
    pub runs: Vec<Uuid>,
    /// The conversations it opened or spoke in.
    pub conversations: Vec<Uuid>,
}

/// A delivery with what was received.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeliveryDetail {
    pub delivery: DeliverySummary,
    /// The body as received, pretty-printed, its tokens (`token`, `response_url`,
    /// `trigger_id`) masked and cut at 64 KiB; only administrators get it.
    pub payload: Option<String>,
    /// Why `payload` is missing, when it is.
    pub payload_withheld: Option<String>,
}
