//! Storing a node's output while it runs: secret values masked ([`OutputMask`]), at most a
//! configured number of bytes per attempt, the rest counted so the log says what it is
//! missing.

use std::collections::VecDeque;
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
/// is returned once the output ends, with the last lines of stderr (masked) for a failure
/// to quote. Each retry of a model request the trace reads is noted in the log as it
/// comes, and told to [`Tracing::retried`].
pub(crate) async fn store_output(
    store: Store,
    target: LogTarget,
    mut lines: mpsc::Receiver<LogLine>,
    secrets: Secrets,
    limit: usize,
    first_line: impl FnOnce(),
    trace: Option<Tracing>,
) -> Seen {
    let mut log = Log {
        store,
        target,
        limit,
        trace,
        stored: 0,
        dropped_lines: 0,
        dropped_bytes: 0,
        stderr: VecDeque::new(),
        retry_noted: None,
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

/// Lines of stderr kept for a failure to quote.
const STDERR_LINES: usize = 5;
/// Characters of each stderr line kept.
const STDERR_CHARS: usize = 300;

/// What the output showed once it ended.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    /// An agent's trace.
    pub trace: Option<Trace>,
    /// The last non-blank lines of stderr, masked, each cut short, oldest first.
    pub stderr: Vec<String>,
}

impl Seen {
    /// `its last words on stderr: "…" / "…"`, or `None` when stderr said nothing.
    pub(crate) fn last_words(&self) -> Option<String> {
        if self.stderr.is_empty() {
            return None;
        }
        let quoted: Vec<String> = self.stderr.iter().map(|l| format!("{l:?}")).collect();
        Some(format!("its last words on stderr: {}", quoted.join(" / ")))
    }
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
    stderr: VecDeque<String>,
    /// The retry last noted, so each is noted once.
    retry_noted: Option<(u32, u64)>,
}

impl Log {
    /// Stores a masked line, or counts it past the limit.
    async fn line(&mut self, line: LogLine) {
        if let (Some(trace), Stream::Stdout) = (&mut self.trace, line.stream) {
            let at = trace.elapsed();
            trace.parser.feed(&line.line, at);
            self.note_retry().await;
        }
        if line.stream == Stream::Stderr && !line.line.trim().is_empty() {
            if self.stderr.len() == STDERR_LINES {
                self.stderr.pop_front();
            }
            let text = line.line.trim();
            let mut kept: String = text.chars().take(STDERR_CHARS).collect();
            if kept.len() < text.len() {
                kept.push('…');
            }
            self.stderr.push_back(kept);
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

    /// Notes a retry the trace has just read: in the log, and to whoever follows them.
    async fn note_retry(&mut self) {
        let Some(trace) = &self.trace else {
            return;
        };
        let Some(retry) = trace.parser.progress().retry else {
            return;
        };
        let key = (retry.attempt, retry.at_ms);
        if self.retry_noted == Some(key) {
            return;
        }
        self.retry_noted = Some(key);
        let text = retry.progress();
        if let Some(retried) = &trace.retried {
            retried(text.clone());
        }
        note(&self.store, &self.target, &format!("[gatehouse] {text}")).await;
    }

    /// Notes what was left out; the trace, its decoded text masked too.
    async fn end(self, secrets: &Secrets) -> Seen {
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
        let trace = self.trace.map(|trace| {
            let at = trace.elapsed();
            let mut trace = trace.parser.finish(at);
            secrets.mask_trace(&mut trace);
            trace
        });
        Seen {
            trace,
            stderr: self.stderr.into(),
        }
    }
}

/// An agent's output read into its trace, each line with the time it arrived.
pub(crate) struct Tracing {
    pub parser: TraceParser,
    /// When the attempt began: arrival times count from here.
    pub begun: Instant,
    /// Told each retry of a model request as the CLI announces it ("model API
    /// unreachable, retry 2/3 (503 server_error)"), to report it as progress.
    pub retried: Option<Box<dyn Fn(String) + Send>>,
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
