//! The fires of schedules.
//!
//! A fire is recorded under (schedule, cron time) before its run starts, so replicas and
//! restarts never fire twice.

use uuid::Uuid;

use crate::error::StoreError;
use crate::schedules::ScheduleRow;
use crate::store::{Store, with_pool};
use crate::text::text_enum;
use crate::tx::{Tx, with_tx};

text_enum! {
    /// What set a fire off.
    pub enum FireKind {
        /// The schedule's own cron time, fired by the scheduler.
        Cron = "cron",
        /// `schedule trigger`: fired by hand, at the moment of the trigger.
        Manual = "manual",
        /// `schedule backfill`: a past cron time queued by hand.
        Backfill = "backfill",
    }
}

text_enum! {
    /// What became of a fire.
    pub enum FireOutcome {
        /// Triggered by hand, waiting for the scheduler's decision.
        Requested = "requested",
        /// Its run was started.
        Started = "started",
        /// Waiting for the schedule's running run to end.
        Buffered = "buffered",
        /// Due longer ago than the catch-up window.
        SkippedMissed = "skipped_missed",
        /// A run of the schedule was still going and its overlap policy says skip.
        SkippedOverlap = "skipped_overlap",
        /// The schedule's SOP does not exist or refuses its parameters.
        SkippedInvalid = "skipped_invalid",
    }
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct FireRow {
    pub schedule: String,
    /// The cron time, or the time of a manual trigger (epoch ms).
    pub scheduled_ms: i64,
    pub kind: FireKind,
    pub outcome: FireOutcome,
    /// The run it started.
    pub run_id: Option<Uuid>,
    /// When it was handled (epoch ms).
    pub fired_ms: i64,
    /// How long after it was due it was handled.
    pub lateness_ms: i64,
    /// Who triggered or backfilled it by hand; cron fires answer to the schedule's owner.
    pub requested_by: Option<String>,
}

/// How many fires a schedule has had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FireCounts {
    /// Every recorded fire.
    pub total: i64,
    /// Fires recorded as skipped (missed or overlapping).
    pub skipped: i64,
}

const FIRE_COLUMNS: &str =
    "schedule, scheduled_ms, kind, outcome, run_id, fired_ms, lateness_ms, requested_by";

impl Store {
    /// The latest cron time recorded for a schedule (epoch ms): where its next pass starts.
    /// Manual triggers are not cron times and do not count.
    pub async fn last_cron_fire_ms(&self, schedule: &str) -> Result<Option<i64>, StoreError> {
        let (last,): (Option<i64>,) = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT MAX(scheduled_ms) FROM schedule_fires WHERE schedule = $1 AND kind <> 'manual'",
            )
            .bind(schedule)
            .fetch_one(pool)
            .await?
        });
        Ok(last)
    }

    /// Where a schedule's next cron time is searched from (epoch ms): its latest recorded
    /// cron fire, or when fires started being owed, whichever is later.
    pub async fn fire_cursor_ms(&self, schedule: &ScheduleRow) -> Result<i64, StoreError> {
        let last = self.last_cron_fire_ms(&schedule.name).await?;
        Ok(last.unwrap_or(schedule.since_ms).max(schedule.since_ms))
    }

    /// Schedules with fires waiting for the scheduler (triggered by hand, or buffered).
    pub async fn schedules_with_waiting_fires(&self) -> Result<Vec<String>, StoreError> {
        let rows: Vec<(String,)> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT DISTINCT schedule FROM schedule_fires
                 WHERE outcome IN ('requested', 'buffered') ORDER BY schedule",
            )
            .fetch_all(pool)
            .await?
        });
        Ok(rows.into_iter().map(|(s,)| s).collect())
    }

    /// Fires of a schedule in `outcome` (requested or buffered), oldest first.
    pub async fn waiting_fires(
        &self,
        schedule: &str,
        outcome: FireOutcome,
    ) -> Result<Vec<FireRow>, StoreError> {
        let sql = format!(
            "SELECT {FIRE_COLUMNS} FROM schedule_fires WHERE schedule = $1 AND outcome = $2
             ORDER BY scheduled_ms"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(schedule)
                .bind(outcome)
                .fetch_all(pool)
                .await?
        }))
    }

    /// Runs a schedule started that have not ended (or not been created yet).
    pub async fn active_schedule_runs(&self, schedule: &str) -> Result<Vec<Uuid>, StoreError> {
        let rows: Vec<(Option<Uuid>,)> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT f.run_id FROM schedule_fires f LEFT JOIN runs r ON r.id = f.run_id
                 WHERE f.schedule = $1 AND f.outcome = 'started'
                   AND (r.id IS NULL OR r.status NOT IN ('succeeded', 'failed', 'cancelled'))",
            )
            .bind(schedule)
            .fetch_all(pool)
            .await?
        });
        Ok(rows.into_iter().filter_map(|(id,)| id).collect())
    }

    /// A schedule's fires, newest first.
    pub async fn fires(&self, schedule: &str, limit: i64) -> Result<Vec<FireRow>, StoreError> {
        let sql = format!(
            "SELECT {FIRE_COLUMNS} FROM schedule_fires WHERE schedule = $1
             ORDER BY scheduled_ms DESC LIMIT $2"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(schedule)
                .bind(limit)
                .fetch_all(pool)
                .await?
        }))
    }

    /// How many fires a schedule has had, and how many were skipped.
    pub async fn fire_counts(&self, schedule: &str) -> Result<FireCounts, StoreError> {
        let (total, skipped): (i64, Option<i64>) = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT COUNT(*), SUM(CASE WHEN outcome LIKE 'skipped%' THEN 1 ELSE 0 END)
                 FROM schedule_fires WHERE schedule = $1",
            )
            .bind(schedule)
            .fetch_one(pool)
            .await?
        });
        Ok(FireCounts {
            total,
            skipped: skipped.unwrap_or(0),
        })
    }
}

