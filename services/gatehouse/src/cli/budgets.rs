//! The "budgets" part of `run show`: each budget the run's model requests counted
//! against, spent beside its limit.

use gatehouse_agent::{show_tokens, show_usd};
use gatehouse_ingest::views::{BudgetView, RunDetail};

use crate::cli::runs::one_line;

/// The run's "budgets:" section, empty when none applied.
pub(crate) fn run_section(run: &RunDetail) -> String {
    if run.budgets.is_empty() {
        return String::new();
    }
    let mut out = "budgets:\n".to_owned();
    for b in &run.budgets {
        out.push_str(&format!("  {}\n", line(b)));
    }
    out
}

fn micros(usd: f64) -> u64 {
    (usd * 1_000_000.0).round().max(0.0) as u64
}

/// "role coder (code#1): 2k tokens of 1.5k tokens for this attempt, 2 requests".
fn line(b: &BudgetView) -> String {
    let mut who = one_line(&b.label);
    if let (Some(node), Some(attempt)) = (&b.node, b.attempt) {
        who.push_str(&format!(" ({}#{attempt})", one_line(node)));
    }
    let mut spent = Vec::new();
    if let Some(limit) = b.limit_usd {
        spent.push(format!(
            "{} of {}",
            show_usd(micros(b.usd)),
            show_usd(micros(limit))
        ));
    }
    if let Some(limit) = b.limit_tokens {
        spent.push(format!(
            "{} of {}",
            show_tokens(b.tokens),
            show_tokens(limit)
        ));
    }
    if spent.is_empty() {
        spent.push(format!(
            "{} ({})",
            show_usd(micros(b.usd)),
            show_tokens(b.tokens)
        ));
    }
    let period = match &b.day {
        Some(day) => format!("{} ({day})", one_line(&b.period)),
        None => one_line(&b.period),
    };
    let reached = b.limit_usd.is_some_and(|l| micros(b.usd) >= micros(l))
        || b.limit_tokens.is_some_and(|l| b.tokens >= l);
    format!(
        "{who}: {} {period}, {} requests{}",
        spent.join(", "),
        b.requests,
        if reached { "  REACHED" } else { "" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_reads_as_spent_of_limit() {
        let view = BudgetView {
            label: "project api".into(),
            period: "today".into(),
            node: None,
            attempt: None,
            day: Some("2026-12-06".into()),
            tokens: 1_000,
            usd: 16.1,
            requests: 7,
            limit_tokens: None,
            limit_usd: Some(20.0),
        };
        assert_eq!(
            line(&view),
            "project api: $16.10 of $20.00 today (2026-12-06), 7 requests"
        );
        let attempt = BudgetView {
            label: "role coder".into(),
            period: "for this attempt".into(),
            node: Some("code".into()),
            attempt: Some(1),
            day: None,
            tokens: 2_000,
            usd: 0.0,
            requests: 2,
            limit_tokens: Some(1_500),
            limit_usd: None,
        };
        assert_eq!(
            line(&attempt),
            "role coder (code#1): 2k tokens of 1.5k tokens for this attempt, 2 requests  REACHED"
        );
    }
}
