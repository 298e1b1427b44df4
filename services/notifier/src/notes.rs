//! What a run's status comment and chat progress say beside its nodes: each host the
//! egress proxy refused its sandboxes (so someone adds it to the profile's egress instead
//! of reading the output for it), and each budget it used 80 % of or reached. Read from
//! the stored connections and the spend ledger; the wording is pure, so it is tested
//! without GitHub or a chat.
//!
//! Hosts are as the sandbox's client named them: untrusted. They are cut, lowercased and
//! kept to the characters of a host name, so nothing in one can format, link or mention.

use std::collections::HashSet;

use gatehouse_agent::{WARN_PERCENT, share, show_tokens, show_usd};
use gatehouse_store::{ConnectionRow, ConnectionVerdict, RunRow, SpendRow, Store, StoreError};

/// Most blocked hosts named; the rest are counted ("and 3 more blocked hosts").
pub const HOSTS_SHOWN: usize = 10;

/// Most budget lines; the rest are counted.
pub const BUDGETS_SHOWN: usize = 10;

/// Longest host named, in characters.
const HOST_CHARS: usize = 100;

/// Longest label or node named, in characters.
const LABEL_CHARS: usize = 80;

/// The most attempt budgets read for one run, as the run's API view reads them.
const ATTEMPT_BUDGETS: u32 = 200;

/// A host and port the egress proxy refused one of the run's sandboxes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BlockedHost {
    /// The host as asked for (untrusted; shown cleaned).
    pub host: String,
    /// The port asked for.
    pub port: u16,
}

/// One budget the run's model requests counted against: spent beside its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetSpend {
    /// Whose budget: "role coder", "project api".
    pub label: String,
    /// Over what: "for this attempt", "for this run", "today".
    pub period: String,
    /// An attempt's budget: its node and number.
    pub attempt: Option<(String, i32)>,
    /// A project's daily budget: its UTC day, `YYYY-MM-DD`.
    pub day: Option<String>,
    /// Tokens spent.
    pub tokens: u64,
    /// Micro-dollars spent.
    pub usd_micros: u64,
    /// The token limit, if there is one.
    pub limit_tokens: Option<u64>,
    /// The dollar limit in micro-dollars, if there is one.
    pub limit_usd_micros: Option<u64>,
}

/// What a run's people should know beside its nodes' status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunNotes {
    /// Every refused host:port of the run, once each, in the order first refused.
    pub blocked: Vec<BlockedHost>,
    /// Every budget the run counted against.
    pub budgets: Vec<BudgetSpend>,
    /// The questions its agent nodes asked people, in the order asked (status comment only).
    pub questions: Vec<crate::AskedQuestion>,
}

/// How lines are written: Markdown (a GitHub comment) puts hosts in code spans and
/// escapes labels; plain text (chat) is escaped by the chat's own formatter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// GitHub-flavoured Markdown.
    Markdown,
    /// Plain text.
    Plain,
}

impl RunNotes {
    /// Notes from a run's stored connections (the refused ones count) and budget rows.
    pub fn new(run: uuid::Uuid, connections: &[ConnectionRow], budgets: Vec<SpendRow>) -> Self {
        let mut seen = HashSet::new();
        let blocked = connections
            .iter()
            .filter(|c| c.verdict == ConnectionVerdict::Refused)
            .map(|c| BlockedHost {
                host: c.host.to_lowercase(),
                port: c.port,
            })
            .filter(|b| seen.insert(b.clone()))
            .collect();
        let budgets = budgets
            .into_iter()
            .map(|row| BudgetSpend::of(row, run))
            .collect();
        Self {
            blocked,
            budgets,
            questions: Vec::new(),
        }
    }

    /// One line per blocked host (at most [`HOSTS_SHOWN`], then how many more), then one
    /// per budget past 80 % or reached (at most [`BUDGETS_SHOWN`], then how many more).
    pub fn lines(&self, style: Style) -> Vec<String> {
        let mut lines: Vec<String> = self
            .blocked
            .iter()
            .take(HOSTS_SHOWN)
            .map(|b| {
                let at = format!("{}:{}", host_shown(&b.host), b.port);
                let at = match style {
                    Style::Markdown => format!("`{at}`"),
                    Style::Plain => at,
                };
                format!("blocked {at} — add it to the profile's egress")
            })
            .collect();
        if self.blocked.len() > HOSTS_SHOWN {
            let more = self.blocked.len() - HOSTS_SHOWN;
            lines.push(format!(
                "and {more} more blocked {}",
                if more == 1 { "host" } else { "hosts" }
            ));
        }
        let budgets: Vec<String> = self.budgets.iter().filter_map(|b| b.line(style)).collect();
        lines.extend(budgets.iter().take(BUDGETS_SHOWN).cloned());
        if budgets.len() > BUDGETS_SHOWN {
            let more = budgets.len() - BUDGETS_SHOWN;
            lines.push(format!(
                "and {more} more {} past 80%",
                if more == 1 { "budget" } else { "budgets" }
            ));
        }
        lines
    }

