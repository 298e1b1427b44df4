//! The envelope every message travels in.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{Event, EventError, EventType, TraceParent};

/// The envelope schema this build writes and the highest it reads.
pub const SCHEMA_VERSION: u32 = 1;

/// Ids that tie an event to the requirement, run, node and attempt it concerns, so logs and
/// consumers can follow one piece of work without decoding payloads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Correlation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirement_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<Uuid>,
    /// The node within the run, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

impl Correlation {
    /// Correlation for an event about a requirement only.
    pub fn requirement(requirement_id: Uuid) -> Self {
        Self {
            requirement_id: Some(requirement_id),
            ..Self::default()
        }
    }

    /// Correlation for an event about a whole run.
    pub fn run(run_id: Uuid) -> Self {
        Self {
            run_id: Some(run_id),
            ..Self::default()
        }
    }
}

/// One message on the bus.
///
/// The payload is kept as JSON until [`Envelope::decode`] so that a consumer can route,
/// deduplicate and dead-letter an event whose type it does not know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// UUIDv7: unique, and ordered by creation time. Also the `Nats-Msg-Id`.
    pub id: Uuid,
    /// Event type, e.g. `gate.decision`.
    #[serde(rename = "type")]
    pub event_type: String,
    pub schema_version: u32,
    /// When the fact happened.
    pub occurred_at: DateTime<Utc>,
    /// The service (and replica) that emitted it, e.g. `ingest`.
    pub source: String,
    /// Ids of the work it concerns.
    #[serde(default)]
    pub correlation: Correlation,
    /// W3C traceparent of the operation that caused it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceParent>,
    /// The typed payload as JSON.
    pub payload: serde_json::Value,
}

impl Envelope {
    /// Wraps an event with a fresh UUIDv7, the current time and the correlation ids the
    /// payload implies.
    pub fn new(
        source: impl Into<String>,
        event: &Event,
        trace: Option<TraceParent>,
    ) -> Result<Self, EventError> {
        let event_type = event.event_type().as_str();
        let invalid = |source| EventError::Payload {
            event_type: event_type.to_owned(),
            source,
        };
        // Adjacent tagging lays the payload out under "payload".
        let mut tagged = serde_json::to_value(event).map_err(invalid)?;
        let payload = tagged
            .get_mut("payload")
            .map(serde_json::Value::take)
            .unwrap_or_default();
        Ok(Self {
            id: Uuid::now_v7(),
            event_type: event_type.to_owned(),
            schema_version: SCHEMA_VERSION,
            occurred_at: Utc::now(),
            source: source.into(),
            correlation: event.correlation(),
            trace,
            payload,
        })
    }

    /// Parses an envelope from the bus, refusing ones written by a newer schema.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, EventError> {
        let envelope: Self = serde_json::from_slice(bytes).map_err(EventError::Malformed)?;
        if envelope.schema_version > SCHEMA_VERSION {
            return Err(EventError::FutureSchema {
                found: envelope.schema_version,
                supported: SCHEMA_VERSION,
            });
        }
        Ok(envelope)
    }

    /// The bytes put on the bus.
    pub fn to_bytes(&self) -> Result<Vec<u8>, EventError> {
        serde_json::to_vec(self).map_err(|source| EventError::Payload {
            event_type: self.event_type.clone(),
            source,
        })
    }

    /// The typed event. An unknown type is reported as [`EventError::UnknownType`] so a
    /// consumer can choose to skip it rather than fail.
    pub fn decode(&self) -> Result<Event, EventError> {
        let event_type: EventType = self.event_type.parse()?;
        let tagged = serde_json::json!({ "type": event_type.as_str(), "payload": self.payload });
        serde_json::from_value(tagged).map_err(|source| EventError::Payload {
            event_type: self.event_type.clone(),
            source,
        })
    }
}
