//! Subject naming.
//!
//! Services talk in *topics*: the event type as a dotted name (`gate.decision`), or a filter
//! over them with NATS wildcards (`gate.>`, `node.*`). A deployment's [`Prefix`] turns a topic
//! into a NATS subject (`gatehouse.gate.decision`) and names its streams, so several
//! deployments or parallel test runs can share one NATS server without seeing each other.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{EventError, StreamKind};

/// The validated `nats_prefix` of one deployment.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Prefix(String);

impl Prefix {
    /// Validates a prefix: it becomes part of stream names, which forbid `.`, `*`, `>` and
    /// whitespace, so only letters, digits, `_` and `-` are allowed.
    pub fn new(prefix: &str) -> Result<Self, EventError> {
        let valid = (1..=32).contains(&prefix.len())
            && prefix.starts_with(|c: char| c.is_ascii_alphabetic())
            && prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if valid {
            Ok(Self(prefix.to_owned()))
        } else {
            Err(EventError::InvalidPrefix(prefix.to_owned()))
        }
    }

    /// The NATS subject for a topic or topic filter.
    pub fn subject(&self, topic: &str) -> String {
        format!("{}.{topic}", self.0)
    }

    /// The topic of a subject under this prefix, or `None` for a foreign subject.
    pub fn topic_of<'a>(&self, subject: &'a str) -> Option<&'a str> {
        subject.strip_prefix(self.0.as_str())?.strip_prefix('.')
    }

    /// The JetStream stream name, e.g. `GATEHOUSE_EVENTS` for the default prefix.
    pub fn stream_name(&self, kind: StreamKind) -> String {
        let base = self.0.to_ascii_uppercase().replace('-', "_");
        match kind {
            StreamKind::Events => format!("{base}_EVENTS"),
            StreamKind::Jobs => format!("{base}_JOBS"),
        }
    }

    /// The JetStream object store bucket of the deployment's blobs, e.g. `gatehouse_blobs`
    /// (a prefix holds nothing a bucket name may not).
    pub fn blob_bucket(&self) -> String {
        format!("{}_blobs", self.0)
    }

    /// The prefix itself.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Prefix {
    fn default() -> Self {
        Self("gatehouse".to_owned())
    }
}

impl TryFrom<String> for Prefix {
    type Error = EventError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(&value)
    }
}

impl From<Prefix> for String {
    fn from(value: Prefix) -> Self {
        value.0
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `topic` matches `filter` under NATS rules: `*` matches one token, a final `>`
/// matches one or more tokens.
///
/// The in-process bus uses this to give consumers the same filtering JetStream does.
pub fn topic_matches(filter: &str, topic: &str) -> bool {
    let mut topic_tokens = topic.split('.');
    let mut filter_tokens = filter.split('.').peekable();
    while let Some(f) = filter_tokens.next() {
        if f == ">" && filter_tokens.peek().is_none() {
            return topic_tokens.next().is_some();
        }
        match topic_tokens.next() {
            Some(t) if f == "*" || f == t => {}
            _ => return false,
        }
    }
    topic_tokens.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_validated() {
        assert!(Prefix::new("gatehouse").is_ok());
        assert!(Prefix::new("t_0193ab-x").is_ok());
        for bad in ["", "a.b", "a b", "a*", "a>", "1abc", &"x".repeat(33)] {
            assert!(Prefix::new(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn subjects_and_streams_carry_the_prefix() {
        let p = Prefix::new("team-a").unwrap();
        assert_eq!(p.subject("gate.decision"), "team-a.gate.decision");
        assert_eq!(p.topic_of("team-a.gate.decision"), Some("gate.decision"));
        assert_eq!(p.topic_of("team-ab.gate.decision"), None);
        assert_eq!(p.stream_name(StreamKind::Events), "TEAM_A_EVENTS");
        assert_eq!(
            Prefix::default().stream_name(StreamKind::Jobs),
            "GATEHOUSE_JOBS"
        );
        assert_eq!(p.blob_bucket(), "team-a_blobs");
        assert_eq!(Prefix::default().blob_bucket(), "gatehouse_blobs");
    }

    #[test]
    fn wildcards_follow_nats_rules() {
        assert!(topic_matches("gate.decision", "gate.decision"));
        assert!(topic_matches("gate.*", "gate.decision"));
        assert!(topic_matches("gate.>", "gate.decision"));
        assert!(topic_matches(">", "run.updated"));
        assert!(topic_matches("*.updated", "run.updated"));
        assert!(!topic_matches("gate.*", "gate"));
        assert!(!topic_matches("gate.>", "gate"));
        assert!(!topic_matches("gate.*", "gate.decision.extra"));
        assert!(!topic_matches("gate.decision", "gate.opened"));
        assert!(!topic_matches("gate.decision", "gate.decision.x"));
    }
}
