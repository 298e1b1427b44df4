//! What the trace suites share: their fixtures, a clock for feeding them, and a table of
//! the calls to compare against. Each suite uses part of it.
#![allow(dead_code)]

use gatehouse_agent::{Executor, Trace, TraceParser};

/// A sample under `tests/fixtures/` (see SOURCES.txt there), as text.
macro_rules! fixture {
    ($path:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/",
            $path
        ))
    };
}

/// The trace of `text` in `format` when its line `i` (from 0) arrives at `(i + 1) * 1000`
/// ms and the output ends half a second after its last line.
pub fn trace_of(format: Executor, model: &str, text: &str) -> Trace {
    let mut parser = TraceParser::new(format, Some(model));
    let mut at = 0;
    for line in text.lines() {
        at += 1000;
        parser.feed(line, at);
    }
    parser.finish(at + 500)
}

/// One line per call: request arrival, duration, ok or error, tool, summary.
pub fn table(trace: &Trace) -> String {
    let rows: Vec<String> = trace
        .tools
        .iter()
        .map(|call| {
            let duration = call.duration_ms.map_or("-".to_owned(), |d| d.to_string());
            let outcome = if call.error { "error" } else { "ok" };
            format!(
                "{:>6} {:>5} {:<5} {} {}",
                call.started_ms, duration, outcome, call.tool, call.summary
            )
        })
        .collect();
    rows.join("\n")
}
