//! The "Budgets" section of a run's page: each budget its model requests counted against
//! (its attempts', its own, its project's day), spent beside the limit, so whoever reads
//! the run sees how close it came before a request is refused. The same rows as the run's
//! API view (`RunDetail.budgets`) and `gatehouse run show`. Labels come from the
//! configuration and node ids from the SOP: escaped by maud and stripped of control
//! characters all the same.

use gatehouse_agent::{WARN_PERCENT, share, show_tokens, show_usd};
use maud::{Markup, html};

use crate::views::BudgetView;

/// Most rows drawn; the API lists every one.
const ROWS_SHOWN: usize = 200;

/// The section for a run's `budgets`; `all_at` is where the API lists them.
pub(super) fn section(budgets: &[BudgetView], all_at: &str) -> Markup {
    let reached = budgets.iter().filter(|b| used(b).reached).count();
    html! {
        section id="budgets" aria-labelledby="budgets-h" {
            h2 id="budgets-h" { "Budgets" }
            @if budgets.is_empty() {
                p.empty { "No budget applied to this run's model requests." }
            } @else {
                p.meta {
                    (budgets.len()) @if budgets.len() == 1 { " budget" } @else { " budgets" }
                    ", " (reached) " reached"
                }
                table.budgets {
                    caption { "Spent beside each limit" }
                    thead { tr { th { "Scope" } th { "Limit" } th { "Spent" } th { "% used" } th { "Reached" } } }
                    tbody {
                        @for b in budgets.iter().take(ROWS_SHOWN) {
                            @let u = used(b);
                            tr class=(u.class()) {
                                td { (scope(b)) }
                                td { (u.limit) }
                                td { (u.spent) " · " (b.requests) @if b.requests == 1 { " request" } @else { " requests" } }
                                td { @match u.percent { Some(p) => { (p) "%" }, None => "—" } }
                                td { @if u.reached { strong { "reached" } } @else { "no" } }
                            }
                        }
                    }
                }
                @if budgets.len() > ROWS_SHOWN {
                    p.aside { "The first " (ROWS_SHOWN) " of " (budgets.len()) " are shown; " code { "GET " (all_at) } " lists them all." }
                }
            }
        }
    }
}

/// A budget as the table draws it.
struct Used {
    limit: String,
    spent: String,
    /// The largest share of a limit spent, rounded down; none without a limit.
    percent: Option<u64>,
    reached: bool,
}

impl Used {
    fn class(&self) -> &'static str {
        match self.percent {
            _ if self.reached => "reached",
            Some(p) if p >= WARN_PERCENT => "close",
            _ => "under",
        }
    }
}

fn micros(usd: f64) -> u64 {
    if usd.is_finite() {
        (usd * 1_000_000.0).round().max(0.0) as u64
    } else {
        0
    }
}

/// Each limit with what was spent of it, the largest share used, and whether one was
/// reached (at or past it, as the gateway refuses).
fn used(b: &BudgetView) -> Used {
    let mut limits = Vec::new();
    let mut spent = Vec::new();
    let mut percent: Option<u64> = None;
    let mut reached = false;
    let usd = micros(b.usd);
    let mut count = |amount: u64, limit: u64| {
        let share = share(amount, limit);
        percent = Some(percent.map_or(share, |p| p.max(share)));
        reached |= amount >= limit;
    };
    if let Some(limit) = b.limit_usd.map(micros) {
        limits.push(show_usd(limit));
        spent.push(show_usd(usd));
        count(usd, limit);
    }
    if let Some(limit) = b.limit_tokens {
        limits.push(show_tokens(limit));
        spent.push(show_tokens(b.tokens));
        count(b.tokens, limit);
    }
    if limits.is_empty() {
        limits.push("none".to_owned());
        spent.push(format!("{} ({})", show_usd(usd), show_tokens(b.tokens)));
    }
    Used {
        limit: limits.join(" and "),
        spent: spent.join(" and "),
        percent,
        reached,
    }
}

