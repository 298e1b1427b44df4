//! Schedules: their definitions, pauses and when each is next due (their fires are in
//! `fires.rs`).
//!
//! `next_due_ms` is the scheduler's index: it reads only the schedules that are due, so
//! idle schedules cost nothing between their fires.

use chrono::{DateTime, Utc};
use gatehouse_schedule::{Overlap, ScheduleError, Timing};

use crate::error::StoreError;
use crate::hidden::hidden_clause;
use crate::store::{Store, with_pool, with_writer};
use crate::tx::with_tx;

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
    /// What a fire does while an earlier run is still going.
    pub overlap: Overlap,
    /// How late a fire may still start, in milliseconds.
    pub catchup_window_ms: i64,
    /// Each fire starts up to this much after its cron time, in milliseconds.
    pub jitter_ms: i64,
    /// No fire before this (epoch ms).
    pub starts_ms: Option<i64>,
    /// No fire after this (epoch ms).
    pub ends_ms: Option<i64>,
    /// Paused schedules do not fire.
    pub paused: bool,
    /// Why it was paused.
    pub pause_note: Option<String>,
    /// `config` or `api`.
    pub source: String,
    /// The person accountable for its runs: who created or last changed it.
    pub owner: String,
    /// The project its runs work on (all of its repositories).
    pub project: Option<String>,
    /// Fires before this (epoch ms) are not owed: set at creation and on resume.
    pub since_ms: i64,
    /// When the next fire is due (epoch ms); 0 = not computed yet, `None` = ended.
    pub next_due_ms: Option<i64>,
    /// Bumped by every change of definition or pause, for compare-and-set.
    pub revision: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl ScheduleRow {
    /// The schedule's timing, as checked when it was created or loaded: what the scheduler
    /// fires by and the API shows.
    pub fn timing(&self) -> Result<Timing, ScheduleError> {
        Timing::from_millis(
            &self.name,
            &self.cron,
            &self.timezone,
            self.jitter_ms,
            self.starts_ms,
            self.ends_ms,
        )
    }
}

const SCHEDULE_COLUMNS: &str = "name, cron, timezone, sop, params, overlap, catchup_window_ms, \
     jitter_ms, starts_ms, ends_ms, paused, pause_note, source, since_ms, next_due_ms, revision, \
     created_at, updated_at, owner, project";

impl Store {
    /// Creates or updates a schedule by name (the configuration file's schedules); an
    /// update keeps `since_ms` and the pause, and makes the scheduler recompute the next fire.
    pub async fn upsert_schedule(&self, s: &ScheduleRow) -> Result<(), StoreError> {
        self.write_schedule(
            s,
            "DO UPDATE SET cron = excluded.cron, timezone = excluded.timezone,
               sop = excluded.sop, params = excluded.params, overlap = excluded.overlap,
               catchup_window_ms = excluded.catchup_window_ms, jitter_ms = excluded.jitter_ms,
               starts_ms = excluded.starts_ms, ends_ms = excluded.ends_ms,
               source = excluded.source, owner = excluded.owner, project = excluded.project,
               next_due_ms = 0,
               revision = schedules.revision + 1, updated_at = excluded.updated_at",
        )
        .await
        .map(drop)
    }

    /// Creates a schedule; `false` when the name is taken.
    pub async fn insert_schedule(&self, s: &ScheduleRow) -> Result<bool, StoreError> {
        Ok(self.write_schedule(s, "DO NOTHING").await? == 1)
    }

