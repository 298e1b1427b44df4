//! Storing a node's output while it runs: secret values masked, at most a configured number
//! of bytes per attempt, the rest counted so the log says what it is missing.

use std::time::Instant;

use gatehouse_agent::{Trace, TraceParser};
use gatehouse_sandbox::{LogLine, Stream};
use gatehouse_store::Store;
use tokio::sync::mpsc;
use uuid::Uuid;

/// What stands in for a secret's value in stored output.
const MASK: &str = "[secret]";
/// Values shorter than this are not masked: they would mask ordinary words.
const SHORTEST_MASKED: usize = 4;

/// The secret values one attempt was given, so they never reach its log or artifacts.
#[derive(Debug, Default, Clone)]
pub(crate) struct Secrets {
    /// (name, value), longest value first so a value containing another is masked whole.
    values: Vec<(String, String)>,
}

impl Secrets {
    pub(crate) fn new(pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut values: Vec<(String, String)> = pairs
            .into_iter()
            .filter(|(_, v)| v.len() >= SHORTEST_MASKED)
            .collect();
        values.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
        Self { values }
    }

    /// `line` with every secret value replaced.
    pub(crate) fn mask(&self, line: &str) -> String {
        let mut masked = line.to_owned();
        for (_, value) in &self.values {
            if masked.contains(value.as_str()) {
                masked = masked.replace(value.as_str(), MASK);
            }
        }
        masked
    }

    /// The name of a secret whose value occurs in `bytes`.
    pub(crate) fn found_in(&self, bytes: &[u8]) -> Option<&str> {
        self.values
            .iter()
            .find(|(_, v)| bytes.windows(v.len()).any(|w| w == v.as_bytes()))
            .map(|(name, _)| name.as_str())
    }
}

/// Which attempt the lines belong to.
pub(crate) struct LogTarget {
    pub run_id: Uuid,
    pub node: String,
    pub attempt: i32,
}

/// Stores lines from `lines` until the sender is dropped; past `limit` bytes it only
/// counts them, and ends the log with a note of what was left out. Never blocks the
/// sandbox for long: once over the limit, lines are dropped as fast as they come.
/// `first_line` is called as the first line arrives (the sign that the process runs).
/// An agent's stdout also goes, masked, to its [`Tracing`], past the limit too: the trace
/// is returned once the output ends.
pub(crate) async fn store_output(
    store: Store,
    target: LogTarget,
    mut lines: mpsc::Receiver<LogLine>,
    secrets: Secrets,
    limit: usize,
    first_line: impl FnOnce(),
    mut trace: Option<Tracing>,
) -> Option<Trace> {
    let mut stored = 0usize;
    let (mut dropped_lines, mut dropped_bytes) = (0u64, 0u64);
    let mut first_line = Some(first_line);
    while let Some(line) = lines.recv().await {
        if let Some(first_line) = first_line.take() {
            first_line();
        }
        if let (Some(trace), Stream::Stdout) = (&mut trace, line.stream) {
            let at = trace.elapsed();
            trace.parser.feed(&secrets.mask(&line.line), at);
        }
        let size = line.line.len() + 1;
        if stored + size > limit {
            if dropped_lines == 0 {
                note(
                    &store,
                    &target,
                    &format!(
                        "[gatehouse] output limit of {} reached: further output is counted, not stored",
                        bytesize::ByteSize::b(limit as u64).display().iec()
                    ),
                )
                .await;
            }
            dropped_lines += 1;
            dropped_bytes += size as u64;
            continue;
        }
        stored += size;
        let stream = match line.stream {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        };
        let text = secrets.mask(&line.line);
        if let Err(err) = store
            .append_log(target.run_id, &target.node, target.attempt, stream, &text)
            .await
        {
            tracing::warn!(error = %err, "storing a log line failed");
        }
    }
    if dropped_lines > 0 {
        note(
            &store,
            &target,
            &format!(
                "[gatehouse] output cut: {dropped_lines} more lines ({}) were not stored",
                bytesize::ByteSize::b(dropped_bytes).display().iec()
            ),
        )
        .await;
    }
    trace.map(|trace| {
        let at = trace.elapsed();
        trace.parser.finish(at)
    })
}

/// An agent's output read into its trace, each line with the time it arrived.
pub(crate) struct Tracing {
    pub parser: TraceParser,
    /// When the attempt began: arrival times count from here.
    pub begun: Instant,
}

impl Tracing {
    fn elapsed(&self) -> u64 {
        u64::try_from(self.begun.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

async fn note(store: &Store, target: &LogTarget, text: &str) {
    if let Err(err) = store
        .append_log(target.run_id, &target.node, target.attempt, "stderr", text)
        .await
    {
        tracing::warn!(error = %err, "storing a log note failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked_longest_first_and_found_in_bytes() {
        let secrets = Secrets::new([
            ("TOKEN".to_owned(), "abcd".to_owned()),
            ("LONG".to_owned(), "xxabcdxx".to_owned()),
            ("SHORT".to_owned(), "ab".to_owned()),
        ]);
        assert_eq!(
            secrets.mask("a xxabcdxx b abcd ab"),
            "a [secret] b [secret] ab"
        );
        assert_eq!(secrets.found_in(b"...abcd..."), Some("TOKEN"));
        assert_eq!(secrets.found_in(b"nothing"), None);
    }
}
