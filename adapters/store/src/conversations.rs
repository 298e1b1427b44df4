//! Conversations: one per chat thread the assistant works in.
//!
//! Two writers, each with its own columns: ingest opens the conversation and numbers what
//! is said in its thread (`last_seq`); the scheduler alone writes its state (the
//! conversation crate's JSON, compare-and-set on `revision`) and its idle timer.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::StoreError;
use crate::hidden::hidden_clause;
use crate::store::{Store, with_pool};
use crate::text::text_enum;
use crate::tx::{Inner, Tx, with_tx};

text_enum! {
    /// What a conversation is doing, kept beside its state for listings.
    pub enum Activity {
        /// Opened; its first turn has not been taken up yet.
        New = "new",
        /// A turn holds the workspace.
        Working = "working",
        /// An SOP run holds the workspace.
        Waiting = "waiting",
        /// The workspace is kept; nobody holds it.
        Idle = "idle",
        /// The workspace was checkpointed and its disk freed; the next message restores it.
        Released = "released",
    }
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ConversationRow {
    pub id: Uuid,
    pub requirement_id: Uuid,
    pub project: String,
    /// `slack` or `discord`.
    pub platform: String,
    pub channel: String,
    /// Slack's thread ts, or the Discord message replied to.
    pub thread: String,
    /// The person whose message opened it.
    pub started_by: String,
    /// The events crate's `RunWorkspace` as JSON, frozen when the conversation opened.
    pub workspace: String,
    /// gatehouse-conversation's state as JSON.
    pub state: String,
    pub revision: i64,
    pub activity: Activity,
    /// The number given to the latest thing said in the thread.
    pub last_seq: i64,
    /// The idle timer armed last, and when it is due (none when disarmed).
    pub idle_timer: i64,
    pub idle_due_ms: Option<i64>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, requirement_id, project, platform, channel, thread, started_by, \
     workspace, state, revision, activity, last_seq, idle_timer, idle_due_ms, created_at, updated_at";

/// A conversation to open for a thread.
#[derive(Debug, Clone, Copy)]
pub struct NewConversation<'a> {
    pub id: Uuid,
    pub requirement_id: Uuid,
    pub project: &'a str,
    pub platform: &'a str,
    pub channel: &'a str,
    pub thread: &'a str,
    pub started_by: &'a str,
    pub workspace: &'a str,
    /// The state before anything was said.
    pub state: &'a str,
}

/// A conversation's new state, written if nobody else wrote since `read_revision`.
#[derive(Debug, Clone, Copy)]
pub struct ConversationUpdate<'a> {
    pub state: &'a str,
    pub activity: Activity,
    pub read_revision: i64,
    pub new_revision: i64,
    /// The idle timer to arm (`timer`, due at ms), or `None` to leave it as it is.
    pub arm_idle: Option<(i64, i64)>,
    /// Disarm the idle timer (it fired, or the workspace is held again).
    pub disarm_idle: bool,
}

