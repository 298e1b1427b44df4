//! The "network" part of `run show` and `conversation show`: where each attempt's sandbox
//! connected through the egress proxy, refusals with their reason. A long list is
//! summarised (the first refusals, then the allowed hosts with counts and bytes); `--json`
//! has every connection.

use std::collections::BTreeMap;

use gatehouse_ingest::views::{ConnectionView, RunDetail};

use crate::cli::runs::one_line;

/// Connections listed one by one when an attempt has at most this many; past it, only
/// this many refusals, and this many allowed hosts.
const SHOWN: usize = 20;

/// Longest host shown, in characters; the rest is `…`.
const HOST_SHOWN: usize = 80;

/// A run's "network:" section, empty when no attempt connected anywhere.
pub(crate) fn run_section(run: &RunDetail) -> String {
    let mut out = String::new();
    for a in run.attempts.iter().filter(|a| !a.connections.is_empty()) {
        if out.is_empty() {
            out.push_str("network:\n");
        }
        out.push_str(&format!(
            "  {}#{}: {}\n",
            one_line(&a.node),
            a.attempt,
            counts(&a.connections)
        ));
        out.push_str(&lines(&a.connections, "    "));
    }
    out
}

/// An attempt's connections under a heading, each line after `indent`; empty when none.
pub(crate) fn attempt_section(connections: &[ConnectionView], indent: &str) -> String {
    if connections.is_empty() {
        return String::new();
    }
    format!(
        "{indent}network: {}\n{}",
        counts(connections),
        lines(connections, &format!("{indent}  "))
    )
}

/// `N connections, M refused`.
fn counts(connections: &[ConnectionView]) -> String {
    let refused = connections.iter().filter(|c| is_refused(c)).count();
    let total = connections.len();
    let noun = if total == 1 {
        "connection"
    } else {
        "connections"
    };
    format!("{total} {noun}, {refused} refused")
}

fn is_refused(c: &ConnectionView) -> bool {
    c.verdict != "allowed"
}

/// One line per connection, or past [`SHOWN`] the first refusals and the allowed hosts
/// summed.
fn lines(connections: &[ConnectionView], indent: &str) -> String {
    let mut out = String::new();
    if connections.len() <= SHOWN {
        for c in connections {
            out.push_str(&format!("{indent}{}\n", line(c)));
        }
        return out;
    }
    let refused: Vec<&ConnectionView> = connections.iter().filter(|c| is_refused(c)).collect();
    for c in refused.iter().take(SHOWN) {
        out.push_str(&format!("{indent}{}\n", line(c)));
    }
    if refused.len() > SHOWN {
        out.push_str(&format!(
            "{indent}… {} more refused\n",
            refused.len() - SHOWN
        ));
    }
    // Allowed: one line per host and port, the busiest first.
    let mut hosts: BTreeMap<(String, u16), (usize, u64, u64)> = BTreeMap::new();
    for c in connections.iter().filter(|c| !is_refused(c)) {
        let sum = hosts.entry((c.host.clone(), c.port)).or_default();
        sum.0 += 1;
        sum.1 = sum.1.saturating_add(c.bytes_up);
        sum.2 = sum.2.saturating_add(c.bytes_down);
    }
    let mut hosts: Vec<_> = hosts.into_iter().collect();
    hosts.sort_by(|a, b| b.1.0.cmp(&a.1.0).then_with(|| a.0.cmp(&b.0)));
    for ((host, port), (n, up, down)) in hosts.iter().take(SHOWN) {
        out.push_str(&format!(
            "{indent}allowed  {}:{port} ×{n}  {} up, {} down\n",
            host_shown(host),
            bytes(*up),
            bytes(*down)
        ));
    }
    if hosts.len() > SHOWN {
        out.push_str(&format!(
            "{indent}… {} more allowed hosts\n",
            hosts.len() - SHOWN
        ));
    }
    out
}

/// `refused  host:port  reason` or `allowed  host:port  up, down  (time)`.
fn line(c: &ConnectionView) -> String {
    let target = format!("{}:{}", host_shown(&c.host), c.port);
    if is_refused(c) {
        match c.reason.as_deref().map(one_line) {
            Some(reason) if !reason.is_empty() => {
                format!("refused  {target}  {}", shorten(&reason, 200))
            }
            _ => format!("refused  {target}"),
        }
    } else {
        format!(
            "allowed  {target}  {} up, {} down  ({} ms)",
            bytes(c.bytes_up),
            bytes(c.bytes_down),
            c.duration_ms
        )
    }
}

