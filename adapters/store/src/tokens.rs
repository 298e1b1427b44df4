//! API tokens, kept only as hashes.

use chrono::Utc;
use uuid::Uuid;

use crate::store::with_pool;
use crate::{Store, StoreError};

impl Store {
    /// Stores a token's hash under a name.
    pub async fn create_token(&self, name: &str, hash: &str) -> Result<Uuid, StoreError> {
        let id = Uuid::now_v7();
        with_pool!(self, pool => {
            sqlx::query("INSERT INTO api_tokens (id, name, hash, created_at) VALUES ($1, $2, $3, $4)")
                .bind(id)
                .bind(name)
                .bind(hash)
                .bind(Utc::now())
                .execute(pool)
                .await?;
        });
        Ok(id)
    }

    /// The name of the token with this hash, if it exists.
    pub async fn token_name(&self, hash: &str) -> Result<Option<String>, StoreError> {
        let row: Option<(String,)> = with_pool!(self, pool => {
            sqlx::query_as("SELECT name FROM api_tokens WHERE hash = $1")
                .bind(hash)
                .fetch_optional(pool)
                .await?
        });
        Ok(row.map(|(name,)| name))
    }
}