impl Tx {
    /// The thread's conversation, opened as `new` when the thread has none. `true` when it
    /// was opened now.
    pub async fn open_conversation(
        &mut self,
        new: &NewConversation<'_>,
    ) -> Result<(ConversationRow, bool), StoreError> {
        let now = Utc::now();
        let inserted = with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO conversations (id, requirement_id, project, platform, channel, thread,
                   started_by, workspace, state, revision, activity, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0, $10, $11, $11)
                 ON CONFLICT (platform, channel, thread) DO NOTHING",
            )
            .bind(new.id)
            .bind(new.requirement_id)
            .bind(new.project)
            .bind(new.platform)
            .bind(new.channel)
            .bind(new.thread)
            .bind(new.started_by)
            .bind(new.workspace)
            .bind(new.state)
            .bind(Activity::New)
            .bind(now)
            .execute(conn)
            .await?
            .rows_affected()
        });
        let row = self
            .conversation_by_thread(new.platform, new.channel, new.thread)
            .await?
            .ok_or_else(|| {
                StoreError::Corrupt("a conversation opened in this transaction is gone".into())
            })?;
        Ok((row, inserted == 1))
    }

    /// The conversation of a thread, if it has one.
    pub async fn conversation_by_thread(
        &mut self,
        platform: &str,
        channel: &str,
        thread: &str,
    ) -> Result<Option<ConversationRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM conversations WHERE platform = $1 AND channel = $2 AND thread = $3"
        );
        Ok(with_tx!(self, conn => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(platform)
                .bind(channel)
                .bind(thread)
                .fetch_optional(conn)
                .await?
        }))
    }

    /// The conversation that posted `message_id` (a reply, an acknowledgement, a progress
    /// message), so a reply to it continues that conversation: on Discord a reply chain is
    /// the thread.
    pub async fn conversation_of_posted(
        &mut self,
        platform: &str,
        message_id: &str,
    ) -> Result<Option<ConversationRow>, StoreError> {
        let key: Option<String> = with_tx!(self, conn => {
            sqlx::query_scalar(
                "SELECT key FROM chat_messages
                 WHERE platform = $1 AND message_id = $2 AND key LIKE 'conversation:%'",
            )
            .bind(platform)
            .bind(message_id)
            .fetch_optional(conn)
            .await?
        });
        let id = key.as_deref().and_then(|key| {
            let id = key.strip_prefix("conversation:")?.split(':').next()?;
            Uuid::parse_str(id).ok()
        });
        match id {
            Some(id) => self.load_conversation(id).await,
            None => Ok(None),
        }
    }

    /// Numbers the next thing said in the conversation's thread (1, 2, …).
    pub async fn number_conversation_input(&mut self, id: Uuid) -> Result<u64, StoreError> {
        let seq: i64 = with_tx!(self, conn => {
            sqlx::query_scalar(
                "UPDATE conversations SET last_seq = last_seq + 1 WHERE id = $1 RETURNING last_seq",
            )
            .bind(id)
            .fetch_one(conn)
            .await?
        });
        Ok(u64::try_from(seq).unwrap_or(0))
    }

    /// A conversation, locked until the transaction ends (Postgres; SQLite has one writer).
    pub async fn load_conversation(
        &mut self,
        id: Uuid,
    ) -> Result<Option<ConversationRow>, StoreError> {
        let lock = match self.inner {
            Inner::Postgres(_) => " FOR UPDATE",
            Inner::Sqlite(_) => "",
        };
        let sql = format!("SELECT {COLUMNS} FROM conversations WHERE id = $1{lock}");
        Ok(with_tx!(self, conn => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(id)
                .fetch_optional(conn)
                .await?
        }))
    }

    /// Writes a conversation's new state; `false` if someone else wrote it since it was read.
    pub async fn update_conversation(
        &mut self,
        id: Uuid,
        update: &ConversationUpdate<'_>,
    ) -> Result<bool, StoreError> {
        let (arm, timer, due) = match update.arm_idle {
            Some((timer, due)) => (true, timer, Some(due)),
            None => (false, 0, None),
        };
        let updated = with_tx!(self, conn => {
            sqlx::query(
                "UPDATE conversations SET state = $1, activity = $2, revision = $3, updated_at = $4,
                   idle_timer = CASE WHEN $5 THEN $6 ELSE idle_timer END,
                   idle_due_ms = CASE WHEN $5 THEN $7 WHEN $8 THEN NULL ELSE idle_due_ms END
                 WHERE id = $9 AND revision = $10",
            )
            .bind(update.state)
            .bind(update.activity)
            .bind(update.new_revision)
            .bind(Utc::now())
            .bind(arm)
            .bind(timer)
            .bind(due)
            .bind(update.disarm_idle)
            .bind(id)
            .bind(update.read_revision)
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(updated == 1)
    }
}

impl Tx {
    /// Disarms the idle timer `timer`, unless another has been armed since.
    pub async fn disarm_conversation_idle(
        &mut self,
        id: Uuid,
        timer: i64,
    ) -> Result<(), StoreError> {
        with_tx!(self, conn => {
            sqlx::query(
                "UPDATE conversations SET idle_due_ms = NULL WHERE id = $1 AND idle_timer = $2",
            )
            .bind(id)
            .bind(timer)
            .execute(conn)
            .await?;
        });
        Ok(())
    }
}

impl Tx {
    /// Records that `run` was started from the conversation's thread, on its workspace.
    pub async fn record_conversation_run(
        &mut self,
        run_id: Uuid,
        conversation_id: Uuid,
    ) -> Result<(), StoreError> {
        with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO conversation_runs (run_id, conversation_id, created_at)
                 VALUES ($1, $2, $3) ON CONFLICT (run_id) DO NOTHING",
            )
            .bind(run_id)
            .bind(conversation_id)
            .bind(Utc::now())
            .execute(conn)
            .await?;
        });
        Ok(())
    }
}

