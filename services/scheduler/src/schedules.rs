//! Firing cron schedules: each fire recorded once under (schedule, cron time), then
//! started, buffered or skipped by the schedule's catch-up window and overlap policy.
//!
//! Only schedules whose `next_due_ms` has come are read, so a pass costs the number of due
//! schedules, not the number of schedules.

mod fire;
mod requirement;

use std::time::Instant;

use futures::StreamExt;
use gatehouse_store::{FireKind, FireOutcome, ScheduleRow};
use jiff::Timestamp;

use crate::{Scheduler, SchedulerError};

/// At most this many fires of one schedule are handled per pass (a minutely schedule after
/// a week of downtime), so one schedule cannot starve the others.
const MAX_FIRES_PER_PASS: usize = 10_000;

/// Due schedules read per pass; more are read by the next pass, immediately after.
const DUE_BATCH: i64 = 1_000;

/// Due schedules handled at once, each in its own transactions.
const CONCURRENCY: usize = 16;

/// A pass's clock: the time it was given, advanced by the time the pass has taken, so a
/// fire handled late in a long pass records how late it really was.
#[derive(Clone, Copy)]
struct Clock {
    at: Timestamp,
    started: Instant,
}

impl Clock {
    fn new(at: Timestamp) -> Self {
        Self {
            at,
            started: Instant::now(),
        }
    }

    fn now(&self) -> Timestamp {
        let elapsed = jiff::SignedDuration::try_from(self.started.elapsed())
            .unwrap_or(jiff::SignedDuration::ZERO);
        self.at.checked_add(elapsed).unwrap_or(self.at)
    }
}

/// A fire about to be decided.
struct Pending<'a> {
    kind: FireKind,
    /// Its identity: the cron time, or the moment of a manual trigger.
    scheduled: Timestamp,
    /// When it should start.
    due: Timestamp,
    /// Recorded as `requested` already (a manual trigger), rather than new.
    requested: bool,
    /// Who triggered it by hand; a cron fire answers to the schedule's owner.
    requested_by: Option<&'a str>,
}

impl Scheduler {
    /// Handles every fire due at `now` that no scheduler has recorded yet, then the fires
    /// waiting for a decision (manual triggers) or for a running run to end (buffered).
    /// Any number of schedulers may call this at once: the fire's row decides who acts.
    ///
    /// A schedule that fails is logged and the others go on (one bad schedule must not
    /// hold up the rest); the pass then ends with the first error, so the caller waits
    /// before the next one instead of spinning while the database is away.
    pub async fn fire_schedules(&self, now: Timestamp) -> Result<usize, SchedulerError> {
        let clock = Clock::new(now);
        let mut handled = 0;
        let mut first_error = None;
        loop {
            let due = self
                .store
                .due_schedules(now.as_millisecond(), DUE_BATCH)
                .await?;
            let batch = due.len();
            let results: Vec<(String, Result<usize, SchedulerError>)> = futures::stream::iter(due)
                .map(|schedule| async move {
                    let name = schedule.name.clone();
                    (name, self.fire_cron(schedule, clock).await)
                })
                .buffer_unordered(CONCURRENCY)
                .collect()
                .await;
            for (name, result) in results {
                match result {
                    Ok(n) => handled += n,
                    Err(e) => {
                        tracing::warn!(schedule = %name, error = %e, "firing a schedule failed");
                        first_error.get_or_insert(e);
                    }
                }
            }
            if first_error.is_some() || i64::try_from(batch).unwrap_or(i64::MAX) < DUE_BATCH {
                break;
            }
        }
        for name in self.store.schedules_with_waiting_fires().await? {
            let Some(schedule) = self.store.schedule(&name).await? else {
                continue;
            };
            if schedule.paused {
                continue;
            }
            let waiting = async {
                let settled = self.settle_requested(&schedule, clock).await?;
                self.start_buffered(&schedule, clock.now()).await?;
                Ok::<_, SchedulerError>(settled)
            };
            match waiting.await {
                Ok(n) => handled += n,
                Err(e) => {
                    tracing::warn!(schedule = %name, error = %e, "starting a waiting fire failed");
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(handled),
        }
    }

    /// Fires a due schedule's cron times up to `now`, then stores when it is next due.
    async fn fire_cron(
        &self,
        schedule: ScheduleRow,
        clock: Clock,
    ) -> Result<usize, SchedulerError> {
        let now = clock.at;
        let timing = match schedule.timing() {
            Ok(timing) => timing,
            Err(e) => {
                tracing::error!(schedule = %schedule.name, error = %e, "schedule cannot fire");
                self.store
                    .set_next_due(&schedule.name, schedule.revision, None)
                    .await?;
                return Ok(0);
            }
        };
        let after = self.store.fire_cursor_ms(&schedule).await?;
        let mut cursor = Timestamp::from_millisecond(after).unwrap_or(Timestamp::UNIX_EPOCH);
        let mut handled = 0;
        let next_due = loop {
            let Some(fire) = timing.next_fire(cursor) else {
                break None;
            };
            if fire.due > now {
                break Some(fire.due);
            }
            if handled == MAX_FIRES_PER_PASS {
                break Some(now);
            }
            let pending = Pending {
                kind: FireKind::Cron,
                scheduled: fire.scheduled.timestamp(),
                due: fire.due,
                requested: false,
                requested_by: None,
            };
            self.fire(&schedule, &pending, clock).await?;
            cursor = fire.scheduled.timestamp();
            handled += 1;
        };
        let next_due = next_due.map(|t| t.as_millisecond());
        if next_due.is_none() {
            tracing::info!(schedule = %schedule.name, "schedule has ended: no fire after its end");
        }
        self.store
            .set_next_due(&schedule.name, schedule.revision, next_due)
            .await?;
        Ok(handled)
    }

    /// Decides the fires triggered by hand (`schedule trigger`): the overlap policy
    /// applies, the catch-up window does not.
    async fn settle_requested(
        &self,
        schedule: &ScheduleRow,
        clock: Clock,
    ) -> Result<usize, SchedulerError> {
        let now = clock.now();
        let requested = self
            .store
            .waiting_fires(&schedule.name, FireOutcome::Requested)
            .await?;
        for fire in &requested {
            let at = Timestamp::from_millisecond(fire.scheduled_ms).unwrap_or(now);
            let pending = Pending {
                kind: fire.kind,
                scheduled: at,
                due: at.max(now),
                requested: true,
                requested_by: fire.requested_by.as_deref(),
            };
            self.fire(schedule, &pending, clock).await?;
        }
        Ok(requested.len())
    }
}
