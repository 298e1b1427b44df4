//! Message bodies for the channel: the approval card (an embed with buttons and a send-back
//! menu), the progress message and plain replies. The same body creates a message and edits
//! it, so a card updated after a decision keeps its shape and loses its controls.

use gatehouse_chat::{Card, CardAction, Output, Progress, Verb};
use serde_json::{Value, json};

use crate::interactions::CONTENT_LIMIT;
use crate::text::{escape_code_block, escape_markdown, human_size, truncate};

// Discord refuses a whole message when one part is over its limit.
pub(crate) const TITLE_LIMIT: usize = 256;
pub(crate) const DESCRIPTION_LIMIT: usize = 4096;
const FIELD_NAME_LIMIT: usize = 256;
pub(crate) const FIELD_VALUE_LIMIT: usize = 1024;
/// Title, description and every field name and value of an embed, together.
pub(crate) const EMBED_TOTAL_LIMIT: usize = 6000;
const OPTION_LIMIT: usize = 100;
const SELECT_OPTIONS_LIMIT: usize = 25;
/// Outputs shown as fields; more are counted in one last field.
const OUTPUT_FIELDS: usize = 10;

pub(crate) const WAITING: u32 = 0x5865F2;
pub(crate) const APPROVED: u32 = 0x57F287;
pub(crate) const REJECTED: u32 = 0xED4245;
pub(crate) const OTHER_OUTCOME: u32 = 0x95A5A6;
const SENT_BACK: u32 = 0xFEE75C;

pub(crate) const BUTTON: u8 = 2;
pub(crate) const ACTION_ROW: u8 = 1;
const STRING_SELECT: u8 = 3;
pub(crate) const SUCCESS: u8 = 3;
pub(crate) const DANGER: u8 = 4;

/// The approval card for one gate attempt: while undecided it carries Approve and Reject
/// buttons and, when the gate allows it, a "Send back to…" menu; once decided it shows the
/// outcome and no controls, so an edit with this body retires the buttons.
pub fn card_message(card: &Card) -> Value {
    let title = truncate(&card.title(), TITLE_LIMIT);
    let description = truncate(&card_description(card), DESCRIPTION_LIMIT);
    let mut fields = Vec::new();
    let mut color = WAITING;
    if let Some(outcome) = &card.outcome {
        let mut value = escape_markdown(&outcome.sentence());
        if let Some(comment) = outcome.comment.as_deref().filter(|c| !c.trim().is_empty()) {
            value.push_str("\n> ");
            value.push_str(&escape_markdown(comment).replace('\n', "\n> "));
        }
        fields.push(field("Decision", &value));
        color = outcome_color(&outcome.decision);
    }
    let used = count(&title) + count(&description) + fields.iter().map(field_size).sum::<usize>();
    fields.extend(output_fields(
        &card.outputs,
        EMBED_TOTAL_LIMIT.saturating_sub(used),
    ));

    let mut embed = json!({
        "title": title,
        "description": description,
        "color": color,
        "fields": fields,
    });
    if let Some(url) = &card.requirement_url {
        embed["url"] = json!(url);
    }
    json!({
        "content": "",
        "embeds": [embed],
        "components": if card.outcome.is_none() { controls(card) } else { json!([]) },
        "allowed_mentions": {"parse": []},
    })
}

fn card_description(card: &Card) -> String {
    let mut lines = Vec::new();
    if let Some(requirement) = &card.requirement {
        lines.push(format!("**Requirement:** {}", escape_markdown(requirement)));
    }
    let run = match &card.run_url {
        Some(url) => format!("[{}]({url})", card.run),
        None => format!("`{}`", card.run),
    };
    lines.push(format!(
        "**Run:** {run} ({}) · attempt {}",
        escape_markdown(&card.sop),
        card.attempt
    ));
    if let Some(question) = card.question() {
        lines.push(escape_markdown(&question));
    }
    lines.push(format!(
        "**Who may decide:** {}",
        escape_markdown(&card.deciders())
    ));
    lines.join("\n")
}

fn outcome_color(decision: &str) -> u32 {
    if decision.starts_with("approved") {
        APPROVED
    } else if decision.starts_with("rejected") {
        REJECTED
    } else if decision.starts_with("sent back") {
        SENT_BACK
    } else {
        OTHER_OUTCOME
    }
}

