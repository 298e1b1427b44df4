//! How a stored delivery is shown: its event with the action, the sentence saying what
//! became of it, what it links to, and its payload made safe to read.

use gatehouse_store::{DeliveryOutcome, DeliveryRow};
use serde_json::Value;
use uuid::Uuid;

use super::views::DeliverySummary;

/// The most of a payload shown.
pub(crate) const PAYLOAD_MAX: usize = 64 * 1024;

/// Fields of a body that let whoever holds them act (Discord's interaction token, Slack's
/// verification token, reply URL and dialog trigger): masked wherever they are.
const MASKED: [&str; 4] = ["token", "response_url", "response_urls", "trigger_id"];

pub(crate) fn summary(row: &DeliveryRow) -> DeliverySummary {
    let outcome = DeliveryOutcome::of(row);
    let (runs, conversations) = links(row.note.as_deref().unwrap_or_default());
    DeliverySummary {
        id: format!("{}:{}", row.source, row.delivery_id),
        source: row.source.clone(),
        delivery_id: row.delivery_id.clone(),
        event: event(row),
        received_at: row.received_at,
        processed_at: row.processed_at,
        status: outcome.as_str().to_owned(),
        outcome: sentence(row, outcome),
        project: row.project.clone(),
        runs,
        conversations,
    }
}

/// What became of it, in words.
fn sentence(row: &DeliveryRow, outcome: DeliveryOutcome) -> String {
    let note = row.note.as_deref().map(str::trim).unwrap_or_default();
    match outcome {
        DeliveryOutcome::Pending => "waiting to be processed".to_owned(),
        DeliveryOutcome::Failed => format!(
            "processing failed, and it will be tried again: {}",
            row.error.as_deref().unwrap_or_default()
        ),
        DeliveryOutcome::Processed if note.is_empty() => "processed; nothing to report".into(),
        DeliveryOutcome::Ignored if note.is_empty() => "ignored".into(),
        DeliveryOutcome::Processed | DeliveryOutcome::Ignored => note.to_owned(),
    }
}

/// The event with what happened in it: GitHub's `action` (`issues.labeled`), Slack's
/// event type (`event.app_mention`); the stored name when the body says nothing more.
fn event(row: &DeliveryRow) -> String {
    let Some(body) = json(&row.body) else {
        return row.event.clone();
    };
    let detail = match row.source.as_str() {
        "github" => body.get("action"),
        "slack" if row.event == "event" => body.pointer("/event/type"),
        _ => None,
    };
    match detail.and_then(Value::as_str) {
        Some(detail) if !detail.is_empty() => format!("{}.{detail}", row.event),
        _ => row.event.clone(),
    }
}

/// The runs and conversations a note names (`started `fix` as run 0190…`, `opened
/// conversation 0190…`), each once, in order.
pub(crate) fn links(note: &str) -> (Vec<Uuid>, Vec<Uuid>) {
    let (mut runs, mut conversations) = (Vec::new(), Vec::new());
    let words: Vec<&str> = note.split_whitespace().collect();
    for pair in words.windows(2) {
        let id = pair[1].trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-');
        let Ok(id) = id.parse::<Uuid>() else {
            continue;
        };
        let list = match pair[0] {
            "run" => &mut runs,
            "conversation" => &mut conversations,
            _ => continue,
        };
        if !list.contains(&id) {
            list.push(id);
        }
    }
    (runs, conversations)
}

/// The body as JSON: itself, or the `payload` field of a form (Slack's interactions).
fn json(body: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str(body) {
        return Some(value);
    }
    url::form_urlencoded::parse(body.as_bytes())
        .find(|(name, _)| name == "payload")
        .and_then(|(_, payload)| serde_json::from_str(&payload).ok())
}

/// The payload to read: pretty JSON with its tokens masked, or the text as received
/// when it is not JSON; cut at [`PAYLOAD_MAX`] bytes.
pub(crate) fn payload(body: &str) -> String {
    let text = match json(body) {
        Some(mut value) => {
            mask(&mut value);
            serde_json::to_string_pretty(&value).unwrap_or_default()
        }
        None => body.to_owned(),
    };
    if text.len() <= PAYLOAD_MAX {
        return text;
    }
    let mut end = PAYLOAD_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… (cut: {} bytes in all)", &text[..end], text.len())
}

fn mask(value: &mut Value) {
    match value {
        Value::Object(fields) => {
            for (name, field) in fields.iter_mut() {
                if MASKED.contains(&name.as_str()) && !field.is_null() {
                    *field = Value::String("(masked)".into());
                } else {
                    mask(field);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use gatehouse_store::DeliveryStatus;

    fn row(source: &str, event: &str, body: &str) -> DeliveryRow {
        DeliveryRow {
            source: source.into(),
            delivery_id: "d1".into(),
            event: event.into(),
            body: body.into(),
            status: DeliveryStatus::Pending,
            note: None,
            received_at: Utc::now(),
            processed_at: None,
            project: None,
            error: None,
        }
    }

    #[test]
    fn tokens_are_masked_however_deep_and_forms_are_read() {
        let discord = payload(r#"{"id":"1","token":"secret-1","data":{"token":"secret-2"}}"#);
        assert!(!discord.contains("secret"), "{discord}");
        assert!(discord.contains("(masked)"), "{discord}");
        let form = "payload=%7B%22type%22%3A%22block_actions%22%2C%22response_url%22%3A%22https%3A%2F%2Fhooks.slack.com%2Fsecret%22%7D";
        let slack = payload(form);
        assert!(
            slack.contains("block_actions") && !slack.contains("hooks.slack.com"),
            "{slack}"
        );
    }

    #[test]
    fn a_long_payload_is_cut_on_a_character() {
        let body = format!("\"{}\"", "é".repeat(PAYLOAD_MAX));
        let shown = payload(&body);
        assert!(shown.len() < PAYLOAD_MAX + 100);
        assert!(
            shown.ends_with(&format!("(cut: {} bytes in all)", body.len())),
            "{}",
            shown.chars().rev().take(40).collect::<String>()
        );
    }

    #[test]
    fn events_carry_their_action() {
        assert_eq!(
            event(&row("github", "issues", r#"{"action":"labeled"}"#)),
            "issues.labeled"
        );
        assert_eq!(event(&row("github", "ping", r#"{"zen":"x"}"#)), "ping");
        let mention = r#"{"event":{"type":"app_mention"}}"#;
        assert_eq!(event(&row("slack", "event", mention)), "event.app_mention");
        assert_eq!(event(&row("github", "issues", "not json")), "issues");
    }

    #[test]
    fn notes_link_the_runs_and_conversations_they_name() {
        let run = Uuid::now_v7();
        let conversation = Uuid::now_v7();
        let note = format!(
            "started `fix` as run {run}; label removed: cancelling run {run}; opened conversation {conversation} on the issue; issue 12 labeled"
        );
        assert_eq!(links(&note), (vec![run], vec![conversation]));
        assert_eq!(links("ignored: not a run"), (vec![], vec![]));
    }

    #[test]
    fn the_sentence_says_what_a_failure_or_a_wait_is() {
        let mut r = row("github", "issues", "{}");
        assert_eq!(summary(&r).status, "pending");
        r.error = Some("database away".into());
        let s = summary(&r);
        assert_eq!(s.status, "failed");
        assert!(s.outcome.ends_with("database away"), "{}", s.outcome);
    }
}