/// "role coder · code #1 · for this attempt", "project api · today (2026-12-06)".
fn scope(b: &BudgetView) -> String {
    let mut out = clean(&b.label);
    if let (Some(node), Some(attempt)) = (&b.node, b.attempt) {
        out.push_str(&format!(" · {} #{attempt}", clean(node)));
    }
    out.push_str(" · ");
    out.push_str(&clean(&b.period));
    if let Some(day) = &b.day {
        out.push_str(&format!(" ({})", clean(day)));
    }
    out
}

/// Text without control characters.
fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(label: &str, tokens: u64, limit_tokens: Option<u64>) -> BudgetView {
        BudgetView {
            label: label.into(),
            period: "for this attempt".into(),
            node: Some("code".into()),
            attempt: Some(1),
            day: None,
            tokens,
            usd: 0.0,
            requests: 2,
            limit_tokens,
            limit_usd: None,
        }
    }

    fn project_day(usd: f64, limit_usd: f64) -> BudgetView {
        BudgetView {
            label: "project api".into(),
            period: "today".into(),
            node: None,
            attempt: None,
            day: Some("2026-12-06".into()),
            tokens: 1_000,
            usd,
            requests: 7,
            limit_tokens: None,
            limit_usd: Some(limit_usd),
        }
    }

    #[test]
    fn each_budget_shows_its_limit_spent_share_and_whether_it_was_reached() {
        let rows = [
            budget("role coder", 2_000, Some(1_500)),
            project_day(16.1, 20.0),
            budget("role helper", 300, None),
        ];
        let html = section(&rows, "/api/v1/runs/x").into_string();
        assert!(html.contains("3 budgets, 1 reached"), "{html}");
        assert!(
            html.contains(
                "<tr class=\"reached\"><td>role coder · code #1 · for this attempt</td>\
                 <td>1.5k tokens</td><td>2k tokens · 2 requests</td><td>133%</td>\
                 <td><strong>reached</strong></td></tr>"
            ),
            "{html}"
        );
        assert!(
            html.contains(
                "<tr class=\"close\"><td>project api · today (2026-12-06)</td>\
                 <td>$20.00</td><td>$16.10 · 7 requests</td><td>80%</td><td>no</td></tr>"
            ),
            "{html}"
        );
        assert!(
            html.contains("<td>none</td><td>$0.00 (300 tokens) · 2 requests</td><td>—</td>"),
            "{html}"
        );
        let empty = section(&[], "/api/v1/runs/x").into_string();
        assert!(
            empty.contains("No budget applied to this run's model requests."),
            "{empty}"
        );
    }

    #[test]
    fn a_budget_exactly_spent_is_reached_and_both_limits_count() {
        let mut both = project_day(5.0, 20.0);
        both.limit_tokens = Some(1_000);
        let html = section(&[both], "/api/v1/runs/x").into_string();
        assert!(
            html.contains("<td>$20.00 and 1k tokens</td><td>$5.00 and 1k tokens"),
            "{html}"
        );
        assert!(
            html.contains("<td>100%</td><td><strong>reached</strong></td>"),
            "{html}"
        );
    }

    #[test]
    fn hostile_labels_are_escaped_and_cleaned_and_a_long_list_is_cut() {
        let mut hostile = budget("<script>alert(1)</script>\u{1b}[31m", 1, Some(10));
        hostile.node = Some("<img src=x onerror=alert(1)>".into());
        let html = section(&[hostile], "/api/v1/x").into_string();
        assert!(
            !html.contains("<script>") && !html.contains("<img"),
            "{html}"
        );
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt; [31m · &lt;img"),
            "{html}"
        );
        assert!(!html.contains('\u{1b}'), "{html}");

        let many: Vec<BudgetView> = (0..ROWS_SHOWN + 3)
            .map(|i| budget(&format!("role r{i}"), 1, Some(100)))
            .collect();
        let html = section(&many, "/api/v1/runs/r").into_string();
        assert_eq!(html.matches("<tr class=\"under\">").count(), ROWS_SHOWN);
        assert!(
            html.contains(&format!(
                "The first {ROWS_SHOWN} of {} are shown",
                ROWS_SHOWN + 3
            )),
            "{html}"
        );
    }
}
