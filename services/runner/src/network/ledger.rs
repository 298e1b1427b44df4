//! An attempt's budgets as the gateway asks them: each request is admitted against the
//! store's ledger (shared by every runner, kept across restarts) and charged to it when it
//! ends, priced from `[pricing]`. A refusal is remembered, so the attempt fails with its
//! message rather than with the CLI's exit code; crossing 80 % of a limit is noted once.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gatehouse_agent::{ModelUsage, PriceTable, WARN_PERCENT, cost, share, show_tokens, show_usd};
use gatehouse_gateway::{Admission, Budget, Ticket, Usage};
use gatehouse_store::{SpendAdmission, SpendLimit, SpendRow, Store};
use tokio::task::JoinHandle;

use crate::budgets::{Scoped, spend_limits};

/// How often a request near a limit asks again while another of its scope is in flight.
const BUSY_POLL: Duration = Duration::from_millis(200);
/// Tries at a ledger write before a charge is given up (and logged).
const CHARGE_TRIES: u32 = 5;

/// Where an attempt's notes go as they happen.
#[derive(Debug, Clone)]
pub(crate) enum NoteTo {
    /// A run node's attempt output.
    Node {
        run: uuid::Uuid,
        node: String,
        attempt: i32,
    },
    /// Kept for the attempt to take ([`Ledger::take_notes`]).
    Kept,
}

/// One attempt's budgets.
pub(crate) struct Ledger {
    store: Store,
    prices: PriceTable,
    scoped: Vec<Scoped>,
    limits: Vec<SpendLimit>,
    hold: Duration,
    wait: Duration,
    note_to: NoteTo,
    state: Mutex<State>,
}

/// Why a budget refused one of an attempt's model requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// What the CLI was told, and what the attempt fails with.
    pub(crate) message: String,
    /// The budget reached, as a raise names it ("project api today"); `None` for a
    /// refusal a raise would not cure (a model without a price, the ledger unreachable).
    pub(crate) reached: Option<String>,
}

#[derive(Default)]
struct State {
    refused: Option<Refusal>,
    notes: Vec<String>,
    charges: Vec<JoinHandle<()>>,
}

impl Ledger {
    /// A ledger for these limits; `hold`: how long an admitted request's place lasts;
    /// `wait`: how long a request waits near a limit for another of its scope.
    pub(crate) fn new(
        store: Store,
        prices: PriceTable,
        scoped: Vec<Scoped>,
        (hold, wait): (Duration, Duration),
        note_to: NoteTo,
    ) -> Self {
        Self {
            store,
            prices,
            limits: spend_limits(&scoped),
            scoped,
            hold,
            wait,
            note_to,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The first request a budget refused, if one was.
    pub(crate) fn refused(&self) -> Option<Refusal> {
        self.state().refused.clone()
    }

    /// The notes kept so far (for [`NoteTo::Kept`]).
    pub(crate) fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut self.state().notes)
    }

    /// Waits for the charges under way, so the ledger holds the attempt's whole spend.
    pub(crate) async fn settle(&self) {
        let charges = std::mem::take(&mut self.state().charges);
        for charge in charges {
            let _ = charge.await;
        }
    }

    fn refuse(&self, message: String, reached: Option<String>) -> String {
        let mut state = self.state();
        if state.refused.is_none() {
            state.refused = Some(Refusal {
                message: message.clone(),
                reached,
            });
        }
        message
    }

