//! Block Kit for an agent's question: the question and its evidence as plain text (Slack
//! parses no mention, link or markup in a `plain_text` object, so the agent's words are
//! shown exactly and can ping nobody), whose work waits, Approve / Deny while it is open
//! and the answer once given; and the dialog Deny opens for the reason.

use gatehouse_chat::{QuestionAction, QuestionCard, QuestionVerb};
use serde_json::{Value, json};

use crate::blocks::{
    MAX_HEADER, MAX_SECTION, Message, context, escape, link, plain, quote, section, truncate,
};

/// Slack's limit for a modal's title.
const MAX_MODAL_TITLE: usize = 24;
/// Longest reason the Deny dialog takes, as the API takes a comment.
const MAX_REASON: usize = 3000;

/// A question card: Approve (or Allow once) and Deny while the question is open, the
/// answer instead once given.
pub fn question_message(card: &QuestionCard) -> Message {
    let title = card.title();
    let mut blocks = vec![
        json!({"type": "header", "text": plain(&truncate(&title, MAX_HEADER))}),
        json!({"type": "context", "elements": asker_context(card)}),
        untrusted(&card.shown_text()),
    ];
    if let Some(evidence) = card.shown_evidence() {
        blocks.push(context("*Evidence the agent showed:*"));
        blocks.push(untrusted(&evidence));
    }
    let text = match &card.outcome {
        None => {
            blocks.push(context(&escape(card.effect())));
            blocks.push(answer_buttons(card));
            title
        }
        Some(outcome) => {
            let sentence = outcome.sentence();
            let mut shown = format!("*{}*", escape(&sentence));
            if let Some(comment) = outcome.comment.as_deref().filter(|c| !c.trim().is_empty()) {
                shown.push_str(&format!("\n{}", quote(comment)));
            }
            blocks.push(section(&truncate(&shown, MAX_SECTION)));
            format!("{title}: {sentence}")
        }
    };
    Message {
        text: escape(&text),
        blocks: Value::Array(blocks),
    }
}

/// The dialog Deny opens: the reason the agent is told, which may be left empty. Its
/// `callback_id` is the Deny action, so the submission names the question it answers.
pub fn deny_modal(action: &QuestionAction) -> Value {
    let id = action.encode();
    json!({
        "type": "modal",
        "callback_id": id,
        "private_metadata": id,
        "title": plain(&truncate("Deny the agent", MAX_MODAL_TITLE)),
        "submit": plain("Deny"),
        "close": plain("Cancel"),
        "blocks": [{
            "type": "input",
            "block_id": "comment",
            "optional": true,
            "label": plain("Why? The agent is told"),
            "element": {
                "type": "plain_text_input",
                "action_id": "comment",
                "multiline": true,
                "max_length": MAX_REASON,
            },
        }],
    })
}

/// A section showing `text` exactly: no mrkdwn, no mentions, no links, no emoji codes.
fn untrusted(text: &str) -> Value {
    let text = if text.is_empty() { " " } else { text };
    json!({"type": "section", "text": {
        "type": "plain_text",
        "text": truncate(text, MAX_SECTION),
        "emoji": false,
    }})
}

fn asker_context(card: &QuestionCard) -> Vec<Value> {
    let mut elements = Vec::new();
    match (&card.requirement, &card.requirement_url) {
        (Some(name), Some(url)) => elements.push(format!("Requirement: {}", link(url, name))),
        (None, Some(url)) => elements.push(format!("Requirement: {}", link(url, url))),
        (Some(name), None) => elements.push(format!("Requirement: {}", escape(name))),
        (None, None) => {}
    }
    let asker = card.asker_line();
    elements.push(match &card.page_url {
        Some(url) => link(url, &asker),
        None => escape(&asker),
    });
    elements
        .into_iter()
        .map(|text| json!({"type": "mrkdwn", "text": text}))
        .collect()
}

