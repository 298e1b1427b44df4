//! Storing a node's output while it runs: secret values masked ([`OutputMask`]), at most a
//! configured number of bytes per attempt, the rest counted so the log says what it is
//! missing.

use std::time::Instant;

use gatehouse_agent::{Trace, TraceParser};
use gatehouse_sandbox::{LogLine, Stream};
use gatehouse_store::Store;
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::secrets::{OutputMask, Secrets};

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
    trace: Option<Tracing>,
) -> Option<Trace> {
    let mut log = Log {
        store,
        target,
        limit,
        trace,
        stored: 0,
        dropped_lines: 0,
        dropped_bytes: 0,
    };
    let mut mask = OutputMask::new(secrets);
    let mut first_line = Some(first_line);
    while let Some(line) = lines.recv().await {
        if let Some(first_line) = first_line.take() {
            first_line();
        }
        for line in mask.push(line) {
            log.line(line).await;
        }
    }
    for line in mask.finish() {
        log.line(line).await;
    }
    log.end(mask.secrets()).await
}

/// The log being stored, and what it left out.
struct Log {
    store: Store,
    target: LogTarget,
    limit: usize,
    trace: Option<Tracing>,
    stored: usize,
    dropped_lines: u64,
    dropped_bytes: u64,
}

impl Log {
    /// Stores a masked line, or counts it past the limit.
    async fn line(&mut self, line: LogLine) {
        if let (Some(trace), Stream::Stdout) = (&mut self.trace, line.stream) {
            let at = trace.elapsed();
            trace.parser.feed(&line.line, at);
        }
        let size = line.line.len() + 1;
        if self.stored + size > self.limit {
            if self.dropped_lines == 0 {
                note(
                    &self.store,
                    &self.target,
                    &format!(
                        "[gatehouse] output limit of {} reached: further output is counted, not stored",
                        bytesize::ByteSize::b(self.limit as u64).display().iec()
                    ),
                )
                .await;
            }
            self.dropped_lines += 1;
            self.dropped_bytes += size as u64;
            return;
        }
        self.stored += size;
        let stream = match line.stream {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        };
        let target = &self.target;
        if let Err(err) = self
            .store
            .append_log(
                target.run_id,
                &target.node,
                target.attempt,
                stream,
                &line.line,
            )
            .await
        {
            tracing::warn!(error = %err, "storing a log line failed");
        }
    }

    /// Notes what was left out; the trace, its decoded text masked too.
    async fn end(self, secrets: &Secrets) -> Option<Trace> {
        if self.dropped_lines > 0 {
            note(
                &self.store,
                &self.target,
                &format!(
                    "[gatehouse] output cut: {} more lines ({}) were not stored",
                    self.dropped_lines,
                    bytesize::ByteSize::b(self.dropped_bytes).display().iec()
                ),
            )
            .await;
        }
        self.trace.map(|trace| {
            let at = trace.elapsed();
            let mut trace = trace.parser.finish(at);
            secrets.mask_trace(&mut trace);
            trace
        })
    }
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
