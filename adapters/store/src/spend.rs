//! The budget ledger: what each budget scope (an attempt, a run, a project's UTC day) has
//! spent at the model gateway, shared by every runner and kept across restarts, and the
//! requests admitted and not yet charged ("holds").
//!
//! Admission ([`Store::admit_spend`]) and charging ([`Store::charge_spend`]) each run in
//! one transaction that locks the scopes' rows (Postgres: the upsert's row lock; SQLite:
//! `BEGIN IMMEDIATE`), in scope order, so concurrent runners see one another's holds and
//! charges. A scope admits a request when its spend is under each limit and either no
//! request of it is in flight or what is left covers the largest request seen for every
//! request in flight and the new one: a scope near its limit lets one request through at a
//! time, so concurrent runs overshoot a limit by at most one request.

use uuid::Uuid;

use crate::error::StoreError;
use crate::store::Store;
use crate::tx::{Tx, with_tx};

/// Longest scope key, label or period kept; longer ones are refused, not cut, since two
/// scopes must never be merged by cutting.
pub const MAX_SPEND_TEXT: usize = 600;

/// A limit on one scope, as the runner works it out for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpendLimit {
    /// The scope's key: `attempt:<run>:<node>:<n>`, `run:<run>`, `project:<name>:<day>`.
    pub scope: String,
    /// Who the limit is, as a refusal names it ("project api").
    pub label: String,
    /// Over what it runs, as a refusal says it ("today", "for this attempt").
    pub period: String,
    /// At most this many tokens, if limited in tokens.
    pub tokens: Option<u64>,
    /// At most this many micro-dollars, if limited in dollars.
    pub usd_micros: Option<u64>,
}

/// Whose spend a ledger row counts. Its key is made here for the runner that charges it and
/// read back here ([`SpendRow::attempt_of`], [`SpendRow::day`]) for those that show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpendScope<'a> {
    /// One attempt of a run's node (a role's budget).
    Attempt {
        run: Uuid,
        node: &'a str,
        attempt: u32,
    },
    /// A whole run (its SOP's, project's or schedule's budget per run).
    Run(Uuid),
    /// A project's UTC day, `YYYY-MM-DD` (`default` for work on no project).
    ProjectDay { project: &'a str, day: &'a str },
}

impl SpendScope<'_> {
    /// The ledger's key: `attempt:<run>:<node>:<n>`, `run:<run>`, `project:<name>:<day>`.
    pub fn key(&self) -> String {
        match self {
            Self::Attempt { run, node, attempt } => format!("attempt:{run}:{node}:{attempt}"),
            Self::Run(run) => format!("run:{run}"),
            Self::ProjectDay { project, day } => format!("project:{project}:{day}"),
        }
    }
}

/// One scope's spend as the ledger holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpendRow {
    /// The scope's key, as in [`SpendLimit::scope`].
    pub scope: String,
    /// Who the limit is, as last admitted against ("project api").
    pub label: String,
    /// Over what it runs ("today").
    pub period: String,
    /// Tokens of every kind charged so far.
    pub tokens: u64,
    /// Micro-dollars charged so far.
    pub usd_micros: u64,
    /// Requests charged.
    pub requests: u64,
    /// The largest request charged, in tokens: admission keeps room for one of these per
    /// request in flight.
    pub largest_tokens: u64,
    /// The largest request charged, in micro-dollars.
    pub largest_usd_micros: u64,
    /// The token limit last admitted against, for showing.
    pub limit_tokens: Option<u64>,
    /// The dollar limit last admitted against, in micro-dollars, for showing.
    pub limit_usd_micros: Option<u64>,
    /// Epoch milliseconds of the last change.
    pub updated_ms: i64,
}

impl SpendRow {
    /// For the budget of one of `run`'s attempts: its node and number.
    pub fn attempt_of(&self, run: Uuid) -> Option<(String, i32)> {
        let rest = self.scope.strip_prefix(&format!("attempt:{run}:"))?;
        let (node, attempt) = rest.rsplit_once(':')?;
        Some((node.to_owned(), attempt.parse().ok()?))
    }

