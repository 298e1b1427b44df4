//! API tokens, kept only as hashes. A token acts for one person, with scopes; revoking
//! keeps the row (the audit may name it) and stops it working.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::StoreError;
use crate::store::{Store, with_pool, with_writer};

/// A stored token, without its secret.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TokenRow {
    pub id: Uuid,
    /// Unique name, chosen by whoever created it (default: the person's id).
    pub name: String,
    /// The person it acts for.
    pub person: String,
    /// Who created it.
    pub created_by: String,
    /// Comma-separated scopes (`read,run,decide,admin`).
    pub scopes: String,
    pub created_at: DateTime<Utc>,
    /// After this it is refused.
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was revoked; a revoked token is refused.
    pub revoked_at: Option<DateTime<Utc>>,
    /// Made for an agent: the API refuses it gate decisions whatever its scopes.
    pub for_agent: bool,
}

/// A token about to be stored.
#[derive(Debug, Clone)]
pub struct NewToken<'a> {
    /// Unique name.
    pub name: &'a str,
    /// The person it acts for.
    pub person: &'a str,
    /// Who creates it.
    pub created_by: &'a str,
    /// Comma-separated scopes.
    pub scopes: &'a str,
    /// Optional expiry.
    pub expires_at: Option<DateTime<Utc>>,
    /// SHA-256 of the secret, hex.
    pub hash: &'a str,
    /// Made for an agent (never decides gates).
    pub for_agent: bool,
}

const COLUMNS: &str =
    "id, name, person, created_by, scopes, created_at, expires_at, revoked_at, for_agent";

impl Store {
    /// Stores a token; `None` when its name is taken.
    pub async fn create_token(&self, new: &NewToken<'_>) -> Result<Option<TokenRow>, StoreError> {
        let row = TokenRow {
            id: Uuid::now_v7(),
            name: new.name.to_owned(),
            person: new.person.to_owned(),
            created_by: new.created_by.to_owned(),
            scopes: new.scopes.to_owned(),
            created_at: Utc::now(),
            expires_at: new.expires_at,
            revoked_at: None,
            for_agent: new.for_agent,
        };
        let written = with_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO api_tokens (id, name, hash, person, created_by, scopes, created_at, expires_at, for_agent)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
            )
            .bind(row.id)
            .bind(&row.name)
            .bind(new.hash)
            .bind(&row.person)
            .bind(&row.created_by)
            .bind(&row.scopes)
            .bind(row.created_at)
            .bind(row.expires_at)
            .bind(row.for_agent)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok((written == 1).then_some(row))
    }

    /// The token with this hash, revoked or expired ones included (the caller says why it
    /// refuses them).
    pub async fn token_by_hash(&self, hash: &str) -> Result<Option<TokenRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM api_tokens WHERE hash = $1");
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(hash).fetch_optional(pool).await?
        }))
    }

    pub async fn token(&self, name: &str) -> Result<Option<TokenRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM api_tokens WHERE name = $1");
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(name).fetch_optional(pool).await?
        }))
    }

    /// Tokens in use (neither revoked nor expired), oldest first; only `person`'s when given.
    pub async fn tokens(&self, person: Option<&str>) -> Result<Vec<TokenRow>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM api_tokens
             WHERE revoked_at IS NULL AND ($1 IS NULL OR person = $1) ORDER BY created_at, name"
        );
        let rows: Vec<TokenRow> = with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(person).fetch_all(pool).await?
        });
        let now = Utc::now();
        Ok(rows
            .into_iter()
            .filter(|t| t.expires_at.is_none_or(|at| at > now))
            .collect())
    }

    /// Revokes a token by name; `false` when there is no such token or it was revoked.
    pub async fn revoke_token(&self, name: &str) -> Result<bool, StoreError> {
        let done = with_writer!(self, pool => {
            sqlx::query("UPDATE api_tokens SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL")
                .bind(name)
                .bind(Utc::now())
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(done == 1)
    }

    /// Revokes every token acting for `person` (when the person is removed).
    pub async fn revoke_tokens_of(&self, person: &str) -> Result<u64, StoreError> {
        Ok(with_writer!(self, pool => {
            sqlx::query("UPDATE api_tokens SET revoked_at = $2 WHERE person = $1 AND revoked_at IS NULL")
                .bind(person)
                .bind(Utc::now())
                .execute(pool)
                .await?
                .rows_affected()
        }))
    }
}
