//! The console's sign-in: one-time login links, browser sessions and GitHub OAuth states.
//!
//! Only SHA-256 hashes of the secrets are stored. Each secret is claimed with a single
//! conditional `UPDATE` (`used_at IS NULL`), so of two browsers presenting the same link
//! (or the same OAuth `state`) exactly one gets in. Expiry is judged by the caller from the
//! row, so the refusal can say which it was: unknown, used or expired.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::comments::hex_sha256;
use crate::error::StoreError;
use crate::store::{Store, with_pool, with_writer};

/// A login link, without its secret.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LoginLinkRow {
    /// The person it signs in.
    pub person: String,
    /// Who asked for it (the person, or an administrator for them).
    pub created_by: String,
    /// Comma-separated scopes the session it starts gets.
    pub scopes: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// When it was used; a used link signs nobody in again.
    pub used_at: Option<DateTime<Utc>>,
}

/// A browser's session, without its secret.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SessionRow {
    pub id: Uuid,
    /// The person it acts for.
    pub person: String,
    /// `link` or `github`.
    pub via: String,
    /// Comma-separated scopes (`read,run,decide`).
    pub scopes: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// When it was signed out; an ended session is refused.
    pub ended_at: Option<DateTime<Utc>>,
}

/// What became of a claim on a one-time secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OneTime<T> {
    /// This caller used it.
    Claimed(T),
    /// It was used before (by this caller or another).
    Used(T),
    /// Nothing has this hash.
    Unknown,
}

const LINK_COLUMNS: &str = "person, created_by, scopes, created_at, expires_at, used_at";
const SESSION_COLUMNS: &str = "id, person, via, scopes, created_at, expires_at, ended_at";

impl Store {
    /// Mints a login link for `person`: a new random secret, of which only the SHA-256 hash
    /// is stored; the secret is returned to be shown once. The one way links are made, for
    /// the API (`gatehouse login`) and for the notifier's direct messages (`@gatehouse
    /// login`) alike.
    pub async fn mint_login_link(
        &self,
        person: &str,
        created_by: &str,
        scopes: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<String, StoreError> {
        let secret = new_secret();
        self.create_login_link(&hex_sha256(&secret), person, created_by, scopes, expires_at)
            .await?;
        Ok(secret)
    }

    /// Stores a login link whose secret hashes to `hash`.
    pub async fn create_login_link(
        &self,
        hash: &str,
        person: &str,
        created_by: &str,
        scopes: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO login_links (hash, person, created_by, scopes, created_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(hash)
            .bind(person)
            .bind(created_by)
            .bind(scopes)
            .bind(Utc::now())
            .bind(expires_at)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// The login link with this hash, used or not.
    pub async fn login_link(&self, hash: &str) -> Result<Option<LoginLinkRow>, StoreError> {
        let sql = format!("SELECT {LINK_COLUMNS} FROM login_links WHERE hash = $1");
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(hash).fetch_optional(pool).await?
        }))
    }

    /// Marks the link used, once: [`OneTime::Claimed`] for exactly one caller.
    pub async fn use_login_link(&self, hash: &str) -> Result<OneTime<LoginLinkRow>, StoreError> {
        let Some(row) = self.login_link(hash).await? else {
            return Ok(OneTime::Unknown);
        };
        self.claim_once(
            "UPDATE login_links SET used_at = $2 WHERE hash = $1 AND used_at IS NULL",
            hash,
            row,
        )
        .await
    }

    /// Starts a session for `person`, whose cookie secret hashes to `hash`.
    pub async fn create_session(
        &self,
        hash: &str,
        person: &str,
        via: &str,
        scopes: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<SessionRow, StoreError> {
        let row = SessionRow {
            id: Uuid::now_v7(),
            person: person.to_owned(),
            via: via.to_owned(),
            scopes: scopes.to_owned(),
            created_at: Utc::now(),
            expires_at,
            ended_at: None,
        };
        with_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO console_sessions (id, hash, person, via, scopes, created_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(row.id)
            .bind(hash)
            .bind(&row.person)
            .bind(&row.via)
            .bind(&row.scopes)
            .bind(row.created_at)
            .bind(row.expires_at)
            .execute(pool)
            .await?;
        });
        Ok(row)
    }

    /// The session whose secret hashes to `hash`, ended or expired ones included.
    pub async fn session_by_hash(&self, hash: &str) -> Result<Option<SessionRow>, StoreError> {
        let sql = format!("SELECT {SESSION_COLUMNS} FROM console_sessions WHERE hash = $1");
        Ok(with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(hash).fetch_optional(pool).await?
        }))
    }

    /// Ends a session (signing out); `false` when it had already ended.
    pub async fn end_session(&self, id: Uuid) -> Result<bool, StoreError> {
        let done = with_writer!(self, pool => {
            sqlx::query("UPDATE console_sessions SET ended_at = $2 WHERE id = $1 AND ended_at IS NULL")
                .bind(id)
                .bind(Utc::now())
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(done == 1)
    }

    /// Ends every session of `person` (when the person is removed); how many were open.
    pub async fn end_sessions_of(&self, person: &str) -> Result<u64, StoreError> {
        Ok(with_writer!(self, pool => {
            sqlx::query("UPDATE console_sessions SET ended_at = $2 WHERE person = $1 AND ended_at IS NULL")
                .bind(person)
                .bind(Utc::now())
                .execute(pool)
                .await?
                .rows_affected()
        }))
    }

    /// Stores the hash of an OAuth `state` handed to GitHub, with the page to return to.
    pub async fn create_oauth_state(
        &self,
        hash: &str,
        next: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO oauth_states (hash, next, created_at, expires_at) VALUES ($1, $2, $3, $4)",
            )
                .bind(hash)
                .bind(next)
                .bind(Utc::now())
                .bind(expires_at)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// Accepts an OAuth `state` once; the page to return to and when the state expires.
    pub async fn use_oauth_state(
        &self,
        hash: &str,
    ) -> Result<OneTime<(String, DateTime<Utc>)>, StoreError> {
        let found: Option<(String, DateTime<Utc>)> = with_pool!(self, pool => {
            sqlx::query_as("SELECT next, expires_at FROM oauth_states WHERE hash = $1")
                .bind(hash)
                .fetch_optional(pool)
                .await?
        });
        let Some(found) = found else {
            return Ok(OneTime::Unknown);
        };
        self.claim_once(
            "UPDATE oauth_states SET used_at = $2 WHERE hash = $1 AND used_at IS NULL",
            hash,
            found,
        )
        .await
    }

    /// Runs `claim` (an `UPDATE ... WHERE hash = $1 AND used_at IS NULL` setting `used_at`
    /// to `$2`) for the secret found as `found`: claimed if this call changed the row.
    async fn claim_once<T>(
        &self,
        claim: &'static str,
        hash: &str,
        found: T,
    ) -> Result<OneTime<T>, StoreError> {
        let claimed = with_pool!(self, pool => {
            sqlx::query(claim)
                .bind(hash)
                .bind(Utc::now())
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(if claimed == 1 {
            OneTime::Claimed(found)
        } else {
            OneTime::Used(found)
        })
    }
}

/// A new random secret (two v4 UUIDs: 244 random bits, hex), prefixed `gh_` like Gatehouse's
/// tokens so that a secret scanner recognises it.
fn new_secret() -> String {
    format!("gh_{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple())
}
