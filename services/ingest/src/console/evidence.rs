//! A waiting gate's evidence where it is decided: the artifacts its SOP names (`evidence`,
//! or what the nodes it needs keep), each the latest attempt's. Small text and Markdown
//! is shown in the card (Markdown rendered and sanitised), bounded in size and in how many
//! cards show it, so the inbox stays one page of reads; the rest is linked.

use maud::{Markup, PreEscaped, html};
use uuid::Uuid;

use super::markdown::to_safe_html;
use crate::ApiState;
use crate::api::artifacts::bytes_of;
use gatehouse_store::ArtifactRow;

/// Larger files are linked, not shown in the card.
const SHOWN_AT_MOST: i64 = 16 * 1024;
/// Only the first this many cards of a page show their evidence's text.
pub(crate) const CARDS_SHOWING_TEXT: usize = 10;

/// One entry of a gate's evidence.
pub(crate) enum Evidence {
    /// Named by the SOP, not (yet) written by its node.
    Missing { node: String, name: String },
    /// Linked; `text` is shown too when it is small text.
    Found {
        row: ArtifactRow,
        text: Option<String>,
    },
}

/// The evidence of a gate whose SOP names `entries` (`NODE/FILE`), from the run's
/// `artifacts`; the text of small text files is read when `with_text`.
pub(crate) async fn gather(
    api: &ApiState,
    entries: &[String],
    artifacts: &[&ArtifactRow],
    with_text: bool,
) -> Vec<Evidence> {
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        let (node, name) = entry.split_once('/').unwrap_or(("", entry.as_str()));
        let latest = artifacts
            .iter()
            .filter(|a| a.node == node && a.name == name)
            .max_by_key(|a| a.attempt);
        let Some(row) = latest else {
            out.push(Evidence::Missing {
                node: node.to_owned(),
                name: name.to_owned(),
            });
            continue;
        };
        let text = if with_text && row.size <= SHOWN_AT_MOST && is_text(&row.name) {
            // A file that cannot be read now is still linked; its page says why.
            bytes_of(api, row)
                .await
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
        } else {
            None
        };
        out.push(Evidence::Found {
            row: (*row).clone(),
            text,
        });
    }
    out
}

/// Names shown as text.
fn is_text(name: &str) -> bool {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    matches!(
        ext.as_deref(),
        Some(
            "md" | "markdown"
                | "txt"
                | "log"
                | "json"
                | "yaml"
                | "yml"
                | "toml"
                | "csv"
                | "diff"
                | "patch"
        )
    )
}

fn is_markdown(name: &str) -> bool {
    name.ends_with(".md") || name.ends_with(".markdown")
}

/// The evidence as a list: each file linked (with its node, attempt and size), small text
/// shown below its link.
pub(crate) fn render(run: Uuid, evidence: &[Evidence]) -> Markup {
    html! {
        @if !evidence.is_empty() {
            div.evidence {
                h4 { "Evidence" }
                ul {
                    @for e in evidence {
                        @match e {
                            Evidence::Missing { node, name } => li.missing {
                                code { (name) } " of " (node) " — not written"
                            },
                            Evidence::Found { row, text } => li {
                                a href=(format!("/runs/{run}/artifacts/{}/{}/{}", row.node, row.attempt, row.name)) { (row.name) }
                                span.meta { " · " (row.node) " attempt " (row.attempt) " · " (size(row.size)) }
                                @if let Some(text) = text {
                                    @if is_markdown(&row.name) {
                                        article.markdown.shown { (PreEscaped(to_safe_html(text))) }
                                    } @else {
                                        pre.shown tabindex="0" { (text) }
                                    }
                                }
                            },
                        }
                    }
                }
            }
        }
    }
}

/// Bytes as people read them.
fn size(bytes: i64) -> String {
    match bytes {
        ..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KiB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MiB", bytes as f64 / 1_048_576.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_told_by_its_name() {
        assert!(is_text("notes.md") && is_text("logs/test.LOG") && is_text("a.diff"));
        assert!(!is_text("build.tar.gz") && !is_text("Makefile") && !is_text("x.html"));
    }

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(size(900), "900 B");
        assert_eq!(size(2048), "2.0 KiB");
        assert_eq!(size(3 * 1_048_576), "3.0 MiB");
    }
}
