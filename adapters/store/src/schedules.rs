//! Schedules and their fires.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::store::with_pool;
use crate::tx::with_tx;
use crate::{Store, StoreError, Tx};

/// A stored schedule.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ScheduleRow {
    /// Unique name.
    pub name: String,
    /// Cron expression.
    pub cron: String,
    /// IANA time zone.
    pub timezone: String,
    /// SOP it starts.
    pub sop: String,
    /// Parameters as a JSON object.
    pub params: String,
    /// Overlap policy name.
    pub overlap: String,
    /// How late a fire may still start, in milliseconds.
    pub catchup_window_ms: i64,
    /// Paused schedules do not fire.
    pub paused: bool,
    /// Why it was paused.
    pub pause_note: Option<String>,
    /// `config` or `api`.
    pub source: String,
    /// Fires before this (epoch ms) are not owed.
    pub since_ms: i64,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Changed.
    pub updated_at: DateTime<Utc>,
}

/// One recorded fire.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct FireRow {
    /// Schedule.
    pub schedule: String,
    /// The cron time (epoch ms).
    pub scheduled_ms: i64,
    /// started, buffered, skipped_missed or skipped_overlap.
    pub outcome: String,
    /// The run it started.
    pub run_id: Option<Uuid>,
    /// When it was handled (epoch ms).
    pub fired_ms: i64,
    /// fired − scheduled.
    pub lateness_ms: i64,
}

const SCHEDULE_COLUMNS: &str = "name, cron, timezone, sop, params, overlap, catchup_window_ms, \
     paused, pause_note, source, since_ms, created_at, updated_at";

impl Store {
    /// Creates or updates a schedule by name; an update keeps `since_ms` and the pause.
    pub async fn upsert_schedule(&self, s: &ScheduleRow) -> Result<(), StoreError> {
        with_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO schedules (name, cron, timezone, sop, params, overlap, catchup_window_ms,
                   paused, pause_note, source, since_ms, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
                 ON CONFLICT (name) DO UPDATE SET cron = excluded.cron, timezone = excluded.timezone,
                   sop = excluded.sop, params = excluded.params, overlap = excluded.overlap,
                   catchup_window_ms = excluded.catchup_window_ms, source = excluded.source,
                   updated_at = excluded.updated_at",
            )
            .bind(&s.name)
            .bind(&s.cron)
            .bind(&s.timezone)
            .bind(&s.sop)
            .bind(&s.params)
            .bind(&s.overlap)
            .bind(s.catchup_window_ms)
            .bind(s.paused)
            .bind(&s.pause_note)
            .bind(&s.source)
            .bind(s.since_ms)
            .bind(s.created_at)
            .bind(s.updated_at)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Deletes schedules from `source` whose names are not in `keep` (a schedule removed
    /// from the configuration file stops firing).
    pub async fn prune_schedules(&self, source: &str, keep: &[String]) -> Result<u64, StoreError> {
        let mut removed = 0;
        for s in self.schedules().await? {
            if s.source == source && !keep.contains(&s.name) {
                removed += with_pool!(self, pool => {
                    sqlx::query("DELETE FROM schedules WHERE name = $1")
                        .bind(&s.name)
                        .execute(pool)
                        .await?
                        .rows_affected()
                });
            }
        }
        Ok(removed)
    }

    /// Every schedule, by name.
    pub async fn schedules(&self) -> Result<Vec<ScheduleRow>, StoreError> {
        let sql = format!("SELECT {SCHEDULE_COLUMNS} FROM schedules ORDER BY name");
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).fetch_all(pool).await?
        }))
    }

    /// The latest recorded fire time of a schedule (epoch ms).
    pub async fn last_fire_ms(&self, schedule: &str) -> Result<Option<i64>, StoreError> {
        let (last,): (Option<i64>,) = with_pool!(self, pool => {
            sqlx::query_as("SELECT MAX(scheduled_ms) FROM schedule_fires WHERE schedule = $1")
                .bind(schedule)
                .fetch_one(pool)
                .await?
        });
        Ok(last)
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

    /// Fires of a schedule waiting for the running run to end, oldest first.
    pub async fn buffered_fires(&self, schedule: &str) -> Result<Vec<i64>, StoreError> {
        let rows: Vec<(i64,)> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT scheduled_ms FROM schedule_fires WHERE schedule = $1 AND outcome = 'buffered'
                 ORDER BY scheduled_ms",
            )
            .bind(schedule)
            .fetch_all(pool)
            .await?
        });
        Ok(rows.into_iter().map(|(t,)| t).collect())
    }

    /// A schedule's fires, newest first.
    pub async fn fires(&self, schedule: &str, limit: i64) -> Result<Vec<FireRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT schedule, scheduled_ms, outcome, run_id, fired_ms, lateness_ms
                 FROM schedule_fires WHERE schedule = $1 ORDER BY scheduled_ms DESC LIMIT $2",
            )
            .bind(schedule)
            .bind(limit)
            .fetch_all(pool)
            .await?
        }))
    }
}

impl Tx {
    /// Records a fire; `false` when it was recorded before (another scheduler, or this one
    /// before a restart, handled it): the caller must then do nothing.
    pub async fn record_fire(&mut self, fire: &FireRow) -> Result<bool, StoreError> {
        let inserted = with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO schedule_fires (schedule, scheduled_ms, outcome, run_id, fired_ms, lateness_ms)
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (schedule, scheduled_ms) DO NOTHING",
            )
            .bind(&fire.schedule)
            .bind(fire.scheduled_ms)
            .bind(&fire.outcome)
            .bind(fire.run_id)
            .bind(fire.fired_ms)
            .bind(fire.lateness_ms)
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(inserted == 1)
    }

    /// Starts a buffered fire: `false` when another scheduler took it first.
    pub async fn start_buffered_fire(
        &mut self,
        schedule: &str,
        scheduled_ms: i64,
        run_id: Uuid,
        fired_ms: i64,
    ) -> Result<bool, StoreError> {
        let updated = with_tx!(self, conn => {
            sqlx::query(
                "UPDATE schedule_fires SET outcome = 'started', run_id = $1, fired_ms = $2,
                   lateness_ms = $2 - scheduled_ms
                 WHERE schedule = $3 AND scheduled_ms = $4 AND outcome = 'buffered'",
            )
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
