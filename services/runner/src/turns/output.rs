//! Reading a turn's output while the CLI runs: every line masked of the secrets the turn
//! was given, stdout read into the trace as for agent nodes ([`crate::logs::store_output`]
//! does the same for them), the CLI's session reported the moment the trace names it, and
//! the progress message brought up to date — at once when the first tool starts, after
//! that at most every couple of seconds while the trace changes, and now and then to move
//! the clock on. Turns have no log of their own: only the last line of each stream is kept,
//! for a failure to quote.

use std::time::{Duration, Instant};

use gatehouse_agent::{Trace, TraceParser};
use gatehouse_bus::HandlerError;
use gatehouse_sandbox::{LogLine, Stream};
use tokio::sync::mpsc;

use super::progress;
use super::report::Reporter;
use super::verdict::LastLines;
use crate::logs::Secrets;

/// The least time between two updates of the progress message.
const UPDATE_EVERY: Duration = Duration::from_secs(2);
/// How often the message's clock moves on while the trace stays the same.
const CLOCK_EVERY: Duration = Duration::from_secs(10);

/// A turn's output so far.
pub(super) struct Watch {
    parser: TraceParser,
    secrets: Secrets,
    /// When the attempt began: arrival times and the clock count from here.
    begun: Instant,
    last: LastLines,
    session_reported: bool,
    /// When the message was last written, and what it showed apart from the clock.
    shown: Option<(Instant, String)>,
}

impl Watch {
    pub(super) fn new(parser: TraceParser, secrets: Secrets, begun: Instant) -> Self {
        Self {
            parser,
            secrets,
            begun,
            last: LastLines::default(),
            session_reported: false,
            shown: None,
        }
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.begun.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn line(&mut self, line: &LogLine) {
        let masked = self.secrets.mask(&line.line);
        let blank = masked.trim().is_empty();
        match line.stream {
            Stream::Stdout => {
                let at = self.elapsed_ms();
                self.parser.feed(&masked, at);
                if !blank {
                    self.last.stdout = Some(masked);
                }
            }
            Stream::Stderr if !blank => self.last.stderr = Some(masked),
            Stream::Stderr => {}
        }
    }

    /// The session, the first time the trace names one.
    fn new_session(&mut self) -> Option<String> {
        if self.session_reported {
            return None;
        }
        let session = self.parser.progress().session_id?.to_owned();
        self.session_reported = true;
        Some(session)
    }

    /// The message's new text, when an update is due.
    fn update(&mut self) -> Option<String> {
        let progress = self.parser.progress();
        // The message without its clock: what changed in the trace.
        let state = progress::working(0, &progress);
        let due = match &self.shown {
            None => !progress.tools.is_empty(),
            Some((at, shown)) => {
                let since = at.elapsed();
                (since >= UPDATE_EVERY && *shown != state) || since >= CLOCK_EVERY
            }
        };
        if !due {
            return None;
        }
        let text = progress::working(self.elapsed_ms(), &progress);
        self.shown = Some((Instant::now(), state));
        Some(text)
    }

    fn finish(self) -> (Trace, LastLines) {
        let at = self.elapsed_ms();
        (self.parser.finish(at), self.last)
    }
}

/// Reads `lines` until the sandbox drops its sender, reporting the session and progress
/// as they come. `Err`: the session could not be recorded, and the job comes back; the
/// lines are still read to their end meanwhile, so the sandbox is never held up.
pub(super) async fn read(
    mut lines: mpsc::Receiver<LogLine>,
    mut watch: Watch,
    report: &Reporter<'_>,
) -> Result<(Trace, LastLines), HandlerError> {
    let mut clock = tokio::time::interval(UPDATE_EVERY);
    clock.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failed = None;
    loop {
        tokio::select! {
            line = lines.recv() => match line {
                Some(line) => watch.line(&line),
                None => break,
            },
            _ = clock.tick() => {}
        }
        if failed.is_some() {
            continue;
        }
        if let Some(session) = watch.new_session()
            && let Err(err) = report.session(&session).await
        {
            failed = Some(err);
            continue;
        }
        if let Some(text) = watch.update() {
            report.progress(&text).await;
        }
    }
    match failed {
        Some(err) => Err(err),
        None => Ok(watch.finish()),
    }
}

#[cfg(test)]
mod tests {
    use gatehouse_agent::TraceFormat;

    use super::*;

    fn stdout(line: &str) -> LogLine {
        LogLine {
            stream: Stream::Stdout,
            line: line.into(),
        }
    }

    #[test]
    fn the_first_tool_updates_at_once_and_secrets_never_reach_the_trace() {
        let secrets = Secrets::new([("TOKEN".to_owned(), "s3cr3t-value".to_owned())]);
        let parser = TraceParser::new(TraceFormat::ClaudeStreamJson, None);
        let mut watch = Watch::new(parser, secrets, Instant::now());
        watch.line(&stdout(
            r#"{"type":"system","subtype":"init","session_id":"s-1"}"#,
        ));
        assert_eq!(watch.new_session().as_deref(), Some("s-1"));
        assert_eq!(watch.new_session(), None, "once per attempt");
        assert_eq!(watch.update(), None, "nothing to show before a tool");
        watch.line(&stdout(
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"echo s3cr3t-value"}}]}}"#,
        ));
        let text = watch.update().unwrap_or_default();
        assert!(
            text.ends_with("· 1 tool (Bash echo [secret]) · now: Bash echo [secret]"),
            "{text}"
        );
        assert_eq!(watch.update(), None, "not again within two seconds");
        watch.line(&LogLine {
            stream: Stream::Stderr,
            line: "warning: s3cr3t-value".into(),
        });
        let (trace, last) = watch.finish();
        assert_eq!(trace.tools[0].summary, "echo [secret]");
        assert_eq!(last.stderr.as_deref(), Some("warning: [secret]"));
    }
}
