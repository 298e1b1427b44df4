//! An agent's question as a Discord message: an embed whose description is the question
//! (markdown made literal, so the agent's words format nothing and, with no mention
//! parsed, ping nobody), the evidence in a code block, Approve / Deny buttons while it is
//! open, and the answer in their place once given.

use gatehouse_chat::{QuestionAction, QuestionCard, QuestionVerb};
use serde_json::{Value, json};

use crate::components::{
    ACTION_ROW, APPROVED, BUTTON, DANGER, DESCRIPTION_LIMIT, EMBED_TOTAL_LIMIT, FIELD_VALUE_LIMIT,
    OTHER_OUTCOME, REJECTED, SUCCESS, TITLE_LIMIT, WAITING, count, field,
};
use crate::text::{escape_code_block, escape_markdown, truncate};

/// A question card: the same body creates the message and edits it, so an edit after the
/// answer retires the buttons.
pub fn question_message(card: &QuestionCard) -> Value {
    let title = truncate(&card.title(), TITLE_LIMIT);
    let mut fields = Vec::new();
    let mut color = WAITING;
    if let Some(outcome) = &card.outcome {
        let mut value = escape_markdown(&outcome.sentence());
        if let Some(comment) = outcome.comment.as_deref().filter(|c| !c.trim().is_empty()) {
            value.push_str("\n> ");
            value.push_str(&escape_markdown(comment).replace('\n', "\n> "));
        }
        fields.push(field("Answer", &value));
        color = match outcome.decision.as_str() {
            "approved" => APPROVED,
            "denied" => REJECTED,
            _ => OTHER_OUTCOME,
        };
    }
    if let Some(evidence) = card.shown_evidence() {
        // "```\n" and "\n```" around it.
        let inner = truncate(&escape_code_block(&evidence), FIELD_VALUE_LIMIT - 8);
        fields.push(field(
            "Evidence the agent showed",
            &format!("```\n{inner}\n```"),
        ));
    }
    let used = count(&title)
        + fields
            .iter()
            .map(crate::components::field_size)
            .sum::<usize>();
    let room = DESCRIPTION_LIMIT.min(EMBED_TOTAL_LIMIT.saturating_sub(used));
    let description = truncate(&description(card), room);
    let mut embed = json!({
        "title": title,
        "description": description,
        "color": color,
        "fields": fields,
    });
    if let Some(url) = &card.requirement_url {
        embed["url"] = json!(url);
    }
    let components = if card.outcome.is_none() {
        let id = |verb| QuestionAction::new(verb, card.question).encode();
        json!([{
            "type": ACTION_ROW,
            "components": [
                {"type": BUTTON, "style": SUCCESS, "label": card.approve_label(), "custom_id": id(QuestionVerb::Approve)},
                {"type": BUTTON, "style": DANGER, "label": card.deny_label(), "custom_id": id(QuestionVerb::Deny)},
            ]
        }])
    } else {
        json!([])
    };
    json!({
        "content": "",
        "embeds": [embed],
        "components": components,
        "allowed_mentions": {"parse": []},
    })
}

/// The question first (it is what a person must read), then whose work waits and what
/// answering does; the question is cut first when all of it does not fit.
fn description(card: &QuestionCard) -> String {
    let mut tail = Vec::new();
    if let Some(requirement) = &card.requirement {
        tail.push(format!("**Requirement:** {}", escape_markdown(requirement)));
    }
    let asker = escape_markdown(&card.asker_line());
    tail.push(match &card.page_url {
        Some(url) => format!("[{asker}]({url})"),
        None => asker,
    });
    if card.outcome.is_none() {
        tail.push(escape_markdown(card.effect()));
    }
    let tail = tail.join("\n");
    let room = DESCRIPTION_LIMIT.saturating_sub(count(&tail) + 2);
    let question = truncate(
        &escape_markdown(&card.shown_text()),
        room.min(DESCRIPTION_LIMIT),
    );
    format!("{question}\n\n{tail}")
}

#[cfg(test)]
mod tests {
    use gatehouse_chat::{Asker, Outcome, QuestionKind};

    use super::*;
    use crate::components::field_size;

    const QUESTION: &str = "0192f0c1-7a2b-7c3d-8e4f-0011223344aa";

