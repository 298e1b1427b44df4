//! Block Kit renderings of Gatehouse's chat values: the approval card, the send-back
//! modal, the progress message and plain replies. Built as JSON so a message round-trips
//! to Slack exactly as written, whatever Block Kit features slack-morphism models.

use gatehouse_chat::{Card, CardAction, Output, Progress, Verb};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Outputs shown on a card; the rest are counted, not listed, to stay well inside Slack's
/// 50-block and 3000-character section limits.
const MAX_OUTPUTS: usize = 5;
/// Characters of an output's excerpt shown on a card.
const MAX_EXCERPT: usize = 300;
/// Slack's limit for a header block's text.
pub(crate) const MAX_HEADER: usize = 150;
/// Slack's limit for a section's text.
pub(crate) const MAX_SECTION: usize = 3000;

/// A message as the Web API takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The fallback shown in notifications and by clients without Block Kit; Slack reads it
    /// as mrkdwn too, so it is escaped like the blocks.
    pub text: String,
    /// The Block Kit blocks (a JSON array).
    pub blocks: Value,
}

/// An approval card: what is under review and who may decide, with the decision buttons
/// while the gate is open, or the decision once made.
pub fn card_message(card: &Card) -> Message {
    let title = card.title();
    let mut blocks = vec![json!({
        "type": "header",
        "text": plain(&truncate(&title, MAX_HEADER)),
    })];
    blocks.push(json!({"type": "context", "elements": card_context(card)}));
    if let Some(question) = card.question() {
        blocks.push(section(&escape(&question)));
    }
    for output in card.outputs.iter().take(MAX_OUTPUTS) {
        blocks.push(section(&output_text(output)));
    }
    if card.outputs.len() > MAX_OUTPUTS {
        let more = card.outputs.len() - MAX_OUTPUTS;
        blocks.push(context(&format!("…and {more} more outputs")));
    }
    blocks.push(section(&format!(
        "*Who may decide:* {}",
        escape(&card.deciders())
    )));
    let text = match &card.outcome {
        None => {
            blocks.push(decision_buttons(card));
            title
        }
        Some(outcome) => {
            let sentence = outcome.sentence();
            let mut shown = format!("*{}*", escape(&sentence));
            if let Some(comment) = outcome.comment.as_deref().filter(|c| !c.trim().is_empty()) {
                shown.push_str(&format!("\n{}", quote(comment)));
            }
            blocks.push(section(&shown));
            format!("{title}: {sentence}")
        }
    };
    Message {
        text: escape(&text),
        blocks: Value::Array(blocks),
    }
}

/// The modal a Send back click opens: where to send the work, and why. Its `callback_id`
/// and `private_metadata` carry the click's action, so the submission names the gate
/// attempt it decides.
pub fn send_back_modal(action: &CardAction, targets: &[String]) -> Value {
    let id = action.encode();
    let mut view = json!({
        "type": "modal",
        "callback_id": id,
        "private_metadata": id,
        "title": plain("Send back"),
        "close": plain("Cancel"),
    });
    let Some(first) = targets.first() else {
        // A gate without send-back targets shows no button; a stale card may still ask.
        view["blocks"] = json!([section("There is no step to send this work back to.")]);
        return view;
    };
    let option = |target: &String| json!({"text": plain(target), "value": target});
    view["submit"] = plain("Send back");
    view["blocks"] = json!([
        {
            "type": "input",
            "block_id": "target",
            "label": plain("Redo from"),
            "element": {
                "type": "static_select",
                "action_id": "target",
                "options": targets.iter().map(option).collect::<Vec<_>>(),
                "initial_option": option(first),
            },
        },
        {
            "type": "input",
            "block_id": "comment",
            // The engine refuses a send-back without a comment: whoever redoes the work
            // needs it.
            "optional": false,
            "label": plain("What needs to change"),
            "element": {
                "type": "plain_text_input",
                "action_id": "comment",
                "multiline": true,
            },
        },
    ]);
    view
}

/// A run's progress message: the headline, a line per node worth mentioning, and a link to
/// the run.
pub fn progress_message(progress: &Progress) -> Message {
    let headline = progress.headline();
    let mut text = format!("*{}*", escape(&headline));
    for line in &progress.lines {
        text.push_str(&format!("\n• {}", escape(line)));
    }
    let mut blocks = vec![section(&truncate(&text, MAX_SECTION))];
    if let Some(url) = &progress.run_url {
        blocks.push(context(&link(url, "Open the run")));
    }
    Message {
        text: escape(&headline),
        blocks: Value::Array(blocks),
    }
}

