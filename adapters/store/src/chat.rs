//! Messages Gatehouse keeps in Slack and Discord: what each should show, and whether the
//! platform shows it yet. Writers set the wanted body in their transaction; the notifier
//! renders and posts it.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::comments::hex_sha256;
use crate::error::StoreError;
use crate::store::{Store, with_pool, with_writer};
use crate::tx::{Tx, with_tx};

/// A chat message to post or bring up to date.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ChatMessageRow {
    /// What the message is: `card:…`, `progress:…`, `reply:…`, `ephemeral:…`.
    pub key: String,
    /// `slack` or `discord`.
    pub platform: String,
    /// Channel id.
    pub channel: String,
    /// Slack thread ts, or the Discord message replied to.
    pub thread: Option<String>,
    /// Ephemeral answers: the Slack user, or the Discord interaction token.
    pub recipient: Option<String>,
    /// The run it is about, so a run's cards can be found and updated.
    pub run_id: Option<Uuid>,
    /// The platform-neutral body (JSON), rendered by the adapter when posted.
    pub body: String,
    /// Hash of `body`, to tell whether it changed while it was being posted.
    pub body_hash: String,
    /// Slack ts or Discord message id, once posted.
    pub message_id: Option<String>,
    /// When posting was first tried: a message may exist from then on even without an id.
    pub first_try_at: Option<DateTime<Utc>>,
    /// Changed since it was last posted.
    pub dirty: bool,
    pub updated_at: DateTime<Utc>,
}

/// Where a wanted chat message goes and what it says.
#[derive(Debug, Clone, Copy)]
pub struct WantChat<'a> {
    /// Stable key: the same key is the same message, edited in place.
    pub key: &'a str,
    /// `slack` or `discord`.
    pub platform: &'a str,
    /// Channel id.
    pub channel: &'a str,
    /// Thread (Slack ts) or message replied to (Discord).
    pub thread: Option<&'a str>,
    /// For ephemeral answers.
    pub recipient: Option<&'a str>,
    /// The run it is about.
    pub run_id: Option<Uuid>,
    /// The platform-neutral body.
    pub body: &'a str,
}

const COLUMNS: &str = "key, platform, channel, thread, recipient, run_id, body, body_hash, \
     message_id, first_try_at, dirty, updated_at";

impl Tx {
    /// Sets what a chat message should show; marks it for posting when that changed.
    pub async fn want_chat_message(&mut self, m: &WantChat<'_>) -> Result<(), StoreError> {
        self.after_commit(Store::wake_chat);
        let hash = hex_sha256(m.body);
        with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO chat_messages (key, platform, channel, thread, recipient, run_id, body,
                   body_hash, dirty, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, TRUE, $9)
                 ON CONFLICT (key) DO UPDATE SET body = excluded.body, body_hash = excluded.body_hash,
                   dirty = CASE WHEN chat_messages.body_hash = excluded.body_hash
                                THEN chat_messages.dirty ELSE TRUE END,
                   updated_at = CASE WHEN chat_messages.body_hash = excluded.body_hash
                                THEN chat_messages.updated_at ELSE excluded.updated_at END",
            )
            .bind(m.key)
            .bind(m.platform)
            .bind(m.channel)
            .bind(m.thread)
            .bind(m.recipient)
            .bind(m.run_id)
            .bind(m.body)
            .bind(&hash)
            .bind(Utc::now())
            .execute(conn)
            .await?;
        });
        Ok(())
    }

    /// The chat messages about a run (its cards and progress), to bring them up to date.
    pub async fn chat_messages_of_run(
        &mut self,
        run_id: Uuid,
    ) -> Result<Vec<ChatMessageRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM chat_messages WHERE run_id = $1 ORDER BY key");
        Ok(with_tx!(self, conn => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str())).bind(run_id).fetch_all(conn).await?
        }))
    }
}

impl Tx {
    /// The chat messages whose key starts with `prefix` (`question:<id>:`: one question's
    /// cards, wherever they were posted). `prefix` must hold no `%` or `_`, which `LIKE`
    /// would read as wildcards; a prefix that does is refused.
    pub async fn chat_messages_keyed(
        &mut self,
        prefix: &str,
    ) -> Result<Vec<ChatMessageRow>, StoreError> {
        if prefix.contains(['%', '_', '\\']) {
            return Err(StoreError::Invalid(format!(
                "`{prefix}` is not a plain key prefix"
            )));
        }
        let pattern = format!("{prefix}%");
        let sql = format!("SELECT {COLUMNS} FROM chat_messages WHERE key LIKE $1 ORDER BY key");
        Ok(with_tx!(self, conn => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str())).bind(&pattern).fetch_all(conn).await?
        }))
    }
}

impl Store {
    /// Chat messages waiting to be posted or updated, oldest change first.
    pub async fn dirty_chat_messages(&self, limit: i64) -> Result<Vec<ChatMessageRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM chat_messages WHERE dirty ORDER BY updated_at, key LIMIT $1"
        );
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str())).bind(limit).fetch_all(pool).await?
        }))
    }

    pub async fn chat_message(&self, key: &str) -> Result<Option<ChatMessageRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM chat_messages WHERE key = $1");
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str())).bind(key).fetch_optional(pool).await?
        }))
    }

    /// Records that posting is about to be tried, once: from now on the message may exist
    /// on the platform before its id is known here.
    pub async fn chat_first_try(&self, key: &str) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query("UPDATE chat_messages SET first_try_at = $1 WHERE key = $2 AND first_try_at IS NULL")
                .bind(Utc::now())
                .bind(key)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// Records that the platform shows `body_hash`'s body under `message_id`; the message
    /// stays dirty when its body changed meanwhile.
    pub async fn chat_posted(
        &self,
        key: &str,
        message_id: &str,
        body_hash: &str,
    ) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query(
                "UPDATE chat_messages SET message_id = $1,
                   dirty = CASE WHEN body_hash = $2 THEN FALSE ELSE dirty END
                 WHERE key = $3",
            )
            .bind(message_id)
            .bind(body_hash)
            .bind(key)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Gives up on a message's current body (the platform refused it for good); a new body
    /// makes it dirty again.
    pub async fn chat_abandoned(&self, key: &str, body_hash: &str) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query("UPDATE chat_messages SET dirty = FALSE WHERE key = $1 AND body_hash = $2")
                .bind(key)
                .bind(body_hash)
                .execute(pool)
                .await?;
        });
        Ok(())
    }
}