    fn card() -> QuestionCard {
        QuestionCard {
            question: QUESTION.parse().unwrap(),
            kind: QuestionKind::Approval,
            text: "May I **drop** the table? @everyone".into(),
            evidence: Some("rows: 0\n```\nescaped?".into()),
            asker: Asker::Run {
                run: "0192f0c1-7a2b-7c3d-8e4f-001122334455".parse().unwrap(),
                sop: "bug-fix".into(),
                node: "build".into(),
                attempt: 1,
            },
            requirement: Some("Fix *login*".into()),
            requirement_url: Some("https://github.com/acme/api/issues/42".into()),
            page_url: Some("https://gatehouse.example/runs/0192f0c1#node-build".into()),
            outcome: None,
        }
    }

    #[test]
    fn an_open_question() {
        let body = question_message(&card());
        let embed = &body["embeds"][0];
        assert_eq!(
            embed["title"],
            "The agent asks: May I **drop** the table? @everyone"
        );
        let description = embed["description"].as_str().unwrap();
        assert!(
            description.starts_with("May I \\*\\*drop\\*\\* the table? @everyone\n\n"),
            "{description}"
        );
        assert!(description.contains("**Requirement:** Fix \\*login\\*"));
        assert!(description.contains(
            "[Run 0192f0c1-7a2b-7c3d-8e4f-001122334455 (bug-fix), node build, attempt 1](https://gatehouse.example/runs/0192f0c1#node-build)"
        ));
        assert!(description.contains("it goes on"), "{description}");
        assert_eq!(embed["fields"][0]["name"], "Evidence the agent showed");
        let evidence = embed["fields"][0]["value"].as_str().unwrap();
        assert_eq!(evidence.matches("```").count(), 2, "{evidence}");
        assert_eq!(body["allowed_mentions"], json!({"parse": []}));
        let buttons = &body["components"][0]["components"];
        assert_eq!(buttons[0]["label"], "Approve");
        assert_eq!(buttons[0]["custom_id"], format!("gq:approve:{QUESTION}"));
        assert_eq!(buttons[1]["label"], "Deny");
        assert_eq!(buttons[1]["style"], 4);
        assert_eq!(buttons[1]["custom_id"], format!("gq:deny:{QUESTION}"));
    }

    #[test]
    fn a_permission_is_allowed_once() {
        let mut c = card();
        c.kind = QuestionKind::Permission;
        let body = question_message(&c);
        assert_eq!(body["embeds"][0]["title"], "The agent wants to run a tool");
        assert_eq!(
            body["components"][0]["components"][0]["label"],
            "Allow once"
        );
    }

    #[test]
    fn an_answered_question_has_no_buttons() {
        let mut c = card();
        c.outcome = Some(Outcome {
            decision: "denied".into(),
            by: vec!["ana".into()],
            at: "2026-11-30T14:02:09Z".parse().unwrap(),
            comment: Some("use *staging*\nfirst".into()),
        });
        let body = question_message(&c);
        assert_eq!(body["components"], json!([]));
        let answer = &body["embeds"][0]["fields"][0];
        assert_eq!(answer["name"], "Answer");
        assert_eq!(
            answer["value"],
            "Denied by ana at 2026-11-30 14:02 UTC\n> use \\*staging\\*\n> first"
        );
        assert_eq!(body["embeds"][0]["color"], REJECTED);
        assert!(
            !body["embeds"][0]["description"]
                .as_str()
                .unwrap()
                .contains("it goes on")
        );
    }

    #[test]
    fn huge_questions_fit_discords_limits() {
        let mut c = card();
        c.text = "*".repeat(20_000);
        c.evidence = Some("`".repeat(20_000));
        c.requirement = Some("r".repeat(5000));
        let body = question_message(&c);
        let embed = &body["embeds"][0];
        assert!(count(embed["title"].as_str().unwrap()) <= TITLE_LIMIT);
        let description = embed["description"].as_str().unwrap();
        assert!(count(description) <= DESCRIPTION_LIMIT);
        let fields = embed["fields"].as_array().unwrap();
        for f in fields {
            assert!(count(f["value"].as_str().unwrap()) <= FIELD_VALUE_LIMIT);
        }
        let total = count(embed["title"].as_str().unwrap())
            + count(description)
            + fields.iter().map(field_size).sum::<usize>();
        assert!(total <= EMBED_TOTAL_LIMIT, "{total}");
    }
}
