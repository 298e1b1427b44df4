//! The budget hook: the runner decides what a request may cost, the gateway asks it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::usage::Usage;

/// What [`Budget::admit`] returns: a future, as admission may ask a shared ledger (a
/// database) or wait for another request of the same budget to end.
pub type Admission<'a> = Pin<Box<dyn Future<Output = Result<Ticket, String>> + Send + 'a>>;

/// An admitted request's place in its budget (a reservation, for a ledger that keeps
/// them), handed back to [`Budget::charge`] exactly once when the request ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ticket(pub u128);

/// A spending limit the gateway consults around each request of a grant. Prices and
/// dollars are the runner's business; the gateway only asks and reports tokens.
///
/// When [`Budget::admit`] refuses, the CLI gets **403** in the provider's error shape
/// (`permission_error` for Anthropic, `insufficient_quota` for OpenAI) carrying the
/// budget's message. 403 because the CLIs (Claude Code, Codex and the SDKs under them)
/// retry 429 and 5xx, which would hammer a budget that will not refill in seconds, but show
/// a 403 at once and stop, with its message.
pub trait Budget: Send + Sync {
    /// Whether one more request, for `model` (as the request body names it), may go;
    /// `Err` carries the message the CLI shows, e.g. "budget of project api reached:
    /// $20.00 today". It may wait (for a request in flight to end) before it answers.
    fn admit<'a>(&'a self, model: Option<&'a str>) -> Admission<'a>;

    /// What an admitted request cost, once it ended (also when cut off: what was seen;
    /// nothing when it never reached the provider). Called once per ticket, from a
    /// request's task or from a drop, so it must not block: a ledger write is spawned.
    fn charge(&self, ticket: Ticket, usage: &Usage);
}

/// An admitted request's ticket, charged once: with the usage when the answer ends, or with
/// nothing when the request fails before it (or is dropped), so a reservation is never left
/// behind by the gateway.
pub(crate) struct Hold {
    budget: Arc<dyn Budget>,
    ticket: Option<Ticket>,
}

impl Hold {
    pub(crate) fn new(budget: Arc<dyn Budget>, ticket: Ticket) -> Self {
        Self {
            budget,
            ticket: Some(ticket),
        }
    }

    /// Charges the request's usage.
    pub(crate) fn charge(mut self, usage: &Usage) {
        if let Some(ticket) = self.ticket.take() {
            self.budget.charge(ticket, usage);
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.budget.charge(ticket, &Usage::default());
        }
    }
}
