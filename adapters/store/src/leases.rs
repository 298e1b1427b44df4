//! Leases: work that one replica at a time may do, such as posting chat messages and
//! comments, where two posters racing on one message could both create it.

use crate::clock::{duration_ms, now_ms};
use crate::error::StoreError;
use crate::store::{Store, with_writer};

impl Store {
    /// Takes or renews the lease `name` for `holder` until `ttl` from now; `false` while
    /// another holder's lease has not run out. A holder that stops renewing loses it when
    /// its lease runs out, so a crashed replica's work passes to another.
    pub async fn hold_lease(
        &self,
        name: &str,
        holder: &str,
        ttl: std::time::Duration,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        let until = now.saturating_add(duration_ms(ttl));
        let taken = with_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO leases (name, holder, until_ms) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until_ms = excluded.until_ms
                 WHERE leases.holder = excluded.holder OR leases.until_ms < $4",
            )
            .bind(name)
            .bind(holder)
            .bind(until)
            .bind(now)
            .execute(pool)
            .await?
            .rows_affected()
        });
        Ok(taken == 1)
    }

    /// Gives the lease up at once (a clean shutdown), so another replica need not wait.
    pub async fn release_lease(&self, name: &str, holder: &str) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query("DELETE FROM leases WHERE name = $1 AND holder = $2")
                .bind(name)
                .bind(holder)
                .execute(pool)
                .await?;
        });
        Ok(())
    }
}