/// A reply: `code` and *bold* render as in Slack's mrkdwn, but nothing in it can mention
/// people or channels or hide a link, since `&`, `<` and `>` are escaped.
pub fn text_message(text: &str) -> Message {
    let text = escape(text);
    Message {
        blocks: json!([section(&truncate(&text, MAX_SECTION))]),
        text,
    }
}

fn card_context(card: &Card) -> Vec<Value> {
    let mut elements = Vec::new();
    match (&card.requirement, &card.requirement_url) {
        (Some(name), Some(url)) => elements.push(format!("Requirement: {}", link(url, name))),
        (None, Some(url)) => elements.push(format!("Requirement: {}", link(url, url))),
        (Some(name), None) => elements.push(format!("Requirement: {}", escape(name))),
        (None, None) => {}
    }
    let run = format!("Run {} ({})", card.run, card.sop);
    elements.push(match &card.run_url {
        Some(url) => link(url, &run),
        None => escape(&run),
    });
    elements.push(format!("Attempt {}", card.attempt));
    elements
        .into_iter()
        .map(|text| json!({"type": "mrkdwn", "text": text}))
        .collect()
}

fn output_text(output: &Output) -> String {
    let mut text = format!("*{}* · {}", escape(&output.name), human_size(output.size));
    if let Some(excerpt) = output.excerpt.as_deref().filter(|e| !e.trim().is_empty()) {
        let shown = truncate(excerpt.trim_end(), MAX_EXCERPT);
        // A ``` inside the excerpt would end the code block early.
        let shown = escape(&shown).replace("```", "`\u{200b}``");
        text.push_str(&format!("\n```{shown}```"));
    }
    text
}

fn decision_buttons(card: &Card) -> Value {
    let id = |verb| CardAction::new(verb, card.run, &card.node, card.attempt).encode();
    let mut buttons = vec![json!({
        "type": "button",
        "text": plain("Approve"),
        "style": "primary",
        "action_id": id(Verb::Approve),
        "value": id(Verb::Approve),
    })];
    if !card.send_back.is_empty() {
        buttons.push(json!({
            "type": "button",
            "text": plain("Send back"),
            "action_id": id(Verb::SendBack),
            "value": id(Verb::SendBack),
        }));
    }
    // Slack asks for confirmation in the client, so the click that reaches us decides.
    buttons.push(json!({
        "type": "button",
        "text": plain("Reject"),
        "style": "danger",
        "action_id": id(Verb::Reject),
        "value": id(Verb::Reject),
        "confirm": {
            "title": plain("Reject this work?"),
            "text": plain(&format!(
                "Rejecting ends the run at {}; it cannot be undone.",
                card.node
            )),
            "confirm": plain("Reject"),
            "deny": plain("Cancel"),
            "style": "danger",
        },
    }));
    json!({"type": "actions", "block_id": "decide", "elements": buttons})
}

pub(crate) fn plain(text: &str) -> Value {
    json!({"type": "plain_text", "text": text, "emoji": true})
}

pub(crate) fn section(mrkdwn: &str) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": mrkdwn}})
}

pub(crate) fn context(mrkdwn: &str) -> Value {
    json!({"type": "context", "elements": [{"type": "mrkdwn", "text": mrkdwn}]})
}

/// Slack's control characters in text from users, SOPs and outputs, so it cannot mention
/// `@channel`, forge links or break the markup.
pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `<url|text>`; a `|` or `>` in the URL would end it early, so those are percent-encoded.
pub(crate) fn link(url: &str, text: &str) -> String {
    let url = escape(url).replace('|', "%7C");
    format!("<{url}|{}>", escape(text))
}