fn answer_buttons(card: &QuestionCard) -> Value {
    let id = |verb| QuestionAction::new(verb, card.question).encode();
    json!({"type": "actions", "block_id": "answer", "elements": [
        {
            "type": "button",
            "text": plain(card.approve_label()),
            "style": "primary",
            "action_id": id(QuestionVerb::Approve),
            "value": id(QuestionVerb::Approve),
        },
        {
            // Opens the dialog for the reason: submitting it is the confirmation.
            "type": "button",
            "text": plain(card.deny_label()),
            "style": "danger",
            "action_id": id(QuestionVerb::Deny),
            "value": id(QuestionVerb::Deny),
        },
    ]})
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_chat::{Asker, Outcome, QuestionKind};

    const QUESTION: &str = "0192f0c1-7a2b-7c3d-8e4f-0011223344aa";
    const RUN: &str = "0192f0c1-7a2b-7c3d-8e4f-001122334455";

    fn card() -> QuestionCard {
        QuestionCard {
            question: QUESTION.parse().unwrap(),
            kind: QuestionKind::Approval,
            text: "May I run the migration on <!channel> & *prod*?".into(),
            evidence: Some("```\n<https://evil.example|click me>\n```".into()),
            asker: Asker::Run {
                run: RUN.parse().unwrap(),
                sop: "bug-fix".into(),
                node: "build".into(),
                attempt: 2,
            },
            requirement: Some("Fix <login>".into()),
            requirement_url: Some("https://github.com/acme/api/issues/42".into()),
            page_url: Some(format!("https://gatehouse.example/runs/{RUN}#node-build")),
            outcome: None,
        }
    }

    fn of_type<'a>(message: &'a Message, kind: &str) -> Vec<&'a Value> {
        message
            .blocks
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == kind)
            .collect()
    }

    #[test]
    fn an_open_question_shows_the_agents_words_plainly_with_two_buttons() {
        let message = question_message(&card());
        assert_eq!(
            message.text,
            "The agent asks: May I run the migration on &lt;!channel&gt; &amp; *prod*?"
        );
        let sections = of_type(&message, "section");
        // The agent's words are plain text: Slack parses nothing in them.
        assert_eq!(sections[0]["text"]["type"], "plain_text");
        assert_eq!(
            sections[0]["text"]["text"],
            "May I run the migration on <!channel> & *prod*?"
        );
        assert_eq!(sections[1]["text"]["type"], "plain_text");
        assert_eq!(
            sections[1]["text"]["text"],
            "```\n<https://evil.example|click me>\n```"
        );
        let context = &of_type(&message, "context")[0]["elements"];
        assert_eq!(
            context[0]["text"],
            "Requirement: <https://github.com/acme/api/issues/42|Fix &lt;login&gt;>"
        );
        assert_eq!(
            context[1]["text"],
            format!(
                "<https://gatehouse.example/runs/{RUN}#node-build|Run {RUN} (bug-fix), node build, attempt 2>"
            )
        );
        let buttons = of_type(&message, "actions")[0]["elements"]
            .as_array()
            .unwrap()
            .clone();
        let shown: Vec<(&str, &str)> = buttons
            .iter()
            .map(|b| {
                (
                    b["text"]["text"].as_str().unwrap(),
                    b["action_id"].as_str().unwrap(),
                )
            })
            .collect();
        let approve = format!("gq:approve:{QUESTION}");
        let deny = format!("gq:deny:{QUESTION}");
        assert_eq!(
            shown,
            [("Approve", approve.as_str()), ("Deny", deny.as_str())]
        );
        assert!(message.blocks.to_string().contains("it goes on"));
    }

    #[test]
    fn a_permission_is_allowed_once() {
        let mut c = card();
        c.kind = QuestionKind::Permission;
        c.text = "agent wants to run `git push --force origin main`".into();
        c.evidence = None;
        c.asker = Asker::Conversation {
            conversation: "00000000-0000-0000-0000-000000000000".parse().unwrap(),
            turn: 3,
        };
        c.page_url = None;
        let message = question_message(&c);
        assert_eq!(message.text, "The agent wants to run a tool");
        let labels: Vec<String> = of_type(&message, "actions")[0]["elements"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["text"]["text"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(labels, ["Allow once", "Deny"]);
        assert_eq!(of_type(&message, "section").len(), 1, "no evidence block");
        assert!(
            message
                .blocks
                .to_string()
                .contains("Conversation 00000000-0000-0000-0000-000000000000, turn 3")
        );
    }

    #[test]
    fn an_answered_question_shows_the_answer_and_no_buttons() {
        let mut c = card();
        let outcome = Outcome {
            decision: "denied".into(),
            by: vec!["ana".into()],
            at: "2026-11-30T14:02:09Z".parse().unwrap(),
            comment: Some("not <!here>, use staging".into()),
        };
        c.outcome = Some(outcome.clone());
        let message = question_message(&c);
        assert!(of_type(&message, "actions").is_empty());
        assert!(!message.blocks.to_string().contains("gq:"));
        let text = message.blocks.to_string();
        assert!(
            text.contains("*Denied by ana at 2026-11-30 14:02 UTC*"),
            "{text}"
        );
        assert!(text.contains("> not &lt;!here&gt;, use staging"), "{text}");
        assert!(message.text.ends_with(&outcome.sentence()));
    }

    #[test]
    fn huge_questions_stay_inside_slacks_limits() {
        let mut c = card();
        c.text = format!("{}\n{}", "t".repeat(400), "q".repeat(10_000));
        c.evidence = Some("e".repeat(10_000));
        let message = question_message(&c);
        let header = &of_type(&message, "header")[0]["text"]["text"];
        assert!(header.as_str().unwrap().chars().count() <= MAX_HEADER);
        for s in of_type(&message, "section") {
            assert!(s["text"]["text"].as_str().unwrap().chars().count() <= MAX_SECTION);
        }
        // An empty question still makes a valid block (Slack refuses empty text).
        c.text = String::new();
        let message = question_message(&c);
        assert_eq!(of_type(&message, "section")[0]["text"]["text"], " ");
    }

    #[test]
    fn deny_asks_why_and_allows_no_reason() {
        let action = QuestionAction::new(QuestionVerb::Deny, QUESTION.parse().unwrap());
        let view = deny_modal(&action);
        assert_eq!(view["type"], "modal");
        assert_eq!(view["callback_id"], action.encode());
        assert_eq!(view["submit"]["text"], "Deny");
        assert!(view["title"]["text"].as_str().unwrap().chars().count() <= MAX_MODAL_TITLE);
        let input = &view["blocks"][0];
        assert_eq!(input["optional"], true, "an empty reason is allowed");
        assert_eq!(
            (&input["block_id"], &input["element"]["action_id"]),
            (&json!("comment"), &json!("comment"))
        );
    }
}
