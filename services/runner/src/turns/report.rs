//! What a turn's attempt tells the rest of Gatehouse, each through the outbox in a small
//! transaction of its own: `turn.progress` when it starts and when the CLI names its
//! session (recorded at once, so an interruption can resume it), the thread's progress
//! message as it works, and `turn.finished` written with the attempt's end, its tools and
//! usage and the job's inbox entry, so a redelivered job never reports twice.

use gatehouse_agent::{PriceTable, Trace, cost};
use gatehouse_bus::HandlerError;
use gatehouse_events::{
    Envelope, Event, EventError, TraceParent, TurnDispatch, TurnFinished, TurnOutcome,
    TurnProgress, TurnProgressKind,
};
use gatehouse_store::{
    Store, TurnEnd, TurnKey, TurnStatus, TurnToolCallRow, TurnUsageRow, Tx, WantChat,
};

use super::TURNS;
use super::progress::{self, Ending};
use super::verdict::Verdict;
use crate::durably::durably;

/// Where the runner's events say they come from.
const SOURCE: &str = "runner";

/// Reports one attempt of a turn.
pub(super) struct Reporter<'a> {
    pub store: &'a Store,
    /// The dispatch: what is reported continues its trace, and its id is the inbox entry.
    pub envelope: &'a Envelope,
    pub job: &'a TurnDispatch,
    pub key: TurnKey,
    pub seq: u64,
    pub attempt: u32,
}

/// How an attempt ended, with what it leaves to record.
pub(super) struct Finish<'a> {
    pub verdict: &'a Verdict,
    pub trace: Option<&'a Trace>,
    pub duration_ms: u64,
    pub cli_ms: Option<u64>,
    pub prices: &'a PriceTable,
    /// Said at the end of the progress message (see [`progress::noted`]).
    pub note: Option<&'a str>,
}