/// One field per output, each excerpt cut so that all of them fit in `budget` characters.
fn output_fields(outputs: &[Output], budget: usize) -> Vec<Value> {
    // "\n```\n" before an excerpt and "\n```" after it.
    const FENCE: usize = 9;
    const SHORTEST_EXCERPT: usize = 10;
    // Room for the "and N more" field, whether or not it is needed.
    const MORE: usize = 40;
    let shown = &outputs[..outputs.len().min(OUTPUT_FIELDS)];
    let mut budget = budget.saturating_sub(MORE);
    let mut fields = Vec::new();
    for (i, output) in shown.iter().enumerate() {
        let name = truncate(&output.name, FIELD_NAME_LIMIT);
        let size = human_size(output.size);
        // What is left is shared between this output and the ones after it.
        let share = budget / (shown.len() - i);
        let Some(room) = share.checked_sub(count(&name)) else {
            break;
        };
        let room = room.min(FIELD_VALUE_LIMIT);
        if room < count(&size) {
            break;
        }
        let excerpt_room = room - count(&size);
        let value = match output.excerpt.as_deref() {
            Some(excerpt)
                if !excerpt.trim().is_empty() && excerpt_room >= FENCE + SHORTEST_EXCERPT =>
            {
                let excerpt =
                    truncate(&escape_code_block(excerpt.trim_end()), excerpt_room - FENCE);
                format!("{size}\n```\n{excerpt}\n```")
            }
            _ => size,
        };
        let field = json!({"name": name, "value": value, "inline": false});
        budget -= field_size(&field);
        fields.push(field);
    }
    if fields.len() < outputs.len() {
        let more = format!("and {} more", outputs.len() - fields.len());
        fields.push(field("More outputs", &more));
    }
    fields
}

fn controls(card: &Card) -> Value {
    let action = |verb| CardAction::new(verb, card.run, &card.node, card.attempt).encode();
    let mut rows = vec![json!({
        "type": ACTION_ROW,
        "components": [
            {"type": BUTTON, "style": SUCCESS, "label": "Approve", "custom_id": action(Verb::Approve)},
            {"type": BUTTON, "style": DANGER, "label": "Reject", "custom_id": action(Verb::Reject)},
        ]
    })];
    if !card.send_back.is_empty() {
        let options: Vec<Value> = card
            .send_back
            .iter()
            .take(SELECT_OPTIONS_LIMIT)
            .map(|target| {
                let target = truncate(target, OPTION_LIMIT);
                json!({"label": target, "value": target})
            })
            .collect();
        rows.push(json!({
            "type": ACTION_ROW,
            "components": [{
                "type": STRING_SELECT,
                "custom_id": action(Verb::SendBack),
                "placeholder": "Send back to…",
                "min_values": 1,
                "max_values": 1,
                "options": options,
            }]
        }));
    }
    Value::Array(rows)
}

/// A run's progress in the requirement's thread: one message, edited as the run moves.
pub fn progress_message(progress: &Progress) -> Value {
    let lines: Vec<String> = progress.lines.iter().map(|l| escape_markdown(l)).collect();
    let mut embed = json!({
        "title": truncate(&progress.headline(), TITLE_LIMIT),
        "description": truncate(&lines.join("\n"), DESCRIPTION_LIMIT),
        "color": status_color(&progress.status),
    });
    if let Some(url) = &progress.run_url {
        embed["url"] = json!(url);
    }
    json!({
        "content": "",
        "embeds": [embed],
        "allowed_mentions": {"parse": []},
    })
}

fn status_color(status: &str) -> u32 {
    match status {
        "succeeded" => APPROVED,
        "failed" => REJECTED,
        "cancelled" => OTHER_OUTCOME,
        "waiting" | "paused" => SENT_BACK,
        _ => WAITING,
    }
}

/// A plain reply (acknowledgements, errors) in Gatehouse's own words, whose `code` and
/// *bold* render as markdown; cut to Discord's 2000 characters, and nothing in it pings
/// anyone, even a quoted `@everyone`.
pub fn text_message(text: &str) -> Value {
    json!({
        "content": truncate(text, CONTENT_LIMIT),
        "allowed_mentions": {"parse": []},
    })
}