impl Tx {
    /// Records a fire; `false` when it was recorded before (another scheduler, or this one
    /// before a restart, handled it): the caller must then do nothing.
    pub async fn record_fire(&mut self, fire: &FireRow) -> Result<bool, StoreError> {
        let inserted = with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO schedule_fires (schedule, scheduled_ms, kind, outcome, run_id, fired_ms,
                   lateness_ms, requested_by)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (schedule, scheduled_ms) DO NOTHING",
            )
            .bind(&fire.schedule)
            .bind(fire.scheduled_ms)
            .bind(fire.kind)
            .bind(fire.outcome)
            .bind(fire.run_id)
            .bind(fire.fired_ms)
            .bind(fire.lateness_ms)
            .bind(&fire.requested_by)
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(inserted == 1)
    }

    /// Settles a fire that was `requested` (triggered by hand) with the scheduler's
    /// decision; `false` when another scheduler settled it first.
    pub async fn settle_requested_fire(&mut self, fire: &FireRow) -> Result<bool, StoreError> {
        let updated = with_tx!(self, conn => {
            sqlx::query(
                "UPDATE schedule_fires SET outcome = $1, run_id = $2, fired_ms = $3, lateness_ms = $4
                 WHERE schedule = $5 AND scheduled_ms = $6 AND outcome = 'requested'",
            )
            .bind(fire.outcome)
            .bind(fire.run_id)
            .bind(fire.fired_ms)
            .bind(fire.lateness_ms)
            .bind(&fire.schedule)
            .bind(fire.scheduled_ms)
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(updated == 1)
    }

    /// Queues a past cron time to run (`schedule backfill`): a time never recorded, or
    /// recorded as skipped, becomes a buffered fire, run after the others in order.
    /// `false` when the time already started or waits.
    pub async fn backfill_fire(
        &mut self,
        schedule: &str,
        scheduled_ms: i64,
        now_ms: i64,
        requested_by: &str,
    ) -> Result<bool, StoreError> {
        let fire = FireRow {
            schedule: schedule.to_owned(),
            scheduled_ms,
            kind: FireKind::Backfill,
            outcome: FireOutcome::Buffered,
            run_id: None,
            fired_ms: now_ms,
            lateness_ms: 0,
            requested_by: Some(requested_by.to_owned()),
        };
        if self.record_fire(&fire).await? {
            return Ok(true);
        }
        let updated = with_tx!(self, conn => {
            sqlx::query(
                "UPDATE schedule_fires SET outcome = 'buffered', kind = 'backfill', fired_ms = $1,
                   requested_by = $4
                 WHERE schedule = $2 AND scheduled_ms = $3 AND outcome LIKE 'skipped%'",
            )
            .bind(now_ms)
            .bind(schedule)
            .bind(scheduled_ms)
            .bind(requested_by)
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(updated == 1)
    }

    /// Settles a buffered fire as `outcome` (started with its run, or skipped): `false`
    /// when another scheduler took it first.
    pub async fn settle_buffered_fire(
        &mut self,
        schedule: &str,
        scheduled_ms: i64,
        outcome: FireOutcome,
        run_id: Option<Uuid>,
        fired_ms: i64,
    ) -> Result<bool, StoreError> {
        let updated = with_tx!(self, conn => {
            sqlx::query(
                "UPDATE schedule_fires SET outcome = $1, run_id = $2, fired_ms = $3,
                   lateness_ms = $3 - scheduled_ms
                 WHERE schedule = $4 AND scheduled_ms = $5 AND outcome = 'buffered'",
            )
            .bind(outcome)
            .bind(run_id)
            .bind(fired_ms)
            .bind(schedule)
            .bind(scheduled_ms)
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(updated == 1)
    }
}
