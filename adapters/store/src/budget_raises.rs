//! Budgets a person raised for one run: an agent node with `on_budget: ask` that reached a
//! budget asked, someone approved, and the run's later attempts may spend that budget's
//! amount once more for each raise.

use std::collections::BTreeMap;

use uuid::Uuid;

use crate::error::StoreError;
use crate::store::{Store, with_pool};
use crate::tx::{Tx, with_tx};

/// One approved ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetRaise<'a> {
    pub run_id: Uuid,
    pub node: &'a str,
    /// The attempt that reached the budget: one raise per ask.
    pub attempt: u32,
    /// The budget as the refusal named it ("project api").
    pub budget: &'a str,
    /// Who approved it.
    pub raised_by: &'a [String],
    pub raised_ms: i64,
}

impl Tx {
    /// Records a raise, in the transaction that applies the approval; a second record of
    /// the same ask changes nothing.
    pub async fn raise_budget(&mut self, raise: &BudgetRaise<'_>) -> Result<(), StoreError> {
        let attempt = i32::try_from(raise.attempt).unwrap_or(i32::MAX);
        let by = raise.raised_by.join(",");
        with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO budget_raises (run_id, node, attempt, budget, raised_by, raised_ms)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (run_id, node, attempt) DO NOTHING",
            )
            .bind(raise.run_id)
            .bind(raise.node)
            .bind(attempt)
            .bind(raise.budget)
            .bind(&by)
            .bind(raise.raised_ms)
            .execute(conn)
            .await?;
        });
        Ok(())
    }
}

impl Store {
    /// How many times each budget was raised for `run`, by the budget's name.
    pub async fn budget_raises(&self, run: Uuid) -> Result<BTreeMap<String, u32>, StoreError> {
        let rows: Vec<(String, i64)> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT budget, COUNT(*) FROM budget_raises WHERE run_id = $1 GROUP BY budget",
            )
            .bind(run)
            .fetch_all(pool)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|(budget, n)| (budget, u32::try_from(n).unwrap_or(u32::MAX)))
            .collect())
    }
}