    /// The notes of `run`: its refused connections and its budgets, read as the run's API
    /// view reads them (its attempts', its own, its project's on the days it ran), and the
    /// questions its agents asked.
    pub async fn read(store: &Store, run: &RunRow) -> Result<Self, StoreError> {
        let connections = store.run_connections(run.id).await?;
        let rows = store.run_spend(run, ATTEMPT_BUDGETS).await?;
        let mut notes = Self::new(run.id, &connections, rows);
        notes.questions = store
            .run_questions(run.id)
            .await?
            .iter()
            .filter_map(crate::AskedQuestion::of)
            .collect();
        Ok(notes)
    }
}

impl BudgetSpend {
    fn of(row: SpendRow, run: uuid::Uuid) -> Self {
        let attempt = row.attempt_of(run);
        let day = row.day().map(str::to_owned);
        Self {
            label: row.label,
            period: row.period,
            attempt,
            day,
            tokens: row.tokens,
            usd_micros: row.usd_micros,
            limit_tokens: row.limit_tokens,
            limit_usd_micros: row.limit_usd_micros,
        }
    }

    /// "80% of the budget of project api used today (2026-12-06): $16.10 of $20.00", or
    /// "budget of role coder reached for this attempt (code #1): 2k tokens of 1.5k tokens";
    /// none under 80 % or without a limit. Of two limits, the one used most speaks.
    fn line(&self, style: Style) -> Option<String> {
        let usd = self.limit_usd_micros.map(|limit| {
            (
                share(self.usd_micros, limit),
                show_usd(self.usd_micros),
                show_usd(limit),
            )
        });
        let tokens = self.limit_tokens.map(|limit| {
            (
                share(self.tokens, limit),
                show_tokens(self.tokens),
                show_tokens(limit),
            )
        });
        let (percent, spent, limit) = [usd, tokens]
            .into_iter()
            .flatten()
            .max_by_key(|(percent, _, _)| *percent)?;
        if percent < WARN_PERCENT {
            return None;
        }
        let text = |t: &str| {
            let t = cut(t, LABEL_CHARS);
            match style {
                Style::Markdown => markdown_escape(&t),
                Style::Plain => t,
            }
        };
        let mut when = text(&self.period);
        if let Some((node, n)) = &self.attempt {
            when.push_str(&format!(" ({} #{n})", text(node)));
        }
        if let Some(day) = &self.day {
            when.push_str(&format!(" ({})", text(day)));
        }
        let label = text(&self.label);
        Some(if percent >= 100 {
            format!("budget of {label} reached {when}: {spent} of {limit}")
        } else {
            format!("{percent}% of the budget of {label} used {when}: {spent} of {limit}")
        })
    }
}

/// The host as named: lowercase letters, digits and `.-_:[]` only (anything else is `?`),
/// at most [`HOST_CHARS`] characters, `(no host)` when empty.
fn host_shown(host: &str) -> String {
    if host.is_empty() {
        return "(no host)".to_owned();
    }
    let clean: String = host
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '-' | '_' | ':' | '[' | ']' => c,
            _ => '?',
        })
        .collect();
    cut(&clean, HOST_CHARS)
}

/// `text` without control characters, at most `max` characters (ending in `…` if cut).
pub(crate) fn cut(text: &str, max: usize) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if clean.chars().count() <= max {
        return clean;
    }
    let mut kept: String = clean.chars().take(max - 1).collect();
    kept.push('…');
    kept
}

