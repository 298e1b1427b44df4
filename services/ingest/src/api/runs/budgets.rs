//! The budgets a run's model requests counted against, as runs show them: each scope's
//! spend from the ledger beside its limit.

use gatehouse_store::{RunRow, SpendRow, Store, StoreError};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// The most attempt budgets listed for one run.
const ATTEMPTS_SHOWN: u32 = 200;

/// One budget: what was spent of it and its limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BudgetView {
    /// Whose budget: "role coder", "SOP ship", "project api".
    pub label: String,
    /// Over what: "for this attempt", "for this run", "today".
    pub period: String,
    /// An attempt's budget: its node.
    pub node: Option<String>,
    /// An attempt's budget: its number.
    pub attempt: Option<i32>,
    /// A project's daily budget: the UTC day, `YYYY-MM-DD`.
    pub day: Option<String>,
    /// Tokens of every kind spent.
    pub tokens: u64,
    /// USD spent, from `[pricing]`.
    pub usd: f64,
    /// Model requests charged.
    pub requests: u64,
    /// The limit in tokens, if there is one.
    pub limit_tokens: Option<u64>,
    /// The limit in USD, if there is one.
    pub limit_usd: Option<f64>,
}

fn usd(micros: u64) -> f64 {
    micros as f64 / 1_000_000.0
}

impl BudgetView {
    fn of(row: SpendRow, run: Uuid) -> Self {
        let (node, attempt) = row.attempt_of(run).unzip();
        let day = row.day().map(str::to_owned);
        Self {
            label: row.label,
            period: row.period,
            node,
            attempt,
            day,
            tokens: row.tokens,
            usd: usd(row.usd_micros),
            requests: row.requests,
            limit_tokens: row.limit_tokens,
            limit_usd: row.limit_usd_micros.map(usd),
        }
    }
}

/// The run's budgets: its attempts', its own, and its project's on the days it ran
/// (`default` for a run on no project).
pub(crate) async fn of_run(store: &Store, run: &RunRow) -> Result<Vec<BudgetView>, StoreError> {
    Ok(store
        .run_spend(run, ATTEMPTS_SHOWN)
        .await?
        .into_iter()
        .map(|row| BudgetView::of(row, run.id))
        .collect())
}
