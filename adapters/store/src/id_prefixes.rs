//! Finding what an id prefix names: the rows whose id lies in a range, for the one
//! resolver of ids people type (ingest's `ids.rs`).
//!
//! A prefix of hex digits names the ids from the prefix padded with `0`s to the prefix
//! padded with `f`s. Both databases compare ids byte by byte (Postgres's `uuid`, SQLite's
//! 16-byte `BLOB`), so `id >= low AND id <= high` is a range scan of the primary key on
//! both; a `LIKE` on a text form would read every row (and SQLite stores no text form).

use uuid::Uuid;

use crate::error::StoreError;
use crate::hidden::hidden_clause;
use crate::store::{Store, with_pool};

/// The tables whose ids people type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    /// `runs`, described by SOP and status.
    Run,
    /// `requirements`, described by title.
    Requirement,
    /// `conversations`, described by project and activity.
    Conversation,
    /// `questions`, described by kind and status.
    Question,
}

impl IdKind {
    /// The table and the text that tells a candidate apart to a person.
    fn table(self) -> (&'static str, &'static str) {
        match self {
            IdKind::Run => ("runs", "sop || ' · ' || status"),
            IdKind::Requirement => ("requirements", "title"),
            IdKind::Conversation => ("conversations", "project || ' · ' || activity"),
            IdKind::Question => ("questions", "kind || ' · ' || status"),
        }
    }
}

/// A row an id prefix matched.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct IdCandidate {
    /// Its id.
    pub id: Uuid,
    /// What it is, for someone choosing among candidates: a run's SOP and status, a
    /// requirement's title.
    pub what: String,
}

impl Store {
    /// The rows of `kind` whose id is between `low` and `high` (both included), lowest
    /// first, at most `limit`, leaving out those of the `hidden` projects: a prefix never
    /// matches, nor reveals, what its caller may not read.
    pub async fn ids_between(
        &self,
        kind: IdKind,
        low: Uuid,
        high: Uuid,
        hidden: &[String],
        limit: i64,
    ) -> Result<Vec<IdCandidate>, StoreError> {
        let (table, what) = kind.table();
        let sql = format!(
            "SELECT id, {what} AS what FROM {table} WHERE id >= $1 AND id <= $2{}
             ORDER BY id LIMIT $3",
            hidden_clause("project", 4, hidden)
        );
        Ok(with_pool!(self, pool => {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(low)
                .bind(high)
                .bind(limit);
            for project in hidden {
                query = query.bind(project);
            }
            query.fetch_all(pool).await?
        }))
    }
}
