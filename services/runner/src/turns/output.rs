//! Reading a turn's output while the CLI runs: every line masked of the secrets the turn
//! was given ([`OutputMask`]; what the trace decodes is masked again), stdout read into the trace as for agent nodes ([`crate::logs::store_output`]
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
use crate::secrets::{OutputMask, Secrets};

/// The least time between two updates of the progress message.
const UPDATE_EVERY: Duration = Duration::from_secs(2);
/// How often the message's clock moves on while the trace stays the same.
const CLOCK_EVERY: Duration = Duration::from_secs(10);

/// A turn's output so far.
pub(super) struct Watch {
    parser: TraceParser,
    mask: OutputMask,
    /// When the attempt began: arrival times and the clock count from here.
    begun: Instant,
    last: LastLines,
    session_reported: bool,
    /// When the message was last written, and what it showed apart from the clock.
    shown: Option<(Instant, String)>,
    /// Said at the end of every message (see [`progress::noted`]).
    note: Option<&'static str>,
}

impl Watch {
    pub(super) fn new(parser: TraceParser, secrets: Secrets, begun: Instant) -> Self {
        Self {
            parser,
            mask: OutputMask::new(secrets),
            begun,
            last: LastLines::default(),
            session_reported: false,
            shown: None,
            note: None,
        }
    }

    /// The same, every message ending with `note`.
    pub(super) fn noting(self, note: Option<&'static str>) -> Self {
        Self { note, ..self }
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.begun.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn line(&mut self, line: &LogLine) {
        for masked in self.mask.push(line.clone()) {
            self.masked(masked);
        }
    }

    fn masked(&mut self, line: LogLine) {
        let blank = line.line.trim().is_empty();
        match line.stream {
            Stream::Stdout => {
                let at = self.elapsed_ms();
                self.parser.feed(&line.line, at);
                if !blank {
                    self.last.stdout = Some(line.line);
                }
            }
            Stream::Stderr if !blank => self.last.stderr = Some(line.line),
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
            None => !progress.tools.is_empty() || progress.retry.is_some(),
            Some((at, shown)) => {
                let since = at.elapsed();
                (since >= UPDATE_EVERY && *shown != state) || since >= CLOCK_EVERY
            }
        };
        if !due {
            return None;
        }
        // Tool summaries are decoded from the agent's JSON: masked again as text.
        let text = self
            .mask
            .secrets()
            .mask(&progress::working(self.elapsed_ms(), &progress));
        let text = progress::noted(text, self.note);
        self.shown = Some((Instant::now(), state));
        Some(text)
    }

    fn finish(mut self) -> (Trace, LastLines) {
        for masked in self.mask.finish() {
            self.masked(masked);
        }
        let at = self.elapsed_ms();
        let mut trace = self.parser.finish(at);
        self.mask.secrets().mask_trace(&mut trace);
        (trace, self.last)
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
    use gatehouse_agent::Executor;

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
        let parser = TraceParser::new(Executor::ClaudeCode, None);
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

#[cfg(test)]
mod multi_line_and_escaped {
    use gatehouse_agent::Executor;

    use super::*;

    const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACBzZWNyZXQta2V5LW1hdGVyaWFsLWZvci10ZXN0cy1vbmx5AAAA\n-----END OPENSSH PRIVATE KEY-----\n";
    const PASSWORD: &str = r#"pa"ss\word-42"#;

    fn line(stream: Stream, line: &str) -> LogLine {
        LogLine {
            stream,
            line: line.into(),
        }
    }

    fn assert_clear(what: &str, text: &str) {
        for secret in KEY.lines().chain([PASSWORD]) {
            assert!(!text.contains(secret), "{what} holds {secret:?}: {text}");
        }
    }

    /// Claude Code's events carry what the agent did as JSON: a key with its newlines and
    /// a password with `"` and `\` arrive escaped, and come out decoded in the tool
    /// summaries, the progress message and the reply; a key printed on stderr comes out
    /// line by line.
    #[test]
    fn secrets_never_reach_the_reply_tools_progress_or_last_lines() {
        let secrets = Secrets::new([
            ("SSH_KEY".to_owned(), KEY.to_owned()),
            ("DB_PASSWORD".to_owned(), PASSWORD.to_owned()),
        ]);
        let parser = TraceParser::new(Executor::ClaudeCode, None);
        let mut watch = Watch::new(parser, secrets, Instant::now());
        let command = format!("psql --password '{PASSWORD}' && echo '{KEY}' > id");
        let tool = serde_json::json!({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": command}}]}});
        watch.line(&line(Stream::Stdout, &tool.to_string()));
        let progress = watch.update().unwrap_or_default();
        assert!(progress.contains("Bash psql"), "{progress}");
        assert_clear("the progress message", &progress);
        for key_line in KEY.lines() {
            watch.line(&line(Stream::Stderr, key_line));
        }
        let reply = format!("Done. The key is\n{KEY}\nand the password is {PASSWORD}.");
        let result = serde_json::json!({"type": "result", "subtype": "success",
            "is_error": false, "result": reply, "usage": {"input_tokens": 1, "output_tokens": 1}});
        watch.line(&line(Stream::Stdout, &result.to_string()));
        let (trace, last) = watch.finish();
        assert_eq!(trace.tools.len(), 1);
        assert_clear("the tool summary", &trace.tools[0].summary);
        let reply = trace.reply.unwrap_or_default();
        assert!(reply.starts_with("Done. The key is"), "{reply}");
        assert_clear("the reply", &reply);
        assert_clear(
            "stdout's last line",
            last.stdout.as_deref().unwrap_or_default(),
        );
        assert_eq!(last.stderr.as_deref(), Some("[secret]"));
    }
}
