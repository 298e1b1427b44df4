//! Runs, their frozen SOP versions and the gate-decision audit trail.

use chrono::{DateTime, Utc};
use gatehouse_events::RunStatus;
use uuid::Uuid;

use crate::error::StoreError;
use crate::hidden::hidden_clause;
use crate::store::{Store, with_pool};
use crate::tx::{Inner, Tx, with_tx};

/// A run as stored. `state` is the scheduler engine's JSON; the store does not read it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RunRow {
    pub id: Uuid,
    pub sop: String,
    /// Frozen SOP version.
    pub sop_version: String,
    /// Parameters as a JSON object.
    pub params: String,
    /// The person who asked for it.
    pub requested_by: Option<String>,
    /// For listing without decoding the state.
    pub status: RunStatus,
    /// Engine state as JSON.
    pub state: String,
    /// Compare-and-set guard.
    pub revision: i64,
    /// The parent run, for runs started by a `sop` node.
    pub parent_run: Option<Uuid>,
    /// The parent's node.
    pub parent_node: Option<String>,
    /// The parent node's attempt.
    pub parent_attempt: Option<i32>,
    /// The requirement it works on.
    pub requirement_id: Option<Uuid>,
    /// The schedule whose fire started it.
    pub schedule: Option<String>,
    /// That fire's cron time (or manual trigger time), epoch ms.
    pub scheduled_ms: Option<i64>,
    /// The project it works on.
    pub project: Option<String>,
    /// Its repositories: the events crate's `RunWorkspace` as JSON.
    pub workspace: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The conversation it was started from, whose workspace it holds until it ends; read
    /// with the row (`conversation_runs`), never written with it.
    pub conversation: Option<Uuid>,
}

/// One audited gate decision.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DecisionRow {
    pub run_id: Uuid,
    pub node: String,
    pub attempt: i32,
    /// approve, send_back or reject.
    pub decision: String,
    /// Send-back target.
    pub target: Option<String>,
    pub comment: Option<String>,
    pub person: String,
    /// Where from (api, slack, ...).
    pub channel: String,
    /// `applied`, or why it was refused.
    pub outcome: String,
    pub decided_at: DateTime<Utc>,
}

/// A run without its state: who asked for what, how it ended, when.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RunOutline {
    pub id: Uuid,
    pub sop: String,
    pub sop_version: String,
    pub requested_by: Option<String>,
    pub status: RunStatus,
    pub project: Option<String>,
    pub created_at: DateTime<Utc>,
    /// The last change; for a finished run, when it finished.
    pub updated_at: DateTime<Utc>,
}

const RUN_COLUMNS: &str = "id, sop, sop_version, params, requested_by, status, state, revision, \
     parent_run, parent_node, parent_attempt, requirement_id, schedule, scheduled_ms, project, \
     workspace, created_at, updated_at, \
     (SELECT conversation_id FROM conversation_runs WHERE run_id = runs.id) AS conversation";

