//! The client verbs `delivery list` and `delivery show`: every webhook and chat event
//! Gatehouse received, and what became of it — the answer to "why did nothing happen?".

use gatehouse_ingest::views::{DeliveryDetail, DeliverySummary};

use crate::cli::args::DeliveryCommand;
use crate::cli::client::{Client, path_segment};
use crate::cli::runs::{one_line, print};

/// The width a table is cut to when the output is no terminal.
const WIDTH_ELSEWHERE: usize = 160;

pub async fn delivery(
    client: &Client,
    command: DeliveryCommand,
    as_json: bool,
) -> anyhow::Result<()> {
    match command {
        DeliveryCommand::List {
            source,
            outcome,
            limit,
        } => {
            let mut query = Vec::new();
            if let Some(source) = source {
                query.push(format!("source={}", path_segment(&source)));
            }
            if let Some(outcome) = outcome {
                query.push(format!("outcome={}", path_segment(&outcome)));
            }
            if let Some(limit) = limit {
                query.push(format!("limit={limit}"));
            }
            let path = match query.is_empty() {
                true => "/deliveries".to_owned(),
                false => format!("/deliveries?{}", query.join("&")),
            };
            let deliveries: Vec<DeliverySummary> = client.get(&path).await?;
            let width =
                terminal_size::terminal_size().map_or(WIDTH_ELSEWHERE, |(w, _)| usize::from(w.0));
            print(as_json, &deliveries, || table(&deliveries, width))
        }
        DeliveryCommand::Show { id } => {
            let detail: DeliveryDetail = client
                .get(&format!("/deliveries/{}", path_segment(&id)))
                .await?;
            print(as_json, &detail, || describe(&detail))
        }
    }
}

/// One line per delivery, each cut to `width` characters.
fn table(deliveries: &[DeliverySummary], width: usize) -> String {
    if deliveries.is_empty() {
        return "no deliveries".to_owned();
    }
    let mut lines = vec![format!(
        "{:<19}  {:<7}  {:<28}  {:<9}  {:<40}  WHAT BECAME OF IT",
        "WHEN", "SOURCE", "EVENT", "OUTCOME", "ID"
    )];
    for d in deliveries {
        lines.push(format!(
            "{:<19}  {:<7}  {:<28}  {:<9}  {:<40}  {}",
            d.received_at.format("%Y-%m-%d %H:%M:%S"),
            d.source,
            one_line(&d.event),
            d.status,
            one_line(&d.id),
            one_line(&d.outcome)
        ));
    }
    lines
        .iter()
        .map(|line| cut(line, width))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `line` in at most `width` characters, ending in `…` when cut.
fn cut(line: &str, width: usize) -> String {
    if line.chars().count() <= width {
        return line.trim_end().to_owned();
    }
    let kept: String = line.chars().take(width.saturating_sub(1)).collect();
    format!("{kept}…")
}

fn describe(detail: &DeliveryDetail) -> String {
    let d = &detail.delivery;
    let mut out = format!(
        "delivery {} · {} · {}\n  received {}\n",
        d.id,
        one_line(&d.event),
        d.status,
        d.received_at.format("%Y-%m-%d %H:%M:%S UTC")
    );
    if let Some(at) = d.processed_at {
        out.push_str(&format!(
            "  processed {}\n",
            at.format("%Y-%m-%d %H:%M:%S UTC")
        ));
    }
    if let Some(project) = &d.project {
        out.push_str(&format!("  project {project}\n"));
    }
    out.push_str(&format!("what became of it:\n  {}\n", one_line(&d.outcome)));
    for run in &d.runs {
        out.push_str(&format!("  run {run} (gatehouse run show {run})\n"));
    }
    for c in &d.conversations {
        out.push_str(&format!(
            "  conversation {c} (gatehouse conversation show {c})\n"
        ));
    }
    match (&detail.payload, &detail.payload_withheld) {
        (Some(payload), _) => out.push_str(&format!("payload:\n{}", scrubbed(payload))),
        (None, Some(why)) => out.push_str(&format!("payload withheld: {why}")),
        (None, None) => {}
    }
    out.trim_end().to_owned()
}

/// Text from outside (a payload) with terminal control characters but line breaks and
/// tabs shown as `?`, so it cannot move the cursor or recolour the terminal.
fn scrubbed(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\n' | '\t' => c,
            c if c.is_control() => '?',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn delivery(outcome: &str) -> DeliverySummary {
        DeliverySummary {
            id: "github:d-1".into(),
            source: "github".into(),
            delivery_id: "d-1".into(),
            event: "issues.labeled".into(),
            received_at: Utc::now(),
            processed_at: None,
            status: "ignored".into(),
            outcome: outcome.into(),
            project: None,
            runs: Vec::new(),
            conversations: Vec::new(),
        }
    }

    #[test]
    fn a_table_is_cut_to_the_width() {
        let long = "label `wontfix` starts nothing: no trigger names it for acme/api".repeat(3);
        let shown = table(&[delivery(&long)], 100);
        for line in shown.lines() {
            assert!(line.chars().count() <= 100, "{line}");
        }
        assert!(shown.lines().nth(1).unwrap().ends_with('…'));
        let wide = table(&[delivery("ping: checking")], 400);
        assert!(wide.ends_with("ping: checking"), "{wide}");
    }

    #[test]
    fn a_payload_cannot_drive_the_terminal() {
        let detail = DeliveryDetail {
            delivery: delivery("ignored\x1b[2J"),
            payload: Some("{\n\t\"x\": \"\x1b]0;owned\x07\"\n}".into()),
            payload_withheld: None,
        };
        let shown = describe(&detail);
        assert!(
            !shown.contains('\x1b') && !shown.contains('\x07'),
            "{shown:?}"
        );
        assert!(shown.contains("\n\t\"x\""));
    }
}
