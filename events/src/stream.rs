//! The two JetStream streams and which events live in which.

use std::time::Duration;

use crate::{EventType, Prefix};

/// Which of the two streams a topic belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamKind {
    /// Facts about requirements, runs, gates and cards; kept for a while, read by many.
    Events,
    /// Work for runners; each job is removed once one runner acknowledges it.
    Jobs,
}

impl StreamKind {
    /// The stream a concrete topic is stored in. Only `node.dispatch` and `turn.dispatch`
    /// are work; everything else, including topics this build does not know, is an event.
    pub fn for_topic(topic: &str) -> Self {
        if topic == EventType::NodeDispatch.as_str() || topic == EventType::TurnDispatch.as_str() {
            Self::Jobs
        } else {
            Self::Events
        }
    }

    /// How the stream keeps messages.
    pub fn is_work_queue(self) -> bool {
        matches!(self, Self::Jobs)
    }
}

/// A stream definition, independent of the NATS client so the in-process bus and the
/// JetStream bus are configured from the same facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSpec {
    /// Which stream this is.
    pub kind: StreamKind,
    /// Stream name, e.g. `GATEHOUSE_EVENTS`.
    pub name: String,
    /// NATS subjects captured by the stream.
    pub subjects: Vec<String>,
    /// Messages older than this are dropped (events only; jobs leave when acknowledged).
    pub max_age: Option<Duration>,
    /// Window in which a repeated `Nats-Msg-Id` is dropped as a duplicate.
    pub duplicate_window: Duration,
}

/// How long events are kept: long enough to replay a week of history into a new consumer.
const EVENTS_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// The relay republishes what it could not mark sent; ten minutes covers a crashed relay's
/// lease plus a restart.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(600);

impl StreamSpec {
    /// Both streams of a deployment. Subjects are listed per event family because NATS does
    /// not allow two streams to capture the same subject: `node.dispatch` and
    /// `turn.dispatch` must belong to the jobs stream only.
    pub fn all(prefix: &Prefix) -> [StreamSpec; 2] {
        let events = [
            "requirement.>",
            "run.>",
            "gate.>",
            "card.>",
            "conversation.>",
            "question.>",
        ]
        .into_iter()
        .map(|family| prefix.subject(family))
        .chain(
            [
                EventType::NodeProgress,
                EventType::NodeFinished,
                EventType::TurnProgress,
                EventType::TurnFinished,
                EventType::TurnCancel,
            ]
            .into_iter()
            .map(|t| prefix.subject(t.as_str())),
        )
        .collect();
        [
            StreamSpec {
                kind: StreamKind::Events,
                name: prefix.stream_name(StreamKind::Events),
                subjects: events,
                max_age: Some(EVENTS_MAX_AGE),
                duplicate_window: DUPLICATE_WINDOW,
            },
            StreamSpec {
                kind: StreamKind::Jobs,
                name: prefix.stream_name(StreamKind::Jobs),
                subjects: [EventType::NodeDispatch, EventType::TurnDispatch]
                    .into_iter()
                    .map(|t| prefix.subject(t.as_str()))
                    .collect(),
                max_age: None,
                duplicate_window: DUPLICATE_WINDOW,
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topic_matches;

    #[test]
    fn every_event_type_is_captured_by_exactly_one_stream() {
        let prefix = Prefix::default();
        let streams = StreamSpec::all(&prefix);
        for t in EventType::ALL {
            let subject = prefix.subject(t.as_str());
            let owners: Vec<_> = streams
                .iter()
                .filter(|s| s.subjects.iter().any(|f| topic_matches(f, &subject)))
                .map(|s| s.kind)
                .collect();
            assert_eq!(owners, vec![StreamKind::for_topic(t.as_str())], "{t:?}");
        }
    }
}
