//! The tool calls of a trace as they start and finish, and the one-line summaries they show.
//!
//! Every format names a call by an id (Claude's `tool_use` id, Codex's item id) on the line
//! that starts it and on the line that ends it; the ledger pairs the two by that id, so calls
//! that run in parallel and finish out of order still get their own durations.

use std::collections::HashMap;

use super::ToolCall;

/// How many calls a trace records. Output is untrusted and a runaway agent can call tools
/// for hours; beyond this the trace says it is incomplete instead of growing.
pub(crate) const MAX_TOOLS: usize = 5_000;

/// How long a summary may be, in characters, ellipsis included.
pub(crate) const SUMMARY_CHARS: usize = 120;

/// How long a tool name may be, in characters.
const TOOL_CHARS: usize = 64;

/// The calls seen so far.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    pub(crate) tools: Vec<ToolCall>,
    /// Where each id's call is in `tools`.
    by_id: HashMap<String, usize>,
    /// Some calls were not recorded because of [`MAX_TOOLS`].
    pub(crate) truncated: bool,
}

impl Calls {
    /// A call whose request arrived at `at_ms`. A second start for an id already seen only
    /// fills in a summary the first one lacked (Codex starts some items before it knows
    /// their input). Without an id the call can never be finished.
    pub(crate) fn start(&mut self, id: Option<&str>, tool: &str, summary: String, at_ms: u64) {
        if let Some(&index) = id.and_then(|id| self.by_id.get(id)) {
            if let Some(call) = self.tools.get_mut(index)
                && call.summary.is_empty()
            {
                call.summary = summary;
            }
            return;
        }
        if self.tools.len() >= MAX_TOOLS {
            self.truncated = true;
            return;
        }
        if let Some(id) = id {
            self.by_id.insert(id.to_owned(), self.tools.len());
        }
        self.tools.push(ToolCall {
            tool: shorten(tool, TOOL_CHARS),
            summary,
            started_ms: at_ms,
            duration_ms: None,
            error: false,
        });
    }

    /// The result of the call `id` arrived at `at_ms`. A non-empty `summary` replaces the
    /// one the call started with: the finished item is the complete one. Returns whether a
    /// call was waiting for that result; a second result for the same call is ignored.
    pub(crate) fn finish(&mut self, id: &str, at_ms: u64, error: bool, summary: String) -> bool {
        let Some(call) = self
            .by_id
            .get(id)
            .and_then(|&index| self.tools.get_mut(index))
        else {
            return false;
        };
        if call.duration_ms.is_some() {
            return true;
        }
        // Saturating: a runner whose clock steps back must not panic or wrap.
        call.duration_ms = Some(at_ms.saturating_sub(call.started_ms));
        call.error = error;
        if !summary.is_empty() {
            call.summary = summary;
        }
        true
    }

    /// A call whose request and result arrived on the same line (Codex reports some items
    /// only once they are done): it took no time the output can show.
    pub(crate) fn record(
        &mut self,
        id: Option<&str>,
        tool: &str,
        summary: String,
        at_ms: u64,
        error: bool,
    ) {
        match id {
            Some(id) if self.by_id.contains_key(id) => {
                self.finish(id, at_ms, error, summary);
            }
            _ => {
                let before = self.tools.len();
                self.start(id, tool, summary, at_ms);
                if let Some(call) = self.tools.get_mut(before) {
                    call.duration_ms = Some(0);
                    call.error = error;
                }
            }
        }
    }

    /// The call started last that has no result yet: what the agent is doing now.
    pub(crate) fn running(&self) -> Option<&ToolCall> {
        self.tools
            .iter()
            .rev()
            .find(|call| call.duration_ms.is_none())
    }
}

/// A call's one-line summary from its input: the first of `keys` holding text (the command,
/// the path, the pattern: what the call works on), else — a tool of unknown shape, an MCP
/// server's — its first text argument; shortened to [`SUMMARY_CHARS`].
pub(crate) fn summarize(input: &crate::trace::Object, keys: &[&str]) -> String {
    let text = keys
        .iter()
        .find_map(|key| crate::trace::string(input, key))
        .or_else(|| input.values().find_map(serde_json::Value::as_str))
        .unwrap_or_default();
    shorten(text, SUMMARY_CHARS)
}

/// `text` on one line and at most `max_chars` characters: runs of whitespace (line breaks
/// included) become one space, control characters go, and a longer text is cut on a
/// character boundary and ends with `…`. Stops reading at the first word past the cut.
pub(crate) fn shorten(text: &str, max_chars: usize) -> String {
    let words = text
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|word| !word.is_empty());
    let mut out = String::new();
    let mut kept = 0;
    for (i, word) in words.enumerate() {
        let space = (i > 0).then_some(' ');
        for c in space.into_iter().chain(word.chars()) {
            if kept == max_chars {
                // One character too many: the last one kept makes way for the ellipsis.
                out.pop();
                out.push('…');
                return out;
            }
            out.push(c);
            kept += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{Calls, MAX_TOOLS, shorten};

    #[test]
    fn shorten_keeps_short_text_and_puts_it_on_one_line() {
        assert_eq!(
            shorten("  cargo\n  test\t-p x \r\n", 120),
            "cargo test -p x"
        );
        assert_eq!(shorten("a\u{1b}[31mb", 120), "a [31mb");
        assert_eq!(shorten("", 120), "");
    }

    #[test]
    fn shorten_cuts_on_a_character_boundary_with_an_ellipsis() {
        let cut = shorten(&"é".repeat(300), 120);
        assert_eq!(cut.chars().count(), 120);
        assert!(cut.ends_with("é…"));
        let exact = "x".repeat(120);
        assert_eq!(shorten(&exact, 120), exact);
        assert_eq!(shorten(&"x".repeat(121), 120).chars().count(), 120);
    }

    #[test]
    fn calls_pair_by_id_in_any_order() {
        let mut calls = Calls::default();
        calls.start(Some("a"), "Read", "a.rs".into(), 10);
        calls.start(Some("b"), "Read", "b.rs".into(), 12);
        assert!(calls.finish("b", 20, false, String::new()));
        assert_eq!(calls.running().map(|c| c.summary.as_str()), Some("a.rs"));
        assert!(calls.finish("a", 50, true, String::new()));
        assert!(!calls.finish("zzz", 60, false, String::new()));
        // A repeated result changes nothing.
        assert!(calls.finish("a", 90, false, String::new()));
        let durations: Vec<_> = calls
            .tools
            .iter()
            .map(|c| (c.duration_ms, c.error))
            .collect();
        assert_eq!(durations, [(Some(40), true), (Some(8), false)]);
        assert!(calls.running().is_none());
    }

    #[test]
    fn a_clock_that_steps_back_gives_zero_not_a_panic() {
        let mut calls = Calls::default();
        calls.start(Some("a"), "Bash", "ls".into(), 100);
        calls.finish("a", 40, false, String::new());
        assert_eq!(calls.tools[0].duration_ms, Some(0));
    }

    #[test]
    fn the_ledger_stops_at_its_cap_and_says_so() {
        let mut calls = Calls::default();
        for i in 0..MAX_TOOLS + 3 {
            calls.start(Some(&i.to_string()), "Bash", String::new(), 0);
        }
        assert_eq!(calls.tools.len(), MAX_TOOLS);
        assert!(calls.truncated);
        assert!(!calls.finish(&MAX_TOOLS.to_string(), 1, false, String::new()));
    }
}