    async fn admit_one(&self, model: Option<&str>) -> Result<Ticket, String> {
        if let Some(message) = model.and_then(|m| unpriced(&self.scoped, &self.prices, m)) {
            return Err(self.refuse(message, None));
        }
        let ticket = Ticket(uuid::Uuid::new_v4().as_u128());
        let hold = hold_name(ticket);
        let started = Instant::now();
        let mut failures = 0u32;
        loop {
            let now = now_ms();
            let expires =
                now.saturating_add(i64::try_from(self.hold.as_millis()).unwrap_or(i64::MAX));
            match self
                .store
                .admit_spend(&hold, &self.limits, now, expires)
                .await
            {
                Ok(SpendAdmission::Admitted) => return Ok(ticket),
                Ok(SpendAdmission::Reached(row)) => {
                    let (message, name) = reached(&self.scoped, &row);
                    return Err(self.refuse(message, name));
                }
                Ok(SpendAdmission::Busy(row)) => {
                    if started.elapsed() >= self.wait {
                        return Err(self.refuse(format!(
                            "budget of {} is nearly spent and another request of it has been in flight for {}s; try again",
                            row.label,
                            self.wait.as_secs()
                        ), None));
                    }
                }
                Err(error) => {
                    failures += 1;
                    tracing::warn!(%error, "the budget ledger could not admit a request");
                    if failures >= CHARGE_TRIES {
                        return Err(self.refuse(format!(
                            "Gatehouse could not check the budget (its database is unreachable: {error}); try again"
                        ), None));
                    }
                }
            }
            tokio::time::sleep(BUSY_POLL).await;
        }
    }
}

/// The refusal for a model with no price under a dollar budget, if it is one.
fn unpriced(scoped: &[Scoped], prices: &PriceTable, model: &str) -> Option<String> {
    let dollars = scoped.iter().find(|s| s.limit.is_usd())?;
    let probe = ModelUsage {
        model: model.to_owned(),
        input_tokens: 0,
        output_tokens: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
    };
    cost(&probe, prices).is_none().then(|| {
        format!(
            "the model `{model}` has no price, and the dollar budget of {} needs one: add [pricing.\"{model}\"] with input and output (USD per million tokens) to the configuration",
            dollars.label
        )
    })
}

/// The refusal for a scope that reached a limit, from the first of its limits reached,
/// and the budget's name for a raise.
fn reached(scoped: &[Scoped], row: &SpendRow) -> (String, Option<String>) {
    let of_scope = || scoped.iter().filter(|s| s.scope == row.scope);
    of_scope()
        .find(|s| s.spent(row.tokens, row.usd_micros) >= s.limit.amount())
        .or_else(|| of_scope().next())
        .map_or_else(
            || (format!("budget of {} reached", row.label), None),
            |s| (s.reached(), Some(s.name())),
        )
}

/// The 80 % notes for these rows after a charge of `tokens` and `usd_micros`.
fn crossings(scoped: &[Scoped], rows: &[SpendRow], tokens: u64, usd_micros: u64) -> Vec<String> {
    let mut notes = Vec::new();
    for row in rows {
        for s in scoped.iter().filter(|s| s.scope == row.scope) {
            let after = s.spent(row.tokens, row.usd_micros);
            let before = after.saturating_sub(s.spent(tokens, usd_micros));
            let mark = |n: u64| share(n, s.limit.amount()) >= WARN_PERCENT;
            if mark(after) && !mark(before) {
                let (spent, of) = match s.limit {
                    gatehouse_agent::Limit::Usd { micros } => (show_usd(after), show_usd(micros)),
                    gatehouse_agent::Limit::Tokens { count } => {
                        (show_tokens(after), show_tokens(count))
                    }
                };
                notes.push(format!(
                    "80% of the budget of {} used {}: {spent} of {of}",
                    s.label, s.period
                ));
            }
        }
    }
    notes
}

