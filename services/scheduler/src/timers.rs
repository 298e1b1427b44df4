//! Retries and gate expiries: stored timers fired when due, by any scheduler replica once.

use std::time::Duration;

use chrono::Utc;
use gatehouse_conversation::Input as ConversationInput;
use gatehouse_engine::Input;
use gatehouse_events::TraceParent;
use gatehouse_store::{TimerKind, TimerRow};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::observe::Measured;
use crate::{Scheduler, SchedulerError};

/// The longest a due timer waits to be noticed.
const POLL: Duration = Duration::from_secs(1);

impl Scheduler {
    /// Fires due timers until `shutdown` is cancelled.
    pub(crate) async fn fire_timers(self, shutdown: CancellationToken) {
        loop {
            if let Err(err) = self.fire_due().await {
                tracing::warn!(error = %err, "firing timers failed; retrying");
            }
            if let Err(err) = self.fire_idle_conversations().await {
                tracing::warn!(error = %err, "releasing idle conversations failed; retrying");
            }
            if let Err(err) = self.fire_schedules(jiff::Timestamp::now()).await {
                tracing::warn!(error = %err, "firing schedules failed; retrying");
            }
            let wait = self.until_next_due().await.unwrap_or(POLL);
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// How long until the next timer or schedule is due, at most [`POLL`] (other replicas
    /// and the API add work this process does not hear about).
    async fn until_next_due(&self) -> Result<Duration, SchedulerError> {
        let timer = self.store.next_timer_ms().await?;
        let schedule = self.store.next_schedule_due_ms().await?;
        let idle = self.store.next_conversation_idle_ms().await?;
        let Some(due) = timer.into_iter().chain(schedule).chain(idle).min() else {
            return Ok(POLL);
        };
        let ms = due
            .saturating_sub(Utc::now().timestamp_millis())
            .clamp(1, 1_000);
        Ok(Duration::from_millis(ms.unsigned_abs()))
    }

    /// Fires every timer due now, each in its own transaction.
    pub(crate) async fn fire_due(&self) -> Result<usize, SchedulerError> {
        let mut fired = 0;
        for timer in self.store.due_timers(Utc::now().timestamp_millis()).await? {
            // A timer row keeps no traceparent, so what it sets off starts a trace of its
            // own; the span's run id ties it to the rest of the run in the logs.
            let trace = TraceParent::new_root();
            let span = tracing::info_span!("timer", kind = %timer.kind,
                trace_id = trace.trace_id(), run_id = %timer.run_id, node = %timer.node);
            if self.fire_timer(&timer, &trace).instrument(span).await? {
                fired += 1;
            }
        }
        Ok(fired)
    }

    /// Tells every conversation whose workspace has been idle for `idle_timeout` so, each in
    /// its own transaction. A timer re-armed meanwhile is stale: the conversation ignores
    /// it, and disarming it leaves the newer one armed.
    pub(crate) async fn fire_idle_conversations(&self) -> Result<usize, SchedulerError> {
        let mut fired = 0;
        let now = Utc::now().timestamp_millis();
        for (id, timer) in self.store.due_conversation_idles(now).await? {
            let mut tx = self.store.begin().await?;
            let timer = u64::try_from(timer).unwrap_or(0);
            let trace = TraceParent::new_root();
            self.converse(&mut tx, id, ConversationInput::Idle { timer }, Some(&trace))
                .await?;
            tx.disarm_conversation_idle(id, i64::try_from(timer).unwrap_or(i64::MAX))
                .await?;
            tx.commit().await?;
            fired += 1;
        }
        Ok(fired)
    }

    /// Fires one timer; `false` if another replica fired it first.
    async fn fire_timer(
        &self,
        timer: &TimerRow,
        trace: &TraceParent,
    ) -> Result<bool, SchedulerError> {
        let mut tx = self.store.begin().await?;
        if !tx.delete_timer(timer).await? {
            return Ok(false);
        }
        let attempt = u32::try_from(timer.attempt).unwrap_or(0);
        let input = match timer.kind {
            TimerKind::Expire => Input::GateExpired {
                node: timer.node.clone(),
                attempt,
            },
            TimerKind::Retry => Input::RetryDue {
                node: timer.node.clone(),
                attempt,
            },
        };
        let mut measured = Measured::default();
        let advanced = self
            .advance(&mut tx, timer.run_id, input, Some(trace), &mut measured)
            .await?;
        if let Err(rejection) = advanced {
            tracing::debug!(run = %timer.run_id, %rejection, "timer no longer applies");
        }
        tx.commit().await?;
        self.meter.record(measured);
        Ok(true)
    }
}