impl Reporter<'_> {
    /// `turn.progress` Started, and the progress message.
    pub(super) async fn started(&self) -> Result<(), HandlerError> {
        self.started_saying(&progress::working(0, &empty_progress()))
            .await
    }

    /// `turn.progress` Started, the progress message saying `text`.
    pub(super) async fn started_saying(&self, text: &str) -> Result<(), HandlerError> {
        let started = self.event(Event::TurnProgress(TurnProgress {
            conversation_id: self.key.conversation_id,
            seq: self.seq,
            attempt: self.attempt,
            kind: TurnProgressKind::Started,
        }))?;
        let body = body(text);
        durably("reporting a turn's start", || async {
            let mut tx = self.store.begin().await?;
            tx.append_outbox(&started).await?;
            self.want_progress(&mut tx, &body).await?;
            tx.commit().await
        })
        .await?;
        Ok(())
    }

    /// `turn.progress` Session, the session recorded with the attempt.
    pub(super) async fn session(&self, session_id: &str) -> Result<(), HandlerError> {
        let event = self.event(Event::TurnProgress(TurnProgress {
            conversation_id: self.key.conversation_id,
            seq: self.seq,
            attempt: self.attempt,
            kind: TurnProgressKind::Session {
                session_id: session_id.to_owned(),
            },
        }))?;
        durably("reporting a turn's session", || async {
            let mut tx = self.store.begin().await?;
            tx.record_turn_session(self.key, session_id).await?;
            tx.append_outbox(&event).await?;
            tx.commit().await
        })
        .await?;
        Ok(())
    }

    /// Brings the progress message up to date; a failure is logged, the next update
    /// catches up.
    pub(super) async fn progress(&self, text: &str) {
        let body = body(text);
        let written = async {
            let mut tx = self.store.begin().await?;
            self.want_progress(&mut tx, &body).await?;
            tx.commit().await
        };
        if let Err(err) = written.await {
            tracing::warn!(error = %err, "updating a turn's progress message failed");
        }
    }

    /// Records the attempt's end and reports it, the progress message saying how it ended,
    /// how long it took, and its tools and tokens. `false`: an earlier delivery of the job
    /// had.
    pub(super) async fn finished(&self, finish: &Finish<'_>) -> Result<bool, HandlerError> {
        let tools = finish.trace.map_or(0, |t| t.tools.len());
        let tokens = finish.trace.map_or(0, |t| progress::tokens(&t.usage));
        let text = progress::ended(finish.verdict.ending, finish.duration_ms, tools, tokens);
        let text = progress::noted(text, finish.note);
        self.finished_saying(finish, &text).await
    }

    /// [`Reporter::finished`], the progress message saying `text`.
    pub(super) async fn finished_saying(
        &self,
        finish: &Finish<'_>,
        text: &str,
    ) -> Result<bool, HandlerError> {
        let verdict = finish.verdict;
        let session_id = finish.trace.and_then(|t| t.session_id.as_deref());
        let (reply, failure) = verdict.text();
        let tools = finish.trace.map(|t| self.tool_rows(t)).unwrap_or_default();
        let usage = finish
            .trace
            .map(|t| self.usage_rows(t, finish.prices))
            .unwrap_or_default();
        let end = TurnEnd {
            key: self.key,
            status: verdict.status,
            session_id,
            reply,
            failure,
            duration_ms: Some(millis(finish.duration_ms)),
            cli_ms: finish.cli_ms.map(millis),
            tools: &tools,
            usage: &usage,
        };
        let finished = self.event(Event::TurnFinished(TurnFinished {
            conversation_id: self.key.conversation_id,
            seq: self.seq,
            attempt: self.attempt,
            outcome: verdict.outcome.clone(),
            session_id: session_id.map(str::to_owned),
            duration_ms: finish.duration_ms,
        }))?;
        self.close("reporting a turn's end", &end, &body(text), &finished)
            .await
    }

    /// An attempt begun before: its runner died. Recorded and reported interrupted (with
    /// the session it had named), never run again; an attempt that had ended is reported
    /// as it ended.
    pub(super) async fn interrupted(&self) -> Result<bool, HandlerError> {
        let row = self.store.turn_attempt(self.key).await?;
        let session_id = row.as_ref().and_then(|r| r.session_id.clone());
        let outcome = match &row {
            Some(r) if r.status == TurnStatus::Replied => TurnOutcome::Replied {
                reply: r.reply.clone().unwrap_or_default(),
            },
            Some(r) if r.status == TurnStatus::Failed => TurnOutcome::Failed {
                reason: r.failure.clone().unwrap_or_default(),
            },
            _ => TurnOutcome::Interrupted,
        };
        let running = row
            .as_ref()
            .is_some_and(|r| r.status == TurnStatus::Running);
        let finished = self.event(Event::TurnFinished(TurnFinished {
            conversation_id: self.key.conversation_id,
            seq: self.seq,
            attempt: self.attempt,
            outcome,
            session_id,
            duration_ms: row
                .as_ref()
                .and_then(|r| r.duration_ms)
                .map_or(0, |ms| u64::try_from(ms).unwrap_or(0)),
        }))?;
        if !running {
            return durably("reporting an ended turn again", || async {
                let mut tx = self.store.begin().await?;
                let first = tx.record_inbox(TURNS, self.envelope.id).await?;
                if first {
                    tx.append_outbox(&finished).await?;
                }
                tx.commit().await?;
                Ok(first)
            })
            .await
            .map_err(Into::into);
        }
        let end = TurnEnd {
            key: self.key,
            status: TurnStatus::Interrupted,
            session_id: None,
            reply: None,
            failure: Some("interrupted: the runner stopped during this attempt"),
            duration_ms: None,
            cli_ms: None,
            tools: &[],
            usage: &[],
        };
        let again = self.attempt < 2;
        let text = progress::ended(Ending::Interrupted { again }, 0, 0, 0);
        self.close(
            "recording an interrupted turn",
            &end,
            &body(&text),
            &finished,
        )
        .await
    }

    /// Ends the attempt, its message and its report in one transaction with the inbox
    /// entry.
    async fn close(
        &self,
        what: &str,
        end: &TurnEnd<'_>,
        body: &str,
        finished: &Envelope,
    ) -> Result<bool, HandlerError> {
        let first = durably(what, || async {
            let mut tx = self.store.begin().await?;
            let first = tx.record_inbox(TURNS, self.envelope.id).await?;
            if first {
                tx.finish_turn_attempt(end).await?;
                self.want_progress(&mut tx, body).await?;
                tx.append_outbox(finished).await?;
            }
            tx.commit().await?;
            Ok(first)
        })
        .await?;
        Ok(first)
    }

    async fn want_progress(
        &self,
        tx: &mut Tx,
        body: &str,
    ) -> Result<(), gatehouse_store::StoreError> {
        let key = progress_key(self.key.conversation_id, self.seq);
        let thread = &self.job.thread;
        tx.want_chat_message(&WantChat {
            key: &key,
            platform: &thread.platform,
            channel: &thread.channel,
            thread: Some(&thread.thread),
            recipient: None,
            run_id: None,
            body,
        })
        .await
    }

    fn tool_rows(&self, trace: &Trace) -> Vec<TurnToolCallRow> {
        trace
            .tools
            .iter()
            .enumerate()
            .map(|(n, call)| TurnToolCallRow {
                conversation_id: self.key.conversation_id,
                seq: self.key.seq,
                attempt: self.key.attempt,
                n: i32::try_from(n).unwrap_or(i32::MAX),
                tool: call.tool.clone(),
                summary: call.summary.clone(),
                started_ms: millis(call.started_ms),
                duration_ms: call.duration_ms.map(millis),
                failed: call.error,
            })
            .collect()
    }

    fn usage_rows(&self, trace: &Trace, prices: &PriceTable) -> Vec<TurnUsageRow> {
        trace
            .usage
            .iter()
            .map(|u| TurnUsageRow {
                conversation_id: self.key.conversation_id,
                seq: self.key.seq,
                attempt: self.key.attempt,
                model: u.model.clone(),
                requirement_id: self.job.requirement_id,
                input_tokens: millis(u.input_tokens),
                output_tokens: millis(u.output_tokens),
                cache_read_tokens: millis(u.cache_read_tokens),
                cache_write_tokens: millis(u.cache_write_tokens),
                cost_usd: cost(u, prices),
            })
            .collect()
    }

    /// The envelope of an event this attempt reports, continuing the dispatch's trace.
    fn event(&self, event: Event) -> Result<Envelope, EventError> {
        Envelope::new(
            SOURCE,
            &event,
            self.envelope.trace.as_ref().map(TraceParent::child),
        )
    }
}

/// The key of a turn's one progress message: every attempt of the turn edits it.
pub(super) fn progress_key(conversation_id: uuid::Uuid, seq: u64) -> String {
    format!("conversation:{conversation_id}:turn:{seq}:progress")
}

/// A progress message's body, as the notifier reads it.
fn body(text: &str) -> String {
    serde_json::to_string(&gatehouse_chat::Body::text(text)).unwrap_or_default()
}

pub(super) fn empty_progress() -> gatehouse_agent::Progress<'static> {
    gatehouse_agent::Progress {
        session_id: None,
        tools: &[],
        running: None,
        retry: None,
    }
}

/// A count as the store keeps it.
fn millis(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