impl Tx {
    /// Keeps a SOP version's text so runs on it can be reloaded after the file changes. A
    /// version this process has seen stored is not written again: a version is its text's
    /// hash and is never deleted, and every run is on a version saved before it.
    pub async fn save_sop_version(
        &mut self,
        version: &str,
        name: &str,
        source: &str,
        body: &str,
    ) -> Result<(), StoreError> {
        if self.store.definitions.is_stored(version) {
            return Ok(());
        }
        // Known to be stored once this commits, and not saved again.
        let saved = version.to_owned();
        self.after_commit(move |store| store.definitions.stored([saved]));
        with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO sop_versions (version, name, source, body, created_at)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (version) DO NOTHING",
            )
            .bind(version)
            .bind(name)
            .bind(source)
            .bind(body)
            .bind(Utc::now())
            .execute(conn)
            .await?;
        });
        Ok(())
    }

    /// Inserts a new run, or fills in the row [`Tx::request_run`] left for it. Returns the
    /// run as stored (a `requested` row it replaced keeps its `created_at`), so its first
    /// step needs no read; `None` if the run was created before (a repeated request).
    pub async fn create_run(&mut self, run: &RunRow) -> Result<Option<RunRow>, StoreError> {
        self.write_run(
            run,
            "ON CONFLICT (id) DO UPDATE SET sop = excluded.sop, sop_version = excluded.sop_version,
               params = excluded.params, requested_by = excluded.requested_by,
               status = excluded.status, state = excluded.state, revision = excluded.revision,
               parent_run = excluded.parent_run, parent_node = excluded.parent_node,
               parent_attempt = excluded.parent_attempt, requirement_id = excluded.requirement_id,
               schedule = excluded.schedule, scheduled_ms = excluded.scheduled_ms,
               project = excluded.project, workspace = excluded.workspace,
               updated_at = excluded.updated_at
             WHERE runs.status = 'requested'",
        )
        .await
    }

    /// Makes a run visible the moment its id is given out, with status `requested`,
    /// until the scheduler creates it ([`Tx::create_run`]); `false` if it exists.
    pub async fn request_run(&mut self, run: &RunRow) -> Result<bool, StoreError> {
        debug_assert_eq!(run.status, RunStatus::Requested);
        Ok(self
            .write_run(run, "ON CONFLICT (id) DO NOTHING")
            .await?
            .is_some())
    }

    /// Inserts `run`, with `on_conflict` deciding what an existing row becomes; the row
    /// as written, or `None` when nothing was.
    async fn write_run(
        &mut self,
        run: &RunRow,
        on_conflict: &str,
    ) -> Result<Option<RunRow>, StoreError> {
        let sql = format!(
            "INSERT INTO runs (id, sop, sop_version, params, requested_by, status, state,
               revision, parent_run, parent_node, parent_attempt, requirement_id, schedule,
               scheduled_ms, project, workspace, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
               $17, $18)
             {on_conflict}
             RETURNING {RUN_COLUMNS}"
        );
        Ok(with_tx!(self, conn => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
            .bind(run.id)
            .bind(&run.sop)
            .bind(&run.sop_version)
            .bind(&run.params)
            .bind(&run.requested_by)
            .bind(run.status)
            .bind(&run.state)
            .bind(run.revision)
            .bind(run.parent_run)
            .bind(&run.parent_node)
            .bind(run.parent_attempt)
            .bind(run.requirement_id)
            .bind(&run.schedule)
            .bind(run.scheduled_ms)
            .bind(&run.project)
            .bind(&run.workspace)
            .bind(run.created_at)
            .bind(run.updated_at)
            .fetch_optional(conn)
            .await?
        }))
    }

    /// Reads a run inside this transaction and holds it until the transaction ends, so
    /// concurrent writers of one run take turns (SQLite's `BEGIN IMMEDIATE` already does).
    pub async fn load_run(&mut self, id: Uuid) -> Result<Option<RunRow>, StoreError> {
        Ok(match &mut self.inner {
            Inner::Postgres(t) => {
                let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1 FOR UPDATE");
                sqlx::query_as(sqlx::AssertSqlSafe(sql))
                    .bind(id)
                    .fetch_optional(&mut **t)
                    .await?
            }
            Inner::Sqlite(t) => {
                let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1");
                sqlx::query_as(sqlx::AssertSqlSafe(sql))
                    .bind(id)
                    .fetch_optional(&mut **t)
                    .await?
            }
        })
    }

    /// Writes a run's new state if nobody else did since `revision` was read.
    pub async fn update_run(
        &mut self,
        id: Uuid,
        status: RunStatus,
        state: &str,
        read_revision: i64,
        new_revision: i64,
    ) -> Result<bool, StoreError> {
        let updated = with_tx!(self, conn => {
            sqlx::query(
                "UPDATE runs SET status = $1, state = $2, revision = $3, updated_at = $4
                 WHERE id = $5 AND revision = $6",
            )
            .bind(status)
            .bind(state)
            .bind(new_revision)
            .bind(Utc::now())
            .bind(id)
            .bind(read_revision)
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(updated == 1)
    }

    /// Audits a gate decision, applied or refused.
    pub async fn record_decision(&mut self, d: &DecisionRow) -> Result<(), StoreError> {
        with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO gate_decisions (run_id, node, attempt, decision, target, comment,
                   person, channel, outcome, decided_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(d.run_id)
            .bind(&d.node)
            .bind(d.attempt)
            .bind(&d.decision)
            .bind(&d.target)
            .bind(&d.comment)
            .bind(&d.person)
            .bind(&d.channel)
            .bind(&d.outcome)
            .bind(d.decided_at)
            .execute(conn)
            .await?;
        });
        Ok(())
    }
}