impl Store {
    /// The conversation a run was started from, if it was: its workspace is where the run
    /// starts.
    pub async fn conversation_of_run(&self, run_id: Uuid) -> Result<Option<Uuid>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_scalar("SELECT conversation_id FROM conversation_runs WHERE run_id = $1")
                .bind(run_id)
                .fetch_optional(pool)
                .await?
        }))
    }

    pub async fn conversation(&self, id: Uuid) -> Result<Option<ConversationRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM conversations WHERE id = $1");
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str())).bind(id).fetch_optional(pool).await?
        }))
    }

    /// The newest conversations first, at most `limit`; only those of `project` when
    /// given, and none of the `hidden` projects.
    pub async fn conversations(
        &self,
        project: Option<&str>,
        hidden: &[String],
        limit: i64,
    ) -> Result<Vec<ConversationRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM conversations WHERE ($1 IS NULL OR project = $1){}
             ORDER BY created_at DESC, id DESC LIMIT $2",
            hidden_clause("project", 3, hidden)
        );
        Ok(with_pool!(self, pool => {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(project)
                .bind(limit);
            for project in hidden {
                query = query.bind(project);
            }
            query.fetch_all(pool).await?
        }))
    }

    /// The newest conversations `person` started first, at most `limit`, none of the
    /// `hidden` projects.
    pub async fn conversations_started_by(
        &self,
        person: &str,
        hidden: &[String],
        limit: i64,
    ) -> Result<Vec<ConversationRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM conversations WHERE started_by = $1{}
             ORDER BY created_at DESC, id DESC LIMIT $2",
            hidden_clause("project", 3, hidden)
        );
        Ok(with_pool!(self, pool => {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(person)
                .bind(limit);
            for project in hidden {
                query = query.bind(project);
            }
            query.fetch_all(pool).await?
        }))
    }

    pub async fn conversations_of_requirement(
        &self,
        requirement_id: Uuid,
    ) -> Result<Vec<ConversationRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM conversations WHERE requirement_id = $1 ORDER BY created_at, id"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(requirement_id)
                .fetch_all(pool)
                .await?
        }))
    }

    /// Conversations whose idle timer is due at `now_ms`: `(id, timer)`.
    pub async fn due_conversation_idles(
        &self,
        now_ms: i64,
    ) -> Result<Vec<(Uuid, i64)>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT id, idle_timer FROM conversations
                 WHERE idle_due_ms IS NOT NULL AND idle_due_ms <= $1 ORDER BY idle_due_ms LIMIT 100",
            )
            .bind(now_ms)
            .fetch_all(pool)
            .await?
        }))
    }

    /// When the next idle timer is due, in ms since the epoch.
    pub async fn next_conversation_idle_ms(&self) -> Result<Option<i64>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_scalar("SELECT MIN(idle_due_ms) FROM conversations")
                .fetch_one(pool)
                .await?
        }))
    }
}
