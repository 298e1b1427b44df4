//! Chat messages in a GitHub issue's conversation, as the comments that show them. An
//! issue has no buttons and no private answers, so a question says where to answer it,
//! and a card where to decide it. What agents and people wrote is untrusted: its
//! `@mentions` are quietened so a reply cannot page people or teams from the bot's
//! account.

use gatehouse_chat::{Body, Card, Progress, QuestionCard};

/// The comment that shows `body`; `None` for what an issue cannot show (a sign-in link,
/// which belongs in a private message).
pub fn chat_comment(body: &Body) -> Option<String> {
    Some(match body {
        Body::Text { text } => quiet_mentions(text),
        Body::Progress(progress) => progress_comment(progress),
        Body::Question(card) => question_comment(card),
        Body::Card(card) => card_comment(card),
        Body::LoginLink { .. } => return None,
    })
}

fn progress_comment(progress: &Progress) -> String {
    let mut text = format!("**{}**\n", quiet_mentions(&progress.headline()));
    for line in &progress.lines {
        text.push_str(&format!("- {}\n", quiet_mentions(line)));
    }
    if let Some(url) = &progress.run_url {
        text.push_str(&format!("\n[The run in Gatehouse]({url})\n"));
    }
    text
}

fn question_comment(card: &QuestionCard) -> String {
    let mut text = format!("**{}**\n\n", quiet_mentions(&card.title()));
    text.push_str(&quote(&card.shown_text()));
    if let Some(evidence) = card.shown_evidence() {
        text.push_str(&format!("\n\n```\n{}\n```", fence_safe(&evidence)));
    }
    text.push_str(&format!("\n\n{}\n", card.asker_line()));
    match &card.outcome {
        Some(outcome) => text.push_str(&format!("\n{}\n", quiet_mentions(&outcome.sentence()))),
        None => {
            text.push_str(&format!("\n{} ", card.effect()));
            match &card.page_url {
                Some(url) => text.push_str(&format!(
                    "Answer it in Gatehouse: [{} or {}]({url}).\n",
                    card.approve_label(),
                    card.deny_label()
                )),
                None => text.push_str(&format!(
                    "Answer it through Gatehouse's API: `POST /api/v1/questions/{}/answer`.\n",
                    card.question
                )),
            }
        }
    }
    text
}

fn card_comment(card: &Card) -> String {
    let mut text = format!("**{}**\n", quiet_mentions(&card.title()));
    if let Some(question) = card.question() {
        text.push_str(&format!("\n{}\n", quiet_mentions(&question)));
    }
    match &card.outcome {
        Some(outcome) => text.push_str(&format!("\n{}\n", quiet_mentions(&outcome.sentence()))),
        None => {
            text.push_str(&format!("\n{}\n", card.deciders()));
            if let Some(url) = &card.run_url {
                text.push_str(&format!("\n[Decide in Gatehouse]({url})\n"));
            }
        }
    }
    text
}

/// `text` as a Markdown quote, quietened.
fn quote(text: &str) -> String {
    quiet_mentions(text)
        .lines()
        .map(|l| format!("> {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Text that cannot close the code fence it is shown in.
fn fence_safe(text: &str) -> String {
    text.replace("```", "'''")
}

/// `text` with every `@name` that GitHub would read as a mention of a user or team made
/// inert by a zero-width space after the `@`: it reads the same, pages nobody. Inside
/// code (fenced or inline) GitHub mentions nobody, so code is left as it was.
pub fn quiet_mentions(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_fence = false;
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        if line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~") {
            in_fence = !in_fence;
            out.push_str(line);
            continue;
        }
        if in_fence {
            out.push_str(line);
            continue;
        }
        let mut in_code = false;
        let mut previous: Option<char> = None;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            out.push(c);
            if c == '`' {
                in_code = !in_code;
            }
            let starts_word = previous.is_none_or(|p| !(p.is_alphanumeric() || p == '_'));
            let names = chars.peek().is_some_and(|n| n.is_ascii_alphanumeric());
            if c == '@' && !in_code && starts_word && names {
                out.push('\u{200B}');
            }
            previous = Some(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_quietened_outside_code() {
        assert_eq!(
            quiet_mentions("cc @alice and @acme/team"),
            "cc @\u{200B}alice and @\u{200B}acme/team"
        );
        assert_eq!(
            quiet_mentions("mail bob@example.com"),
            "mail bob@example.com"
        );
        assert_eq!(quiet_mentions("`@Override` stays"), "`@Override` stays");
        assert_eq!(
            quiet_mentions("```java\n@Override\n```\n@bob"),
            "```java\n@Override\n```\n@\u{200B}bob"
        );
        assert_eq!(quiet_mentions("a lone @ sign"), "a lone @ sign");
    }

    #[test]
    fn a_sign_in_link_never_goes_to_an_issue() {
        let link = Body::LoginLink {
            person: "ana".into(),
            scopes: "read".into(),
            ttl_secs: 60,
        };
        assert_eq!(chat_comment(&link), None);
        assert_eq!(
            chat_comment(&Body::text("done, @carol")).as_deref(),
            Some("done, @\u{200B}carol")
        );
    }
}
