//! Firing cron schedules: each fire recorded once under (schedule, scheduled time), then
//! started, buffered or skipped by the schedule's catch-up window and overlap policy.

use std::collections::BTreeMap;
use std::time::Duration;

use gatehouse_events::{
    Actor, Channel, Event, RunCommand, RunCommandKind, RunRequested, ScheduleFire,
};
use gatehouse_schedule::{Cron, Decision, Overlap, decide};
use gatehouse_store::{FireRow, ScheduleRow};
use jiff::Timestamp;
use uuid::Uuid;

use crate::commands::emit;
use crate::{Scheduler, SchedulerError};

/// At most this many fires of one schedule are handled per pass (a minutely schedule after
/// a week of downtime), so one schedule cannot starve the others.
const MAX_FIRES_PER_PASS: usize = 10_000;

impl Scheduler {
    /// Handles every fire due at `now` that no scheduler has recorded yet. Any number of
    /// schedulers may call this at once: the fire's row decides who acts on it.
    pub async fn fire_schedules(&self, now: Timestamp) -> Result<usize, SchedulerError> {
        let mut handled = 0;
        for schedule in self.store.schedules().await? {
            if schedule.paused {
                continue;
            }
            let cron = match Cron::new(&schedule.cron, &schedule.timezone) {
                Ok(cron) => cron,
                Err(e) => {
                    tracing::warn!(schedule = %schedule.name, error = %e, "schedule cannot fire");
                    continue;
                }
            };
            let after = self
                .store
                .last_fire_ms(&schedule.name)
                .await?
                .unwrap_or(schedule.since_ms)
                .max(schedule.since_ms);
            let mut cursor = Timestamp::from_millisecond(after).unwrap_or(Timestamp::UNIX_EPOCH);
            for _ in 0..MAX_FIRES_PER_PASS {
                let Some(next) = cron.next_after(cursor) else {
                    break;
                };
                let scheduled = next.timestamp();
                if scheduled > now {
                    break;
                }
                self.fire(&schedule, scheduled, now).await?;
                cursor = scheduled;
                handled += 1;
            }
            self.start_buffered(&schedule, now).await?;
        }
        Ok(handled)
    }

    async fn fire(
        &self,
        schedule: &ScheduleRow,
        scheduled: Timestamp,
        now: Timestamp,
    ) -> Result<(), SchedulerError> {
        let overlap: Overlap = schedule.overlap.parse().unwrap_or_default();
        let window = Duration::from_millis(schedule.catchup_window_ms.max(0).unsigned_abs());
        let active = self.store.active_schedule_runs(&schedule.name).await?;
        let buffered = self.store.buffered_fires(&schedule.name).await?.len();
        let decision = decide(overlap, window, scheduled, now, active.len(), buffered);
        let run_id =
            matches!(decision, Decision::Start | Decision::CancelOthersAndStart).then(Uuid::now_v7);
        let outcome = match decision {
            Decision::Start | Decision::CancelOthersAndStart => "started",
            Decision::Buffer => "buffered",
            Decision::Skip(reason) => reason.outcome(),
        };
        let mut tx = self.store.begin().await?;
        let fire = FireRow {
            schedule: schedule.name.clone(),
            scheduled_ms: scheduled.as_millisecond(),
            outcome: outcome.to_owned(),
            run_id,
            fired_ms: now.as_millisecond(),
            lateness_ms: now.as_millisecond() - scheduled.as_millisecond(),
        };
        if !tx.record_fire(&fire).await? {
            return Ok(());
        }
        if decision == Decision::CancelOthersAndStart {
            for other in &active {
                let command = RunCommand {
                    run_id: *other,
                    command: RunCommandKind::Cancel,
                    actor: actor(schedule),
                };
                emit(&mut tx, Event::RunCommand(command), None).await?;
            }
        }
        if let Some(run_id) = run_id {
            emit(
                &mut tx,
                Event::RunRequested(request(schedule, run_id, scheduled)),
                None,
            )
            .await?;
        }
        tx.commit().await?;
        tracing::info!(schedule = %schedule.name, scheduled = %scheduled, %outcome, lateness_ms = fire.lateness_ms, "schedule fired");
        Ok(())
    }

    /// Starts the oldest buffered fire once nothing of the schedule runs.
    async fn start_buffered(
        &self,
        schedule: &ScheduleRow,
        now: Timestamp,
    ) -> Result<(), SchedulerError> {
        let Some(&oldest) = self.store.buffered_fires(&schedule.name).await?.first() else {
            return Ok(());
        };
        if !self
            .store
            .active_schedule_runs(&schedule.name)
            .await?
            .is_empty()
        {
            return Ok(());
        }
        let run_id = Uuid::now_v7();
        let mut tx = self.store.begin().await?;
        if tx
            .start_buffered_fire(&schedule.name, oldest, run_id, now.as_millisecond())
            .await?
        {
            let scheduled = Timestamp::from_millisecond(oldest).unwrap_or(now);
            emit(
                &mut tx,
                Event::RunRequested(request(schedule, run_id, scheduled)),
                None,
            )
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

fn actor(schedule: &ScheduleRow) -> Actor {
    Actor {
        channel: Channel::Schedule,
        handle: schedule.name.clone(),
        person: None,
    }
}

fn request(schedule: &ScheduleRow, run_id: Uuid, scheduled: Timestamp) -> RunRequested {
    let params: BTreeMap<String, String> =
        serde_json::from_str(&schedule.params).unwrap_or_default();
    RunRequested {
        run_id,
        sop: schedule.sop.clone(),
        params,
        requirement_id: None,
        requested_by: actor(schedule),
        schedule: Some(ScheduleFire {
            schedule: schedule.name.clone(),
            scheduled_time: chrono::DateTime::from_timestamp_millis(scheduled.as_millisecond())
                .unwrap_or_default(),
        }),
        parent: None,
    }
}