pub(crate) fn quote(text: &str) -> String {
    escape(text)
        .lines()
        .map(|line| format!("> {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

pub(crate) fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars.saturating_sub(1)) {
        Some((cut, _)) if text.chars().count() > max_chars => format!("{}…", &text[..cut]),
        _ => text.to_owned(),
    }
}

fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut size = bytes as f64 / 1024.0;
    let mut unit = 0;
    while size >= 1024.0 && unit < UNITS.len() - 1 {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_chat::Outcome;

    const RUN: &str = "0192f0c1-7a2b-7c3d-8e4f-001122334455";

    fn card() -> Card {
        Card {
            run: RUN.parse().unwrap(),
            sop: "bug-fix".into(),
            node: "review".into(),
            attempt: 2,
            requirement: Some("Fix <login> & \"logout\"".into()),
            requirement_url: Some("https://github.com/acme/api/issues/42?a=1&b=2".into()),
            run_url: Some(format!("https://gatehouse.example/runs/{RUN}")),
            outputs: vec![
                Output {
                    name: "build/report.md".into(),
                    size: 2048,
                    excerpt: Some("<!channel> all green\n```rm -rf```".into()),
                },
                Output {
                    name: "build/log.txt".into(),
                    size: 12,
                    excerpt: None,
                },
            ],
            approvers: vec!["group:leads".into()],
            min_approvals: 1,
            approvals: vec![],
            send_back: vec!["build".into(), "plan".into()],
            outcome: None,
            raise: None,
            feedback: None,
        }
    }

    fn blocks(message: &Message) -> &Vec<Value> {
        message.blocks.as_array().unwrap()
    }

    fn of_type<'a>(message: &'a Message, kind: &str) -> Vec<&'a Value> {
        blocks(message)
            .iter()
            .filter(|b| b["type"] == kind)
            .collect()
    }

    fn all_text(message: &Message) -> String {
        message.blocks.to_string()
    }

    #[test]
    fn a_budget_ask_says_what_stopped_and_what_approving_does() {
        let ask = Card {
            raise: Some("budget of project api reached: $20.00 today".into()),
            ..card()
        };
        let text = all_text(&card_message(&ask));
        assert!(text.contains("Budget reached: review"), "{text}");
        assert!(
            text.contains("The agent stopped: budget of project api reached: $20.00 today."),
            "{text}"
        );
        assert!(text.contains("Approve raises this budget once"), "{text}");
        assert!(!all_text(&card_message(&card())).contains("The agent stopped"));
    }

    #[test]
    fn open_cards_carry_the_decision_buttons() {
        let message = card_message(&card());
        assert_eq!(
            message.text,
            "Approval needed: review — Fix &lt;login&gt; &amp; \"logout\""
        );
        let header = &of_type(&message, "header")[0];
        assert_eq!(header["text"]["text"], card().title());

        let actions = of_type(&message, "actions");
        assert_eq!(actions.len(), 1);
        let buttons = actions[0]["elements"].as_array().unwrap();
        let ids: Vec<&str> = buttons
            .iter()
            .map(|b| b["action_id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            [
                format!("gh:approve:{RUN}:2:review"),
                format!("gh:send-back:{RUN}:2:review"),
                format!("gh:reject:{RUN}:2:review"),
            ]
        );
        for id in ids {
            let action: CardAction = id.parse().unwrap();
            assert_eq!((action.attempt, action.target), (2, None));
        }
        assert_eq!(buttons[0]["style"], "primary");
        assert_eq!(buttons[2]["style"], "danger");
        assert_eq!(buttons[2]["confirm"]["title"]["text"], "Reject this work?");
        assert!(buttons[1].get("confirm").is_none());
    }

    #[test]
    fn send_back_needs_somewhere_to_go() {
        let mut card = card();
        card.send_back.clear();
        let message = card_message(&card);
        let buttons = of_type(&message, "actions")[0]["elements"]
            .as_array()
            .unwrap()
            .clone();
        let labels: Vec<&str> = buttons
            .iter()
            .map(|b| b["text"]["text"].as_str().unwrap())
            .collect();
        assert_eq!(labels, ["Approve", "Reject"]);
    }

    #[test]
    fn decided_cards_show_the_outcome_instead_of_buttons() {
        let mut card = card();
        let outcome = Outcome {
            decision: "sent back to build".into(),
            by: vec!["ana".into()],
            at: "2026-11-30T14:02:09Z".parse().unwrap(),
            comment: Some("name the <error> budget".into()),
        };
        card.outcome = Some(outcome.clone());
        let message = card_message(&card);
        assert!(of_type(&message, "actions").is_empty());
        assert!(!all_text(&message).contains("gh:"));
        let text = all_text(&message);
        assert!(text.contains(&outcome.sentence()), "{text}");
        assert!(text.contains("> name the &lt;error&gt; budget"), "{text}");
        assert!(
            message.text.ends_with(&outcome.sentence()),
            "{}",
            message.text
        );
    }

    #[test]
    fn card_shows_context_outputs_and_deciders_escaped() {
        let message = card_message(&card());
        let context = of_type(&message, "context")[0]["elements"].clone();
        assert_eq!(
            context[0]["text"],
            "Requirement: <https://github.com/acme/api/issues/42?a=1&amp;b=2|Fix &lt;login&gt; &amp; \"logout\">"
        );
        assert_eq!(
            context[1]["text"],
            format!("<https://gatehouse.example/runs/{RUN}|Run {RUN} (bug-fix)>")
        );
        assert_eq!(context[2]["text"], "Attempt 2");

        let sections: Vec<String> = of_type(&message, "section")
            .iter()
            .map(|s| s["text"]["text"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            sections[0],
            "*build/report.md* · 2.0 KiB\n```&lt;!channel&gt; all green\n`\u{200b}``rm -rf`\u{200b}`````"
        );
        assert_eq!(sections[1], "*build/log.txt* · 12 B");
        assert_eq!(sections[2], "*Who may decide:* group:leads");
        assert!(!all_text(&message).contains("<!channel>"));
    }

    #[test]
    fn long_outputs_are_cut_short() {
        let mut card = card();
        card.outputs = (0..8)
            .map(|i| Output {
                name: format!("build/{i}.txt"),
                size: 5 * 1024 * 1024,
                excerpt: Some("x".repeat(1000)),
            })
            .collect();
        let message = card_message(&card);
        let text = all_text(&message);
        assert!(text.contains("build/4.txt") && !text.contains("build/5.txt"));
        assert!(text.contains("…and 3 more outputs"));
        assert!(text.contains("5.0 MiB"));
        let first = of_type(&message, "section")[0]["text"]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        let excerpt = first.split("```").nth(1).unwrap();
        assert_eq!(excerpt, format!("{}…", "x".repeat(MAX_EXCERPT - 1)));
        assert!(blocks(&message).len() <= 50);
    }

    #[test]
    fn send_back_modal_asks_where_and_why() {
        let action = CardAction::new(Verb::SendBack, RUN.parse().unwrap(), "review", 2);
        let view = send_back_modal(&action, &["build".into(), "plan".into()]);
        assert_eq!(view["type"], "modal");
        assert_eq!(view["callback_id"], action.encode());
        assert_eq!(view["private_metadata"], action.encode());
        assert_eq!(view["submit"]["text"], "Send back");
        let target = &view["blocks"][0];
        assert_eq!(
            (&target["block_id"], &target["element"]["action_id"]),
            (&json!("target"), &json!("target"))
        );
        assert_eq!(target["element"]["type"], "static_select");
        assert_eq!(target["element"]["options"][1]["value"], "plan");
        assert_eq!(target["element"]["initial_option"]["value"], "build");
        let comment = &view["blocks"][1];
        assert_eq!(comment["element"]["action_id"], "comment");
        assert_eq!(comment["element"]["multiline"], true);
        assert_eq!(comment["optional"], false, "a send-back needs a comment");

        let nowhere = send_back_modal(&action, &[]);
        assert!(nowhere.get("submit").is_none());
        assert_eq!(nowhere["blocks"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn progress_lists_lines_and_links_the_run() {
        let progress = Progress {
            run: RUN.parse().unwrap(),
            sop: "bug-fix".into(),
            status: "waiting".into(),
            lines: vec![
                "build: succeeded".into(),
                "review: waiting for <approval>".into(),
            ],
            run_url: Some("https://gatehouse.example/r".into()),
        };
        let message = progress_message(&progress);
        assert_eq!(message.text, progress.headline());
        assert_eq!(
            message.blocks[0]["text"]["text"],
            format!(
                "*Run {RUN} of bug-fix: waiting*\n• build: succeeded\n• review: waiting for &lt;approval&gt;"
            )
        );
        assert_eq!(
            message.blocks[1]["elements"][0]["text"],
            "<https://gatehouse.example/r|Open the run>"
        );
    }

    #[test]
    fn text_replies_cannot_mention_anyone() {
        let message = text_message("started `run` <!here> & more");
        assert_eq!(message.text, "started `run` &lt;!here&gt; &amp; more");
        assert_eq!(message.blocks[0]["text"]["type"], "mrkdwn");
        assert_eq!(
            message.blocks[0]["text"]["text"],
            "started `run` &lt;!here&gt; &amp; more"
        );
        let round_trip: Message =
            serde_json::from_value(serde_json::to_value(&message).unwrap()).unwrap();
        assert_eq!(round_trip, message);
    }

    #[test]
    fn helpers_keep_limits() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abcd", 4), "abcd");
        assert_eq!(truncate("ééééé", 3), "éé…");
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(link("https://x/a|b>c", "t"), "<https://x/a%7Cb&gt;c|t>");
    }
}