/// Markdown's punctuation backslash-escaped, so a label cannot format, link or open HTML.
pub(crate) fn markdown_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '`'
                | '*'
                | '_'
                | '{'
                | '}'
                | '['
                | ']'
                | '('
                | ')'
                | '#'
                | '+'
                | '-'
                | '!'
                | '|'
                | '<'
                | '>'
                | '~'
                | '@'
                | '&'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use gatehouse_store::ConnectionOwner;
    use uuid::Uuid;

    use super::*;

    fn refused(run: Uuid, host: &str, port: u16) -> ConnectionRow {
        ConnectionRow {
            owner: ConnectionOwner::Node {
                run_id: run,
                node: "code".into(),
            },
            attempt: 1,
            host: host.into(),
            port,
            verdict: ConnectionVerdict::Refused,
            reason: Some("not in the egress allow-list".into()),
            bytes_up: 0,
            bytes_down: 0,
            started_at: Utc::now(),
            duration_ms: 1,
        }
    }

    fn spend(scope: &str, label: &str, period: &str, tokens: u64, usd_micros: u64) -> SpendRow {
        SpendRow {
            scope: scope.into(),
            label: label.into(),
            period: period.into(),
            tokens,
            usd_micros,
            requests: 3,
            largest_tokens: 0,
            largest_usd_micros: 0,
            limit_tokens: None,
            limit_usd_micros: None,
            updated_ms: 0,
        }
    }

    #[test]
    fn each_refused_host_is_named_once_and_allowed_ones_not_at_all() {
        let run = Uuid::nil();
        let mut allowed = refused(run, "github.com", 443);
        allowed.verdict = ConnectionVerdict::Allowed;
        let rows = [
            refused(run, "pypi.org", 443),
            allowed,
            refused(run, "PyPI.org", 443),
            refused(run, "pypi.org", 80),
        ];
        let notes = RunNotes::new(run, &rows, Vec::new());
        assert_eq!(
            notes.lines(Style::Plain),
            [
                "blocked pypi.org:443 — add it to the profile's egress",
                "blocked pypi.org:80 — add it to the profile's egress",
            ]
        );
        assert_eq!(
            notes.lines(Style::Markdown)[0],
            "blocked `pypi.org:443` — add it to the profile's egress"
        );
    }

    #[test]
    fn at_most_ten_hosts_then_how_many_more() {
        let run = Uuid::nil();
        let rows: Vec<ConnectionRow> = (0..HOSTS_SHOWN + 3)
            .map(|i| refused(run, &format!("h{i}.example"), 443))
            .collect();
        let lines = RunNotes::new(run, &rows, Vec::new()).lines(Style::Plain);
        assert_eq!(lines.len(), HOSTS_SHOWN + 1, "{lines:#?}");
        assert_eq!(
            lines[0],
            "blocked h0.example:443 — add it to the profile's egress"
        );
        assert_eq!(lines[HOSTS_SHOWN], "and 3 more blocked hosts");
        let one_more: Vec<ConnectionRow> = rows[..=HOSTS_SHOWN].to_vec();
        let lines = RunNotes::new(run, &one_more, Vec::new()).lines(Style::Plain);
        assert_eq!(lines[HOSTS_SHOWN], "and 1 more blocked host");
    }

    #[test]
    fn hostile_hosts_cannot_format_link_or_mention() {
        let run = Uuid::nil();
        let long = "a".repeat(5_000);
        let rows = [
            refused(run, "`x` [link](https://evil) @team <b>\u{1b}[31m", 443),
            refused(run, &long, 443),
            refused(run, "", 0),
        ];
        let lines = RunNotes::new(run, &rows, Vec::new()).lines(Style::Markdown);
        assert_eq!(
            lines[0],
            "blocked `?x??[link]?https:??evil???team??b??[31m:443` — add it to the profile's egress"
        );
        assert_eq!(
            lines[1],
            format!(
                "blocked `{}…:443` — add it to the profile's egress",
                "a".repeat(HOST_CHARS - 1)
            )
        );
        assert_eq!(
            lines[2],
            "blocked `(no host):0` — add it to the profile's egress"
        );
    }

    #[test]
    fn budgets_past_80_percent_or_reached_are_named_the_rest_not() {
        let run = Uuid::nil();
        let mut day = spend(
            "project:api:2026-12-06",
            "project api",
            "today",
            1_000,
            16_100_000,
        );
        day.limit_usd_micros = Some(20_000_000);
        let mut attempt = spend(
            &format!("attempt:{run}:code:1"),
            "role coder",
            "for this attempt",
            2_000,
            0,
        );
        attempt.limit_tokens = Some(1_500);
        let mut under = spend(&format!("run:{run}"), "SOP ship", "for this run", 700, 0);
        under.limit_tokens = Some(1_000);
        let unlimited = spend(
            &format!("attempt:{run}:review:2"),
            "role helper",
            "for this attempt",
            9_000_000,
            0,
        );
        // Both limits: the one used most speaks.
        let mut both = spend(
            "project:web:2026-12-06",
            "project web",
            "today",
            950,
            1_000_000,
        );
        both.limit_usd_micros = Some(10_000_000);
        both.limit_tokens = Some(1_000);
        let notes = RunNotes::new(run, &[], vec![day, attempt, under, unlimited, both]);
        assert_eq!(
            notes.lines(Style::Plain),
            [
                "80% of the budget of project api used today (2026-12-06): $16.10 of $20.00",
                "budget of role coder reached for this attempt (code #1): 2k tokens of 1.5k tokens",
                "95% of the budget of project web used today (2026-12-06): 950 tokens of 1k tokens",
            ]
        );
    }

    #[test]
    fn budget_lines_are_bounded_and_escaped_in_markdown() {
        let run = Uuid::nil();
        let rows: Vec<SpendRow> = (0..BUDGETS_SHOWN + 2)
            .map(|i| {
                let mut row = spend(
                    &format!("attempt:{run}:n{i}:1"),
                    "role *x*",
                    "for this attempt",
                    10,
                    0,
                );
                row.limit_tokens = Some(10);
                row
            })
            .collect();
        let lines = RunNotes::new(run, &[], rows).lines(Style::Markdown);
        assert_eq!(lines.len(), BUDGETS_SHOWN + 1);
        assert_eq!(
            lines[0],
            "budget of role \\*x\\* reached for this attempt (n0 #1): 10 tokens of 10 tokens"
        );
        assert_eq!(lines[BUDGETS_SHOWN], "and 2 more budgets past 80%");
    }
}
