//! Server-sent events: how the fake writes them, and a reader that parses them as they arrive
//! in a client's chunks (tests use it to see each event the moment it comes).

use serde_json::Value;

/// One server-sent event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// The `event:` line; Chat Completions sends none.
    pub event: Option<String>,
    /// The `data:` lines, joined by newlines.
    pub data: String,
}

impl Event {
    /// A named event carrying JSON, as Anthropic and the Responses API send them.
    pub fn named(name: &str, data: &Value) -> Self {
        Self {
            event: Some(name.to_owned()),
            data: data.to_string(),
        }
    }

    /// An unnamed event, as Chat Completions sends them.
    pub fn data(data: impl Into<String>) -> Self {
        Self {
            event: None,
            data: data.into(),
        }
    }

    /// The event as written on the wire, blank line included.
    pub fn render(&self) -> String {
        match &self.event {
            Some(name) => format!("event: {name}\ndata: {}\n\n", self.data),
            None => format!("data: {}\n\n", self.data),
        }
    }

    /// The data as JSON (`None` for `[DONE]` and other non-JSON data).
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.data).ok()
    }
}

/// Parses events out of a byte stream chunk by chunk; an event split across chunks comes out
/// when its blank line arrives.
#[derive(Debug, Default)]
pub struct Reader {
    pending: Vec<u8>,
}

impl Reader {
    /// Feeds a chunk; returns the events it completed.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Event> {
        self.pending.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = find_blank_line(&self.pending) {
            let block: Vec<u8> = self.pending.drain(..end.0).collect();
            self.pending.drain(..end.1);
            if let Some(event) = parse_block(&String::from_utf8_lossy(&block)) {
                events.push(event);
            }
        }
        events
    }
}

/// Parses a whole SSE body.
pub fn parse(body: &[u8]) -> Vec<Event> {
    let mut reader = Reader::default();
    let mut events = reader.push(body);
    events.extend(reader.push(b"\n\n"));
    events
}

/// Where the first blank line is: (end of the block, length of the separator).
fn find_blank_line(bytes: &[u8]) -> Option<(usize, usize)> {
    (0..bytes.len()).find_map(|i| {
        if bytes[i..].starts_with(b"\n\n") {
            Some((i, 2))
        } else if bytes[i..].starts_with(b"\r\n\r\n") {
            Some((i, 4))
        } else {
            None
        }
    })
}

fn parse_block(block: &str) -> Option<Event> {
    let mut event = None;
    let mut data: Vec<&str> = Vec::new();
    for line in block.lines() {
        if let Some(value) = line.strip_prefix("event:") {
            event = Some(value.trim().to_owned());
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push(value.strip_prefix(' ').unwrap_or(value));
        }
    }
    (event.is_some() || !data.is_empty()).then(|| Event {
        event,
        data: data.join("\n"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_come_out_whole() {
        let mut reader = Reader::default();
        assert!(reader.push(b"event: ping\ndata: {\"ty").is_empty());
        let events = reader.push(b"pe\":\"ping\"}\n\ndata: [DONE]\n\n");
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].event.as_deref(), Some("ping"));
        assert_eq!(events[0].data, "{\"type\":\"ping\"}");
        assert_eq!(events[1], Event::data("[DONE]"));
    }
}
