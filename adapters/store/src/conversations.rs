//! Conversations: one per chat thread, its state kept as runs' are — JSON written
//! compare-and-set on a revision, read for update inside the transaction that changes it —
//! and a ledger of the effects carried out, so a replayed state posts nothing twice.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::store::with_pool;
use crate::tx::{Inner, with_tx};
use crate::{Store, StoreError, Tx};

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ConversationRow {
    pub id: Uuid,
    /// `slack:C0123:1700000000.000100`: the thread, unique.
    pub thread_key: String,
    pub requirement_id: Option<Uuid>,
    pub project: Option<String>,
    /// The events crate's `RunWorkspace` as JSON.
    pub workspace: Option<String>,
    /// gatehouse-conversation's `Conversation` as JSON.
    pub state: String,
    /// Compare-and-set guard.
    pub revision: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, thread_key, requirement_id, project, workspace, state, revision, \
     created_at, updated_at";

impl Tx {
    /// Starts a thread's conversation; `false` when the thread has one already.
    pub async fn insert_conversation(&mut self, c: &ConversationRow) -> Result<bool, StoreError> {
        let inserted = with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO conversations (id, thread_key, requirement_id, project, workspace,
                   state, revision, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (thread_key) DO NOTHING",
            )
            .bind(c.id)
            .bind(&c.thread_key)
            .bind(c.requirement_id)
            .bind(&c.project)
            .bind(&c.workspace)
            .bind(&c.state)
            .bind(c.revision)
            .bind(c.created_at)
            .bind(c.updated_at)
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(inserted == 1)
    }

    /// A thread's conversation, held until the transaction ends, so two messages of one
    /// thread take turns (SQLite's `BEGIN IMMEDIATE` already does).
    pub async fn load_conversation(
        &mut self,
        thread_key: &str,
    ) -> Result<Option<ConversationRow>, StoreError> {
        let lock = match &self.inner {
            Inner::Postgres(_) => " FOR UPDATE",
            Inner::Sqlite(_) => "",
        };
        let sql = format!("SELECT {COLUMNS} FROM conversations WHERE thread_key = $1{lock}");
        Ok(with_tx!(self, conn => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(thread_key)
                .fetch_optional(conn)
                .await?
        }))
    }

    /// Writes a conversation's new state if nobody else did since `read_revision`.
    pub async fn update_conversation(
        &mut self,
        id: Uuid,
        state: &str,
        read_revision: i64,
        new_revision: i64,
    ) -> Result<bool, StoreError> {
        let updated = with_tx!(self, conn => {
            sqlx::query(
                "UPDATE conversations SET state = $1, revision = $2, updated_at = $3
                 WHERE id = $4 AND revision = $5",
            )
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

    /// Claims an effect of a conversation for this transaction: `false` when it was carried
    /// out already, and must not be again.
    pub async fn claim_conversation_effect(
        &mut self,
        conversation: Uuid,
        key: &str,
    ) -> Result<bool, StoreError> {
        let claimed = with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO conversation_effects (conversation_id, effect_key, done_at)
                 VALUES ($1, $2, $3) ON CONFLICT (conversation_id, effect_key) DO NOTHING",
            )
            .bind(conversation)
            .bind(key)
            .bind(Utc::now())
            .execute(conn)
            .await?
            .rows_affected()
        });
        Ok(claimed == 1)
    }
}

impl Store {
    pub async fn conversation(&self, id: Uuid) -> Result<Option<ConversationRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM conversations WHERE id = $1");
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(pool).await?
        }))
    }

    /// The most recently active conversations first.
    pub async fn conversations(&self, limit: i64) -> Result<Vec<ConversationRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM conversations ORDER BY updated_at DESC, id DESC LIMIT $1"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(limit).fetch_all(pool).await?
        }))
    }
}