    /// For a project's daily budget: the day, `YYYY-MM-DD`.
    pub fn day(&self) -> Option<&str> {
        self.scope
            .strip_prefix("project:")
            .and_then(|rest| rest.rsplit_once(':'))
            .map(|(_, day)| day)
    }
}

/// Whether a request may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpendAdmission {
    /// It may: a hold was taken on every scope, given back by [`Store::charge_spend`].
    Admitted,
    /// A scope has reached a limit: the scope as it stands.
    Reached(SpendRow),
    /// A scope is near its limit with another request in flight: ask again once that one
    /// has been charged (or its hold has expired).
    Busy(SpendRow),
}

#[derive(sqlx::FromRow)]
struct Stored {
    scope: String,
    label: String,
    period: String,
    tokens: i64,
    usd_micros: i64,
    requests: i64,
    largest_tokens: i64,
    largest_usd_micros: i64,
    limit_tokens: Option<i64>,
    limit_usd_micros: Option<i64>,
    updated_ms: i64,
}

fn unsigned(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl From<Stored> for SpendRow {
    fn from(s: Stored) -> Self {
        Self {
            scope: s.scope,
            label: s.label,
            period: s.period,
            tokens: unsigned(s.tokens),
            usd_micros: unsigned(s.usd_micros),
            requests: unsigned(s.requests),
            largest_tokens: unsigned(s.largest_tokens),
            largest_usd_micros: unsigned(s.largest_usd_micros),
            limit_tokens: s.limit_tokens.map(unsigned),
            limit_usd_micros: s.limit_usd_micros.map(unsigned),
            updated_ms: s.updated_ms,
        }
    }
}

const COLUMNS: &str = "scope, label, period, tokens, usd_micros, requests, largest_tokens, \
     largest_usd_micros, limit_tokens, limit_usd_micros, updated_ms";

/// Whether one more request may go against `row`'s limit of `limit` in a unit where the
/// scope spent `spent` and its largest request was `largest`, with `in_flight` admitted and
/// not charged. `Some(reached)` refuses.
fn decide(spent: u64, limit: u64, largest: u64, in_flight: u64) -> Option<bool> {
    if spent >= limit {
        return Some(true);
    }
    if in_flight == 0 {
        return None;
    }
    // Nothing charged yet: no idea how large a request is, so one at a time.
    let needed = largest.checked_mul(in_flight + 1);
    match needed {
        Some(needed) if largest > 0 && limit - spent >= needed => None,
        _ => Some(false),
    }
}

/// The distinct scopes of `limits`, in order, so transactions lock them in one order.
fn sorted(limits: &[SpendLimit]) -> Result<Vec<&SpendLimit>, StoreError> {
    for limit in limits {
        for text in [&limit.scope, &limit.label, &limit.period] {
            if text.len() > MAX_SPEND_TEXT || text.contains('\0') {
                return Err(StoreError::Invalid(format!(
                    "a budget scope's text is over {MAX_SPEND_TEXT} bytes or holds NUL"
                )));
            }
        }
    }
    let mut sorted: Vec<&SpendLimit> = limits.iter().collect();
    sorted.sort_by(|a, b| a.scope.cmp(&b.scope));
    sorted.dedup_by(|a, b| a.scope == b.scope);
    Ok(sorted)
}

/// Creates the scope's row if missing and records its limit, locking it for the
/// transaction; returns it as it stands.
async fn upsert(tx: &mut Tx, limit: &SpendLimit, now_ms: i64) -> Result<SpendRow, StoreError> {
    let sql = format!(
        "INSERT INTO spend (scope, label, period, limit_tokens, limit_usd_micros, updated_ms)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (scope) DO UPDATE SET label = excluded.label, period = excluded.period,
             limit_tokens = excluded.limit_tokens, limit_usd_micros = excluded.limit_usd_micros
         RETURNING {COLUMNS}"
    );
    let stored: Stored = with_tx!(tx, conn => {
        sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
            .bind(&limit.scope)
            .bind(&limit.label)
            .bind(&limit.period)
            .bind(limit.tokens.map(signed))
            .bind(limit.usd_micros.map(signed))
            .bind(now_ms)
            .fetch_one(&mut *conn)
            .await?
    });
    Ok(stored.into())
}

impl Store {
    /// Admits one request against `limits` (one per scope; a scope given twice counts
    /// once, with its first limit): sweeps the scopes' expired holds, then either refuses
    /// ([`SpendAdmission::Reached`], [`SpendAdmission::Busy`]) or takes a hold named `hold`
    /// on every scope, expiring at `expires_ms`. Each scope's row is created if missing
    /// and its limit recorded.
    pub async fn admit_spend(
        &self,
        hold: &str,
        limits: &[SpendLimit],
        now_ms: i64,
        expires_ms: i64,
    ) -> Result<SpendAdmission, StoreError> {
        let scopes = sorted(limits)?;
        let mut tx = self.begin().await?;
        let mut refusal = None;
        for limit in &scopes {
            let row = upsert(&mut tx, limit, now_ms).await?;
            let in_flight: i64 = with_tx!(tx, conn => {
                sqlx::query("DELETE FROM spend_holds WHERE scope = $1 AND expires_ms < $2")
                    .bind(&limit.scope)
                    .bind(now_ms)
                    .execute(&mut *conn)
                    .await?;
                sqlx::query_scalar("SELECT COUNT(*) FROM spend_holds WHERE scope = $1")
                    .bind(&limit.scope)
                    .fetch_one(&mut *conn)
                    .await?
            });
            let in_flight = unsigned(in_flight);
            let verdicts = [
                limit
                    .tokens
                    .and_then(|l| decide(row.tokens, l, row.largest_tokens, in_flight)),
                limit
                    .usd_micros
                    .and_then(|l| decide(row.usd_micros, l, row.largest_usd_micros, in_flight)),
            ];
            if verdicts.contains(&Some(true)) {
                refusal = Some(SpendAdmission::Reached(row));
                break;
            }
            if verdicts.contains(&Some(false)) && refusal.is_none() {
                refusal = Some(SpendAdmission::Busy(row));
            }
        }
        if refusal.is_none() {
            for limit in &scopes {
                with_tx!(tx, conn => {
                    sqlx::query(
                        "INSERT INTO spend_holds (scope, hold, expires_ms) VALUES ($1, $2, $3)
                         ON CONFLICT (scope, hold) DO UPDATE SET expires_ms = excluded.expires_ms",
                    )
                    .bind(&limit.scope)
                    .bind(hold)
                    .bind(expires_ms)
                    .execute(&mut *conn)
                    .await?;
                });
            }
        }
        tx.commit().await?;
        Ok(refusal.unwrap_or(SpendAdmission::Admitted))
    }

    /// Charges a request admitted under `hold` to every scope of `limits` and gives its
    /// holds back, in one transaction: `tokens` and `usd_micros` are added (nothing, for a
    /// request that never reached the provider: the hold is only given back). Returns each
    /// scope's row after the charge, in scope order; the row before is the row less this
    /// charge, so exactly one charge sees a scope cross a mark (its 80 % warning).
    pub async fn charge_spend(
        &self,
        hold: &str,
        limits: &[SpendLimit],
        tokens: u64,
        usd_micros: u64,
        now_ms: i64,
    ) -> Result<Vec<SpendRow>, StoreError> {
        let scopes = sorted(limits)?;
        let counted = i64::from(tokens > 0 || usd_micros > 0);
        let (tokens, usd_micros) = (signed(tokens), signed(usd_micros));
        let sql = format!(
            "UPDATE spend SET tokens = tokens + $2, usd_micros = usd_micros + $3,
                 requests = requests + $4,
                 largest_tokens = CASE WHEN largest_tokens > $2 THEN largest_tokens ELSE $2 END,
                 largest_usd_micros =
                     CASE WHEN largest_usd_micros > $3 THEN largest_usd_micros ELSE $3 END,
                 updated_ms = $5
             WHERE scope = $1
             RETURNING {COLUMNS}"
        );
        let mut tx = self.begin().await?;
        let mut rows = Vec::with_capacity(scopes.len());
        for limit in &scopes {
            upsert(&mut tx, limit, now_ms).await?;
            let stored: Stored = with_tx!(tx, conn => {
                sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
                    .bind(&limit.scope)
                    .bind(tokens)
                    .bind(usd_micros)
                    .bind(counted)
                    .bind(now_ms)
                    .fetch_one(&mut *conn)
                    .await?
            });
            with_tx!(tx, conn => {
                sqlx::query("DELETE FROM spend_holds WHERE scope = $1 AND hold = $2")
                    .bind(&limit.scope)
                    .bind(hold)
                    .execute(&mut *conn)
                    .await?;
            });
            rows.push(stored.into());
        }
        tx.commit().await?;
        Ok(rows)
    }

    /// The budgets `run` counted against: its attempts' (at most `attempts` of them), its
    /// own, and its project's (`default` for none) on the days it ran, as runs show them.
    pub async fn run_spend(
        &self,
        run: &crate::RunRow,
        attempts: u32,
    ) -> Result<Vec<SpendRow>, StoreError> {
        let mut rows = self
            .spend_under(&format!("attempt:{}:", run.id), attempts)
            .await?;
        let project = run
            .project
            .as_deref()
            .filter(|p| !p.is_empty())
            .unwrap_or("default");
        let mut days = vec![
            run.created_at.format("%Y-%m-%d").to_string(),
            run.updated_at.format("%Y-%m-%d").to_string(),
        ];
        days.dedup();
        let mut scopes = vec![SpendScope::Run(run.id).key()];
        scopes.extend(
            days.iter()
                .map(|day| SpendScope::ProjectDay { project, day }.key()),
        );
        rows.extend(self.spend(&scopes).await?);
        Ok(rows)
    }

    /// The ledger's rows of these scopes (those it has), in scope order.
    pub async fn spend(&self, scopes: &[String]) -> Result<Vec<SpendRow>, StoreError> {
        let mut rows = Vec::new();
        let sql = format!("SELECT {COLUMNS} FROM spend WHERE scope = $1");
        for scope in scopes {
            let stored: Option<Stored> = crate::store::with_pool!(self, pool => {
                sqlx::query_as(sqlx::AssertSqlSafe(sql.clone()))
                    .bind(scope)
                    .fetch_optional(pool)
                    .await?
            });
            rows.extend(stored.map(SpendRow::from));
        }
        rows.sort_by(|a, b| a.scope.cmp(&b.scope));
        Ok(rows)
    }

    /// The rows whose scope starts with `prefix` (`attempt:<run>:` for a run's attempts),
    /// in scope order, at most `limit` of them.
    pub async fn spend_under(&self, prefix: &str, limit: u32) -> Result<Vec<SpendRow>, StoreError> {
        // `LIKE` would read `_` and `%` in a node's name as wildcards: compare the prefix.
        let sql = format!(
            "SELECT {COLUMNS} FROM spend WHERE substr(scope, 1, $2) = $1 ORDER BY scope LIMIT $3"
        );
        let length = i32::try_from(prefix.chars().count()).unwrap_or(i32::MAX);
        let stored: Vec<Stored> = crate::store::with_pool!(self, pool => {
            sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(prefix)
                .bind(length)
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await?
        });
        Ok(stored.into_iter().map(SpendRow::from).collect())
    }

    /// Holds still in flight on a scope (expired ones included until the next admission
    /// sweeps them): for tests and diagnostics.
    pub async fn spend_holds(&self, scope: &str) -> Result<u64, StoreError> {
        let count: i64 = crate::store::with_pool!(self, pool => {
            sqlx::query_scalar("SELECT COUNT(*) FROM spend_holds WHERE scope = $1")
                .bind(scope)
                .fetch_one(pool)
                .await?
        });
        Ok(unsigned(count))
    }
}

#[cfg(test)]
mod tests {
    use super::decide;

    #[test]
    fn a_scope_near_its_limit_admits_one_request_at_a_time() {
        // Reached.
        assert_eq!(decide(100, 100, 10, 0), Some(true));
        // Alone: always admitted under the limit.
        assert_eq!(decide(99, 100, 50, 0), None);
        // Another in flight, nothing known of sizes: wait.
        assert_eq!(decide(0, 100, 0, 1), Some(false));
        // Room for both at the largest size: go.
        assert_eq!(decide(0, 100, 40, 1), None);
        // Not room for three.
        assert_eq!(decide(0, 100, 40, 2), Some(false));
    }
}