impl Store {
    /// The text of a frozen SOP version.
    pub async fn sop_version_body(
        &self,
        version: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as("SELECT source, body FROM sop_versions WHERE version = $1")
                .bind(version)
                .fetch_optional(pool)
                .await?
        }))
    }

    pub async fn run(&self, id: Uuid) -> Result<Option<RunRow>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1");
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(pool).await?
        }))
    }

    /// The newest runs first, optionally only those whose status is named `status` (as
    /// [`RunStatus::as_str`] names it; the API passes its `?status=` through, and a name
    /// that is no status matches no run), leaving out those of the `hidden` projects.
    pub async fn runs(
        &self,
        status: Option<&str>,
        hidden: &[String],
        limit: i64,
    ) -> Result<Vec<RunRow>, StoreError> {
        self.runs_where(status, None, None, hidden, limit).await
    }

    /// [`Store::runs`], also narrowed to one project's and one SOP's runs when those are
    /// given (an unknown name matches no run).
    pub async fn runs_where(
        &self,
        status: Option<&str>,
        project: Option<&str>,
        sop: Option<&str>,
        hidden: &[String],
        limit: i64,
    ) -> Result<Vec<RunRow>, StoreError> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE ($1 IS NULL OR status = $1)
               AND ($3 IS NULL OR project = $3) AND ($4 IS NULL OR sop = $4){}
             ORDER BY created_at DESC, id DESC LIMIT $2",
            hidden_clause("project", 5, hidden)
        );
        Ok(with_pool!(self, pool => {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(status)
                .bind(limit)
                .bind(project)
                .bind(sop);
            for project in hidden {
                query = query.bind(project);
            }
            query.fetch_all(pool).await?
        }))
    }

    /// Every run whose status is `status`, oldest first: for the gates waiting, which must
    /// all be shown however many there are.
    pub async fn all_runs_with_status(&self, status: RunStatus) -> Result<Vec<RunRow>, StoreError> {
        let sql =
            format!("SELECT {RUN_COLUMNS} FROM runs WHERE status = $1 ORDER BY created_at, id");
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(status.as_str())
                .fetch_all(pool)
                .await?
        }))
    }

    /// The newest runs `person` asked for first, at most `limit`, leaving out those of the
    /// `hidden` projects.
    pub async fn runs_requested_by(
        &self,
        person: &str,
        hidden: &[String],
        limit: i64,
    ) -> Result<Vec<RunRow>, StoreError> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE requested_by = $1{}
             ORDER BY created_at DESC, id DESC LIMIT $2",
            hidden_clause("project", 3, hidden)
        );
        Ok(with_pool!(self, pool => {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(person).bind(limit);
            for project in hidden {
                query = query.bind(project);
            }
            query.fetch_all(pool).await?
        }))
    }

    /// What reports need of every run created at or after `since`, oldest first (not its
    /// state or parameters, which can be large).
    pub async fn run_outlines_since(
        &self,
        since: DateTime<Utc>,
    ) -> Result<Vec<RunOutline>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT id, sop, sop_version, requested_by, status, project, created_at, updated_at
                 FROM runs WHERE created_at >= $1 ORDER BY created_at, id",
            )
            .bind(since)
            .fetch_all(pool)
            .await?
        }))
    }

    /// The runs working on a requirement, newest first.
    pub async fn runs_of_requirement(&self, requirement: Uuid) -> Result<Vec<RunRow>, StoreError> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE requirement_id = $1
             ORDER BY created_at DESC, id DESC"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(requirement)
                .fetch_all(pool)
                .await?
        }))
    }

    /// A run's gate decisions, oldest first.
    pub async fn decisions(&self, run_id: Uuid) -> Result<Vec<DecisionRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT run_id, node, attempt, decision, target, comment, person, channel, outcome,
                   decided_at FROM gate_decisions WHERE run_id = $1 ORDER BY id",
            )
            .bind(run_id)
            .fetch_all(pool)
            .await?
        }))
    }
}
