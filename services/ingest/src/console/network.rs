//! The "Network" section of a run's and a conversation's page: every connection their
//! attempts' sandboxes made through the egress proxy, the refused ones first with their
//! reason, then the allowed ones with their bytes. Hosts are untrusted text: escaped by
//! maud, stripped of control characters and shortened (the whole host in the title).

use maud::{Markup, html};

use super::page::{duration, time};
use crate::views::ConnectionView;

/// Most rows drawn; the API has the rest.
const ROWS_SHOWN: usize = 300;

/// Longest host drawn, in characters.
const HOST_SHOWN: usize = 120;

/// The section for `attempts`, each an attempt's label (`code #2`, `turn 3 #1`) with its
/// connections; `all_at` is where the API lists them all.
pub(super) fn section(attempts: &[(String, &[ConnectionView])], all_at: &str) -> Markup {
    let mut rows: Vec<(&str, &ConnectionView)> = attempts
        .iter()
        .flat_map(|(label, list)| list.iter().map(move |c| (label.as_str(), c)))
        .collect();
    let total = rows.len();
    let refused = rows.iter().filter(|(_, c)| is_refused(c)).count();
    // Refused first; each group keeps the attempts' order and start order.
    rows.sort_by_key(|(_, c)| !is_refused(c));
    html! {
        section id="network" aria-labelledby="network-h" {
            h2 id="network-h" { "Network" }
            @if rows.is_empty() {
                p.empty { "No connections through the egress proxy." }
            } @else {
                p.meta {
                    (total) @if total == 1 { " connection" } @else { " connections" }
                    " through the egress proxy, " (refused) " refused"
                }
                table.network {
                    caption { "Connections, refused first" }
                    thead { tr { th { "Attempt" } th { "Verdict" } th { "Host" } th { "Port" } th { "Up" } th { "Down" } th { "Started" } th { "Took" } th { "Reason" } } }
                    tbody {
                        @for (label, c) in rows.iter().take(ROWS_SHOWN) {
                            tr class=(if is_refused(c) { "refused" } else { "allowed" }) {
                                td { (label) }
                                td { span class=(format!("status status-{}", if is_refused(c) { "failed" } else { "succeeded" })) { (c.verdict) } }
                                td { code title=(clean(&c.host)) { (host_shown(&c.host)) } }
                                td { (c.port) }
                                td { (bytes(c.bytes_up)) }
                                td { (bytes(c.bytes_down)) }
                                td { (time(&c.started_at)) }
                                td { (duration(i64::try_from(c.duration_ms).unwrap_or(i64::MAX))) }
                                td { @if let Some(reason) = &c.reason { (clean(reason)) } }
                            }
                        }
                    }
                }
                @if total > ROWS_SHOWN {
                    p.aside { "The first " (ROWS_SHOWN) " of " (total) " are shown; " code { "GET " (all_at) } " lists them all." }
                }
            }
        }
    }
}

fn is_refused(c: &ConnectionView) -> bool {
    c.verdict != "allowed"
}

/// Text without control characters (a terminal escape means nothing here).
fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The host as drawn: clean, at most [`HOST_SHOWN`] characters, `(none)` when empty.
fn host_shown(host: &str) -> String {
    let host = clean(host);
    if host.is_empty() {
        return "(none)".to_owned();
    }
    if host.chars().count() <= HOST_SHOWN {
        return host;
    }
    let kept: String = host.chars().take(HOST_SHOWN - 1).collect();
    format!("{kept}…")
}

/// Bytes in B, kB or MB.
fn bytes(n: u64) -> String {
    match n {
        ..1_000 => format!("{n} B"),
        1_000..1_000_000 => format!("{:.1} kB", n as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} MB", n as f64 / 1e6),
        _ => format!("{:.1} GB", n as f64 / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection(host: &str, verdict: &str, reason: Option<&str>) -> ConnectionView {
        ConnectionView {
            host: host.into(),
            port: 443,
            verdict: verdict.into(),
            reason: reason.map(str::to_owned),
            bytes_up: 1_200,
            bytes_down: 48_000,
            started_at: chrono::Utc::now(),
            duration_ms: 35,
        }
    }

    #[test]
    fn refused_rows_come_first_with_their_reason() {
        let first = [connection("github.com", "allowed", None)];
        let second = [connection(
            "pypi.org",
            "refused",
            Some("not in the egress allow-list"),
        )];
        let html = section(
            &[
                ("code #1".into(), &first[..]),
                ("code #2".into(), &second[..]),
            ],
            "/api/v1/runs/x",
        )
        .into_string();
        assert!(
            html.contains("2 connections through the egress proxy, 1 refused"),
            "{html}"
        );
        let pypi = html.find("pypi.org").unwrap();
        let github = html.find("github.com").unwrap();
        assert!(pypi < github, "refused first: {html}");
        assert!(
            html.contains(r#"<tr class="refused"><td>code #2</td>"#),
            "{html}"
        );
        assert!(
            html.contains("<td>not in the egress allow-list</td>"),
            "{html}"
        );
        assert!(html.contains("<td>48.0 kB</td>"), "{html}");
        let empty = section(&[], "/api/v1/runs/x").into_string();
        assert!(
            empty.contains("No connections through the egress proxy."),
            "{empty}"
        );
    }

    #[test]
    fn hostile_hosts_and_reasons_are_escaped_cleaned_and_shortened() {
        let long = format!("{}.example", "a".repeat(5_000));
        let rows = [
            connection(
                "<script>alert(1)</script>\u{1b}[31m\"onmouseover=x",
                "refused",
                Some("<img src=x onerror=alert(1)>\u{7}"),
            ),
            connection(&long, "allowed", None),
            connection("", "refused", None),
        ];
        let html = section(&[("turn 1 #1".into(), &rows[..])], "/api/v1/x").into_string();
        assert!(
            !html.contains("<script>") && !html.contains("<img"),
            "{html}"
        );
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt; [31m&quot;onmouseover=x"),
            "{html}"
        );
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt; "),
            "{html}"
        );
        assert!(
            !html.contains('\u{1b}') && !html.contains('\u{7}'),
            "{html}"
        );
        assert!(
            html.contains(&format!(">{}…</code>", "a".repeat(HOST_SHOWN - 1))),
            "{html}"
        );
        assert!(html.contains(">(none)</code>"), "{html}");
    }

    #[test]
    fn a_long_list_is_cut_and_says_where_the_rest_is() {
        let many: Vec<ConnectionView> = (0..ROWS_SHOWN + 5)
            .map(|i| connection(&format!("h{i}.example"), "allowed", None))
            .collect();
        let html = section(&[("code #1".into(), &many[..])], "/api/v1/runs/r").into_string();
        assert_eq!(html.matches("<tr class=\"allowed\">").count(), ROWS_SHOWN);
        assert!(
            html.contains(&format!(
                "The first {ROWS_SHOWN} of {} are shown",
                ROWS_SHOWN + 5
            )),
            "{html}"
        );
        assert!(html.contains("GET /api/v1/runs/r"), "{html}");
    }
}
