use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::EventError;

/// A W3C Trace Context `traceparent` (version 00), carried in every envelope and in NATS
/// headers so one trace id follows a requirement from the webhook through every service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TraceParent {
    trace_id: String,
    span_id: String,
    flags: u8,
}

impl TraceParent {
    /// Starts a new, sampled trace: used where work enters Gatehouse (a webhook, a CLI call).
    pub fn new_root() -> Self {
        Self {
            trace_id: Uuid::new_v4().simple().to_string(),
            span_id: new_span_id(),
            flags: 1,
        }
    }

    /// The same trace with a fresh span id: used when one event causes another.
    pub fn child(&self) -> Self {
        Self {
            trace_id: self.trace_id.clone(),
            span_id: new_span_id(),
            flags: self.flags,
        }
    }

    /// The 32-hex-digit trace id, for log fields.
    pub fn trace_id(&self) -> &str {
        &self.trace_id
    }
}

fn new_span_id() -> String {
    Uuid::new_v4().simple().to_string()[..16].to_owned()
}

fn is_lower_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl FromStr for TraceParent {
    type Err = EventError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = || EventError::InvalidTraceParent(s.to_owned());
        let mut parts = s.split('-');
        let (Some("00"), Some(trace_id), Some(span_id), Some(flags), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(invalid());
        };
        let all_zero = |s: &str| s.bytes().all(|b| b == b'0');
        if !is_lower_hex(trace_id, 32)
            || !is_lower_hex(span_id, 16)
            || !is_lower_hex(flags, 2)
            || all_zero(trace_id)
            || all_zero(span_id)
        {
            return Err(invalid());
        }
        Ok(Self {
            trace_id: trace_id.to_owned(),
            span_id: span_id.to_owned(),
            flags: u8::from_str_radix(flags, 16).map_err(|_| invalid())?,
        })
    }
}

impl TryFrom<String> for TraceParent {
    type Error = EventError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<TraceParent> for String {
    fn from(value: TraceParent) -> Self {
        value.to_string()
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "00-{}-{}-{:02x}",
            self.trace_id, self.span_id, self.flags
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_w3c_example() {
        let raw = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let tp: TraceParent = raw.parse().unwrap();
        assert_eq!(tp.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(tp.to_string(), raw);
    }

    #[test]
    fn rejects_malformed_values() {
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert!(bad.parse::<TraceParent>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn child_keeps_the_trace_and_changes_the_span() {
        let root = TraceParent::new_root();
        let child = root.child();
        assert_eq!(root.trace_id(), child.trace_id());
        assert_ne!(root.to_string(), child.to_string());
        assert_eq!(child.to_string().parse::<TraceParent>().unwrap(), child);
    }
}