/// The host on one line, no terminal control characters, at most [`HOST_SHOWN`]
/// characters; `(none)` when the request named none.
fn host_shown(host: &str) -> String {
    let host = one_line(host);
    if host.is_empty() {
        return "(none)".to_owned();
    }
    shorten(&host, HOST_SHOWN)
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// A byte count for a person: `512 B`, `1.2 kB`, `3.4 MB`, `1.1 GB`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["kB", "MB", "GB", "TB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn connection(host: &str, verdict: &str, reason: Option<&str>) -> ConnectionView {
        ConnectionView {
            host: host.into(),
            port: 443,
            verdict: verdict.into(),
            reason: reason.map(str::to_owned),
            bytes_up: 1200,
            bytes_down: 48_000,
            started_at: chrono::Utc::now(),
            duration_ms: 35,
        }
    }

    fn run_with(connections: Vec<ConnectionView>) -> RunDetail {
        let now = chrono::Utc::now();
        serde_json::from_value(json!({
            "id": uuid::Uuid::nil(), "sop": "fix", "sop_version": "sha256:1", "status": "failed",
            "requested_by": null, "project": null, "parent_run": null,
            "created_at": now, "updated_at": now, "params": {}, "failure": null,
            "nodes": [], "artifacts": [], "decisions": [], "schedule": null,
            "requirement_id": null, "repositories": [],
            "usage": { "run": { "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
                "cache_write_tokens": 0, "cost_usd": 0.0, "unpriced_models": [] },
                "requirement": null, "attempts": [] },
            "attempts": [
                { "node": "build", "attempt": 1, "status": "succeeded", "exit_code": 0,
                  "error": null, "started_at": now, "finished_at": now, "duration_ms": 5,
                  "tools": [], "connections": [] },
                { "node": "code", "attempt": 2, "status": "failed", "exit_code": 1,
                  "error": null, "started_at": now, "finished_at": now, "duration_ms": 5,
                  "tools": [], "connections": connections },
            ],
        }))
        .unwrap()
    }

    #[test]
    fn each_connection_is_listed_refusals_with_their_reason() {
        let run = run_with(vec![
            connection("github.com", "allowed", None),
            connection("pypi.org", "refused", Some("not in the egress allow-list")),
        ]);
        assert_eq!(
            run_section(&run),
            "network:\n  code#2: 2 connections, 1 refused\n    \
             allowed  github.com:443  1.2 kB up, 48.0 kB down  (35 ms)\n    \
             refused  pypi.org:443  not in the egress allow-list\n"
        );
        assert_eq!(run_section(&run_with(vec![])), "");
    }

    #[test]
    fn hostile_hosts_lose_their_control_characters_and_length() {
        let ansi = "evil\u{1b}[2J\u{1b}]0;pwned\u{7}\n.example";
        let long = "a".repeat(300);
        let shown = run_section(&run_with(vec![
            connection(ansi, "refused", Some("line one\nline\u{1b}[31m two")),
            connection(&long, "allowed", None),
            connection("", "refused", Some("CONNECT target `` is not host:port")),
        ]));
        assert!(
            !shown.contains('\u{1b}') && !shown.contains('\u{7}'),
            "{shown:?}"
        );
        assert!(
            shown.contains("refused  evil [2J ]0;pwned .example:443  line one line [31m two"),
            "{shown}"
        );
        assert!(
            shown.contains(&format!("{}…:443", "a".repeat(HOST_SHOWN - 1))),
            "{shown}"
        );
        assert!(!shown.contains(&"a".repeat(HOST_SHOWN)), "{shown}");
        assert!(shown.contains("refused  (none):443"), "{shown}");
        assert_eq!(shown.lines().count(), 5, "{shown}");
    }

    #[test]
    fn a_long_list_shows_the_first_refusals_and_sums_the_allowed_hosts() {
        let mut all: Vec<ConnectionView> = (0..30)
            .map(|i| {
                connection(
                    &format!("blocked{i}.example"),
                    "refused",
                    Some("not allowed"),
                )
            })
            .collect();
        all.extend((0..5).map(|_| connection("github.com", "allowed", None)));
        all.push(connection("crates.io", "allowed", None));
        let shown = run_section(&run_with(all));
        assert!(
            shown.contains("code#2: 36 connections, 30 refused\n"),
            "{shown}"
        );
        assert!(shown.contains("refused  blocked19.example:443"), "{shown}");
        assert!(!shown.contains("blocked20.example"), "{shown}");
        assert!(shown.contains("… 10 more refused\n"), "{shown}");
        let github = shown
            .find("allowed  github.com:443 ×5  6.0 kB up, 240.0 kB down")
            .unwrap();
        let crates = shown.find("allowed  crates.io:443 ×1").unwrap();
        assert!(github < crates, "the busiest host first: {shown}");
    }

    #[test]
    fn a_turn_attempt_has_its_network_under_it() {
        assert_eq!(attempt_section(&[], "        "), "");
        assert_eq!(
            attempt_section(&[connection("pypi.org", "refused", None)], "        "),
            "        network: 1 connection, 1 refused\n          refused  pypi.org:443\n"
        );
    }

    #[test]
    fn byte_counts_read_as_units() {
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(1_500), "1.5 kB");
        assert_eq!(bytes(2_000_000), "2.0 MB");
        assert_eq!(bytes(u64::MAX), "18446744.1 TB");
    }
}