pub(crate) fn field(name: &str, value: &str) -> Value {
    json!({
        "name": truncate(name, FIELD_NAME_LIMIT),
        "value": truncate(value, FIELD_VALUE_LIMIT),
        "inline": false,
    })
}

pub(crate) fn field_size(field: &Value) -> usize {
    count(field["name"].as_str().unwrap_or("")) + count(field["value"].as_str().unwrap_or(""))
}

pub(crate) fn count(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use gatehouse_chat::Outcome;

    use super::*;

    fn card() -> Card {
        Card {
            run: "0192f0c1-7a2b-7c3d-8e4f-001122334455".parse().unwrap(),
            sop: "bug-fix".into(),
            node: "review".into(),
            attempt: 2,
            requirement: Some("Fix *login* for @everyone".into()),
            requirement_url: Some("https://github.com/acme/api/issues/42".into()),
            run_url: Some("https://gatehouse.example/runs/0192f0c1".into()),
            outputs: vec![Output {
                name: "build/patch.diff".into(),
                size: 1536,
                excerpt: Some("--- a/login.rs\n+++ b/login.rs".into()),
            }],
            approvers: vec!["group:leads".into()],
            min_approvals: 1,
            approvals: vec![],
            send_back: vec!["build".into(), "plan".into()],
            outcome: None,
            raise: None,
            feedback: None,
        }
    }

    fn action(verb: Verb) -> String {
        let c = card();
        CardAction::new(verb, c.run, &c.node, c.attempt).encode()
    }

    fn embed_size(embed: &Value) -> usize {
        count(embed["title"].as_str().unwrap())
            + count(embed["description"].as_str().unwrap())
            + embed["fields"]
                .as_array()
                .unwrap()
                .iter()
                .map(field_size)
                .sum::<usize>()
    }

    #[test]
    fn an_open_card() {
        let body = card_message(&card());
        let embed = &body["embeds"][0];
        assert_eq!(
            embed["title"],
            "Approval needed: review — Fix *login* for @everyone"
        );
        assert_eq!(embed["url"], "https://github.com/acme/api/issues/42");
        let description = embed["description"].as_str().unwrap();
        assert!(
            description.contains("Fix \\*login\\* for @everyone"),
            "{description}"
        );
        assert!(description.contains(
            "[0192f0c1-7a2b-7c3d-8e4f-001122334455](https://gatehouse.example/runs/0192f0c1)"
        ));
        assert!(description.contains("attempt 2"), "{description}");
        assert!(
            description.contains("**Who may decide:** group:leads"),
            "{description}"
        );
        assert_eq!(embed["fields"][0]["name"], "build/patch.diff");
        assert_eq!(
            embed["fields"][0]["value"],
            "1.5 KiB\n```\n--- a/login.rs\n+++ b/login.rs\n```"
        );
        assert_eq!(body["allowed_mentions"], json!({"parse": []}));

        let buttons = &body["components"][0]["components"];
        assert_eq!(buttons[0]["label"], "Approve");
        assert_eq!(buttons[0]["style"], 3);
        assert_eq!(buttons[0]["custom_id"], action(Verb::Approve));
        assert_eq!(buttons[1]["label"], "Reject");
        assert_eq!(buttons[1]["style"], 4);
        assert_eq!(buttons[1]["custom_id"], action(Verb::Reject));
        let select = &body["components"][1]["components"][0];
        assert_eq!(select["type"], 3);
        assert_eq!(select["custom_id"], action(Verb::SendBack));
        assert_eq!(select["placeholder"], "Send back to…");
        assert_eq!(
            select["options"][1],
            json!({"label": "plan", "value": "plan"})
        );
        assert_eq!(body["components"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn no_send_back_no_menu() {
        let mut c = card();
        c.send_back.clear();
        c.requirement_url = None;
        c.run_url = None;
        let body = card_message(&c);
        assert_eq!(body["components"].as_array().unwrap().len(), 1);
        assert!(body["embeds"][0].get("url").is_none());
        let description = body["embeds"][0]["description"].as_str().unwrap();
        assert!(
            description.contains("`0192f0c1-7a2b-7c3d-8e4f-001122334455`"),
            "{description}"
        );
    }

    #[test]
    fn a_decided_card_has_no_controls() {
        let mut c = card();
        c.outcome = Some(Outcome {
            decision: "sent back to build".into(),
            by: vec!["ana".into()],
            at: "2026-11-30T14:02:09Z".parse().unwrap(),
            comment: Some("name the error budget\nand the owner".into()),
        });
        let body = card_message(&c);
        assert_eq!(body["components"], json!([]));
        let decision = &body["embeds"][0]["fields"][0];
        assert_eq!(decision["name"], "Decision");
        assert_eq!(
            decision["value"],
            "Sent back to build by ana at 2026-11-30 14:02 UTC\n> name the error budget\n> and the owner"
        );
        assert_eq!(body["embeds"][0]["color"], SENT_BACK);
    }

    #[test]
    fn big_cards_fit_discords_limits() {
        let mut c = card();
        c.requirement = Some("r".repeat(5000));
        c.outputs = (0..30)
            .map(|i| Output {
                name: format!("{i}/{}", "n".repeat(300)),
                size: 10 << 20,
                excerpt: Some("line ``` of text\n".repeat(500)),
            })
            .collect();
        c.send_back = (0..40).map(|i| format!("node-{i}")).collect();
        let body = card_message(&c);
        let embed = &body["embeds"][0];
        assert_eq!(count(embed["title"].as_str().unwrap()), 256);
        assert!(count(embed["description"].as_str().unwrap()) <= 4096);
        let fields = embed["fields"].as_array().unwrap();
        assert!(fields.len() <= 25);
        for f in fields {
            assert!(count(f["name"].as_str().unwrap()) <= 256);
            let value = f["value"].as_str().unwrap();
            assert!(count(value) <= 1024);
            assert_eq!(value.matches("```").count() % 2, 0, "{value}");
        }
        let more = fields.last().unwrap()["value"].as_str().unwrap();
        assert_eq!(more, format!("and {} more", 30 - (fields.len() - 1)));
        assert!(embed_size(embed) <= 6000, "{}", embed_size(embed));
        assert_eq!(
            body["components"][1]["components"][0]["options"]
                .as_array()
                .unwrap()
                .len(),
            25
        );
    }

    #[test]
    fn many_modest_outputs_share_the_embed() {
        let mut c = card();
        c.outputs = (0..10)
            .map(|i| Output {
                name: format!("build/out{i}.log"),
                size: 900,
                excerpt: Some("x".repeat(2000)),
            })
            .collect();
        let embed = &card_message(&c)["embeds"][0];
        let fields = embed["fields"].as_array().unwrap();
        assert_eq!(fields.len(), 10);
        assert!(
            fields
                .iter()
                .all(|f| f["value"].as_str().unwrap().contains("```"))
        );
        assert!(embed_size(embed) <= 6000, "{}", embed_size(embed));
    }

    #[test]
    fn progress_and_text() {
        let progress = Progress {
            run: "0192f0c1-7a2b-7c3d-8e4f-001122334455".parse().unwrap(),
            sop: "bug-fix".into(),
            status: "waiting".into(),
            lines: vec![
                "build: succeeded".into(),
                "review: waiting for approval".into(),
            ],
            run_url: Some("https://gatehouse.example/runs/1".into()),
        };
        let body = progress_message(&progress);
        let embed = &body["embeds"][0];
        assert_eq!(embed["title"], progress.headline());
        assert_eq!(
            embed["description"],
            "build: succeeded\nreview: waiting for approval"
        );
        assert_eq!(embed["url"], "https://gatehouse.example/runs/1");
        assert_eq!(body["allowed_mentions"], json!({"parse": []}));

        let text = text_message("started `run_1` for @everyone");
        assert_eq!(text["content"], "started `run_1` for @everyone");
        assert_eq!(text["allowed_mentions"], json!({"parse": []}));
        assert_eq!(
            count(text_message(&"y".repeat(5000))["content"].as_str().unwrap()),
            2000
        );
    }
}