    /// Inserts a schedule due at once (`next_due_ms` 0: the scheduler computes it), with
    /// `on_conflict` deciding what an existing name means. Returns the rows written.
    async fn write_schedule(&self, s: &ScheduleRow, on_conflict: &str) -> Result<u64, StoreError> {
        let sql = format!(
            "INSERT INTO schedules (name, cron, timezone, sop, params, overlap, catchup_window_ms,
               jitter_ms, starts_ms, ends_ms, paused, pause_note, source, since_ms, next_due_ms,
               revision, created_at, updated_at, owner, project)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, 0, 0, $15, $16, $17,
               $18)
             ON CONFLICT (name) {on_conflict}"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(&s.name)
                .bind(&s.cron)
                .bind(&s.timezone)
                .bind(&s.sop)
                .bind(&s.params)
                .bind(s.overlap)
                .bind(s.catchup_window_ms)
                .bind(s.jitter_ms)
                .bind(s.starts_ms)
                .bind(s.ends_ms)
                .bind(s.paused)
                .bind(&s.pause_note)
                .bind(&s.source)
                .bind(s.since_ms)
                .bind(s.created_at)
                .bind(s.updated_at)
                .bind(&s.owner)
                .bind(&s.project)
                .execute(pool)
                .await?
                .rows_affected()
        }))
    }

    /// Deletes a schedule and its fire history (runs it started stay); `false` when there
    /// was none.
    pub async fn delete_schedule(&self, name: &str) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        let deleted = with_tx!(tx, conn => {
            sqlx::query("DELETE FROM schedule_fires WHERE schedule = $1")
                .bind(name)
                .execute(&mut *conn)
                .await?;
            sqlx::query("DELETE FROM schedules WHERE name = $1")
                .bind(name)
                .execute(&mut *conn)
                .await?
                .rows_affected()
        });
        tx.commit().await?;
        Ok(deleted == 1)
    }

    /// Deletes schedules from `source` whose names are not in `keep` (a schedule removed
    /// from the configuration file stops firing).
    pub async fn prune_schedules(&self, source: &str, keep: &[String]) -> Result<u64, StoreError> {
        let names: Vec<(String,)> = with_pool!(self, pool => {
            sqlx::query_as("SELECT name FROM schedules WHERE source = $1")
                .bind(source)
                .fetch_all(pool)
                .await?
        });
        let mut removed = 0;
        for (name,) in names {
            if !keep.contains(&name) && self.delete_schedule(&name).await? {
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Pauses (with a note) or resumes a schedule; `false` when there is none. Fires that
    /// fell due while paused are not owed: a resumed schedule fires from now on.
    pub async fn set_schedule_paused(
        &self,
        name: &str,
        paused: bool,
        note: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let updated = with_writer!(self, pool => {
            sqlx::query(
                "UPDATE schedules SET paused = $1, pause_note = $2,
                   since_ms = CASE WHEN $1 THEN since_ms ELSE $3 END,
                   next_due_ms = CASE WHEN $1 THEN next_due_ms ELSE 0 END,
                   revision = revision + 1, updated_at = $4
                 WHERE name = $5",
            )
            .bind(paused)
            .bind(note)
            .bind(now.timestamp_millis())
            .bind(now)
            .bind(name)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(updated == 1)
    }

    pub async fn schedule(&self, name: &str) -> Result<Option<ScheduleRow>, StoreError> {
        let sql = format!("SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE name = $1");
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(name).fetch_optional(pool).await?
        }))
    }

    /// Schedules by name, `limit` at a time, after `after` (keyset paging), none of the
    /// `hidden` projects.
    pub async fn schedules(
        &self,
        after: Option<&str>,
        hidden: &[String],
        limit: i64,
    ) -> Result<Vec<ScheduleRow>, StoreError> {
        let sql = format!(
            "SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE name > $1{} ORDER BY name LIMIT $2",
            hidden_clause("project", 3, hidden)
        );
        Ok(with_pool!(self, pool => {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(after.unwrap_or(""))
                .bind(limit);
            for project in hidden {
                query = query.bind(project);
            }
            query.fetch_all(pool).await?
        }))
    }

    /// Unpaused schedules whose next fire is due at `now_ms` (or not computed yet),
    /// most overdue first.
    pub async fn due_schedules(
        &self,
        now_ms: i64,
        limit: i64,
    ) -> Result<Vec<ScheduleRow>, StoreError> {
        let sql = format!(
            "SELECT {SCHEDULE_COLUMNS} FROM schedules
             WHERE NOT paused AND next_due_ms <= $1 ORDER BY next_due_ms LIMIT $2"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(now_ms)
                .bind(limit)
                .fetch_all(pool)
                .await?
        }))
    }

    /// When the earliest unpaused schedule is due (epoch ms), so the scheduler can sleep
    /// until then.
    pub async fn next_schedule_due_ms(&self) -> Result<Option<i64>, StoreError> {
        let (due,): (Option<i64>,) = with_pool!(self, pool => {
            sqlx::query_as("SELECT MIN(next_due_ms) FROM schedules WHERE NOT paused")
                .fetch_one(pool)
                .await?
        });
        Ok(due)
    }

    /// Stores when a schedule is next due, unless its definition changed since it was
    /// read at `revision` (then the scheduler computes again from the new definition).
    pub async fn set_next_due(
        &self,
        name: &str,
        revision: i64,
        next_due_ms: Option<i64>,
    ) -> Result<bool, StoreError> {
        let updated = with_writer!(self, pool => {
            sqlx::query("UPDATE schedules SET next_due_ms = $1 WHERE name = $2 AND revision = $3")
                .bind(next_due_ms)
                .bind(name)
                .bind(revision)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(updated == 1)
    }
}