fn hold_name(ticket: Ticket) -> String {
    format!("{:032x}", ticket.0)
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// The shared part of a [`Ledger`] the gateway holds: a charge runs on its own task.
pub(crate) struct Shared(pub(crate) Arc<Ledger>);

impl Budget for Shared {
    fn admit<'a>(&'a self, model: Option<&'a str>) -> Admission<'a> {
        Box::pin(self.0.admit_one(model))
    }

    fn charge(&self, ticket: Ticket, usage: &Usage) {
        let ledger = self.0.clone();
        let tokens = usage.input + usage.output + usage.cache_read + usage.cache_write;
        let usd_micros = usage
            .model
            .as_ref()
            .and_then(|model| {
                cost(
                    &ModelUsage {
                        model: model.clone(),
                        input_tokens: usage.input,
                        output_tokens: usage.output,
                        cache_read_tokens: usage.cache_read,
                        cache_write_tokens: usage.cache_write,
                    },
                    &ledger.prices,
                )
            })
            .map_or(0, |usd| (usd * 1_000_000.0).round().max(0.0) as u64);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("a model request's budget charge came outside the runtime; not charged");
            return;
        };
        let task = runtime.spawn(async move {
            let hold = hold_name(ticket);
            let mut tries = 0;
            let rows = loop {
                match ledger
                    .store
                    .charge_spend(&hold, &ledger.limits, tokens, usd_micros, now_ms())
                    .await
                {
                    Ok(rows) => break rows,
                    Err(error) if tries + 1 < CHARGE_TRIES => {
                        tries += 1;
                        tracing::warn!(%error, "charging the budget ledger; trying again");
                        tokio::time::sleep(BUSY_POLL * tries).await;
                    }
                    Err(error) => {
                        tracing::error!(%error, tokens, usd_micros, "a model request could not be charged to its budget");
                        return;
                    }
                }
            };
            for note in crossings(&ledger.scoped, &rows, tokens, usd_micros) {
                ledger.note(note).await;
            }
        });
        self.0.state().charges.push(task);
    }
}

impl Ledger {
    async fn note(&self, note: String) {
        match &self.note_to {
            NoteTo::Node { run, node, attempt } => {
                let line = format!("[gatehouse] {note}");
                if let Err(error) = self
                    .store
                    .append_log(*run, node, *attempt, "stderr", &line)
                    .await
                {
                    tracing::warn!(%error, "storing a budget note failed");
                }
            }
            NoteTo::Kept => self.state().notes.push(note),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unpriced_model_is_refused_only_under_a_dollar_budget() {
        let scoped = |text: &str| {
            vec![Scoped {
                scope: "run:r".into(),
                label: "SOP ship".into(),
                period: "for this run".into(),
                limit: text.parse().unwrap(),
            }]
        };
        let mut prices = PriceTable::new();
        prices.insert(
            "claude-x".into(),
            gatehouse_agent::Price {
                input: 3.0,
                output: 15.0,
                cache_read: 0.0,
                cache_write: 0.0,
            },
        );
        assert_eq!(
            unpriced(&scoped("$5"), &prices, "gpt-y").as_deref(),
            Some(
                "the model `gpt-y` has no price, and the dollar budget of SOP ship needs one: add [pricing.\"gpt-y\"] with input and output (USD per million tokens) to the configuration"
            )
        );
        assert_eq!(unpriced(&scoped("$5"), &prices, "claude-x-20250101"), None);
        assert_eq!(unpriced(&scoped("5k tokens"), &prices, "gpt-y"), None);
    }

    #[test]
    fn the_80_percent_mark_is_noted_on_the_charge_that_crosses_it() {
        let scoped = vec![Scoped {
            scope: "project:api:d".into(),
            label: "project api".into(),
            period: "today".into(),
            limit: "$20".parse().unwrap(),
        }];
        let row = |usd_micros| SpendRow {
            scope: "project:api:d".into(),
            label: "project api".into(),
            period: "today".into(),
            tokens: 0,
            usd_micros,
            requests: 1,
            largest_tokens: 0,
            largest_usd_micros: 0,
            limit_tokens: None,
            limit_usd_micros: Some(20_000_000),
            updated_ms: 0,
        };
        assert_eq!(
            crossings(&scoped, &[row(16_100_000)], 0, 200_000),
            ["80% of the budget of project api used today: $16.10 of $20.00"]
        );
        assert!(crossings(&scoped, &[row(16_300_000)], 0, 200_000).is_empty());
        assert!(crossings(&scoped, &[row(15_000_000)], 0, 200_000).is_empty());
        assert_eq!(
            reached(&scoped, &row(20_000_000)),
            (
                "budget of project api reached: $20.00 today".to_owned(),
                Some("project api today".to_owned())
            )
        );
    }
}
