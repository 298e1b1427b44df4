//! Conversations on GitHub issues. A trigger with `conversation = true` (an assignment to
//! the bot, or a label) opens the issue's conversation, whose first message is the issue
//! itself; the issue's comments are its thread: the assistant's answers are posted there
//! (the notifier posts `github` chat messages as comments), and a comment that mentions
//! the bot in prose, or says `steer`, `stop`, `ask`, `deliver`, `status` or `take over`,
//! is said to the conversation as in a chat thread, through the same checks
//! ([`hear`]). Removing the assignment or label stops the running turn, where the trigger
//! says `cancel_on_unlabel`.

use gatehouse_commands::parse_mention;
use gatehouse_events::{Actor, Said};
use gatehouse_github::IssueCommentEvent;
use gatehouse_project::Right;
use gatehouse_store::{RequirementRow, Tx};

use super::triggers::{LabelEvent, not_a_starter};
use crate::intake::chat::{ChatMention, Heard, Platform, Saying, for_the_assistant, hear, open_in};
use crate::intake::deliveries::Outcome;
use crate::issue_requirement::github_actor;
use crate::projects::{project_of_repo, require};
use crate::{ApiError, ApiState, Trigger, outbox};

/// Opens the issue's conversation for a trigger with `conversation = true`, and says the
/// issue to it, once per occurrence of the event (`updated_at`). A conversation the issue
/// already has (assigned again after it was stopped) is told the issue again. Returns what
/// happened, for the delivery's note.
pub(crate) async fn open(
    api: &ApiState,
    tx: &mut Tx,
    requirement: &RequirementRow,
    trigger: &Trigger,
    event: &LabelEvent<'_>,
) -> Result<String, ApiError> {
    let refused = |why: String| Ok(format!("conversation not opened: {why}"));
    if api.assistant.is_none() {
        return refused("[assistant] is not configured".into());
    }
    if event.from_fork && !trigger.allow_forks {
        return refused("the pull request comes from a fork (allow_forks = false)".into());
    }
    let Some(person) = event.sender.person.as_deref() else {
        return refused(format!(
            "`{}` is not one of the people known to Gatehouse, and conversations are only with them",
            event.sender.handle
        ));
    };
    let groups = api.people.groups_now(&api.store, person).await?;
    if let Some(why) = not_a_starter(trigger, person, &groups) {
        return refused(why);
    }
    let Some(project) = project_of_repo(api, event.repo).and_then(|p| api.projects.get(&p)) else {
        return refused(format!(
            "`{}` is in no project (or in several), so there is no workspace to work in",
            event.repo
        ));
    };
    if let Err(refusal) = require(project, Right::Converse, Some(person), &groups) {
        return refused(refusal.to_string());
    }
    let m = ChatMention {
        platform: Platform::Github,
        channel: event.repo.to_owned(),
        root: event.number.to_string(),
        reply_to: event.number.to_string(),
        user: event.sender.handle.clone(),
        text: String::new(),
        direct: false,
    };
    let conversation = open_in(tx, project, requirement.id, &m, person).await?;
    let key = format!(
        "github:{}#{}:{}:conversation:{}",
        event.repo, event.number, event.label, event.updated_at
    );
    if !tx.record_trigger_start(&key, conversation.id).await? {
        return Ok(format!(
            "conversation {} already told of this event (delivered twice)",
            conversation.id
        ));
    }
    tx.claim_requirement_project(requirement.id, project.name())
        .await?;
    let text = issue_message(event, &requirement.body);
    let seq =
        outbox::say_to_conversation(tx, conversation.id, person, Said::Message { text }).await?;
    Ok(format!(
        "opened conversation {} on the issue: message {seq}",
        conversation.id
    ))
}

/// Stops the issue's conversation's running turn, for a trigger that says
/// `cancel_on_unlabel`, when its label or assignment is removed.
pub(crate) async fn stop(
    api: &ApiState,
    tx: &mut Tx,
    trigger: &Trigger,
    event: &LabelEvent<'_>,
    what: &str,
) -> Result<Option<String>, ApiError> {
    if !trigger.conversation || api.assistant.is_none() {
        return Ok(None);
    }
    let thread = event.number.to_string();
    let Some(conversation) = tx
        .conversation_by_thread(Platform::Github.name(), event.repo, &thread)
        .await?
    else {
        return Ok(Some(format!(
            "{what} removed; the issue has no conversation"
        )));
    };
    if !trigger.cancel_on_unlabel {
        return Ok(Some(format!(
            "{what} removed; conversation {} goes on (cancel_on_unlabel = false)",
            conversation.id
        )));
    }
    let by = event
        .sender
        .person
        .clone()
        .unwrap_or_else(|| format!("@{}", event.sender.handle));
    let seq = outbox::say_to_conversation(tx, conversation.id, &by, Said::Stop).await?;
    Ok(Some(format!(
        "{what} removed: stopping conversation {}'s turn (message {seq})",
        conversation.id
    )))
}

/// A comment on an issue that has a conversation, said to it when it is for the
/// assistant; `None` for a comment on an issue without one, or for a command about runs
/// (`approve`, `status RUN`, ...), which the issue's command handling carries out.
pub(crate) async fn comment(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &str,
    e: &IssueCommentEvent,
) -> Result<Option<Outcome>, ApiError> {
    let Some(github) = api.github.as_ref() else {
        return Ok(None);
    };
    if api.assistant.is_none() {
        return Ok(None);
    }
    let repo = e.repository.full_name.as_str();
    let thread = e.issue.number.to_string();
    let Some(conversation) = tx
        .conversation_by_thread(Platform::Github.name(), repo, &thread)
        .await?
    else {
        return Ok(None);
    };
    let Some(after) = after_mention(&e.comment.body, &github.bot_login) else {
        return Ok(None);
    };
    let m = ChatMention {
        platform: Platform::Github,
        channel: repo.to_owned(),
        root: thread.clone(),
        reply_to: thread,
        user: e.comment.user.login.clone(),
        text: after.to_owned(),
        direct: false,
    };
    let mention = parse_mention(after);
    let Some(said) = for_the_assistant(api, &m, &mention, Some(&conversation)) else {
        return Ok(None);
    };
    if e.action != "created" {
        return Ok(Some(Outcome::ignored(format!(
            "comment {}: an edited comment is not a new message to the conversation",
            e.action
        ))));
    }
    // Prose is the whole comment: people write to the bot in sentences.
    let said = match said {
        Saying::Said(Said::Message { .. }) => Saying::Said(Said::Message {
            text: e.comment.body.trim().to_owned(),
        }),
        other => other,
    };
    if !tx
        .claim_comment_commands(e.comment.id, &e.comment.updated_at, delivery)
        .await?
    {
        return Ok(Some(Outcome::ignored(format!(
            "comment {} as of {} was heard already, by another delivery",
            e.comment.id, e.comment.updated_at
        ))));
    }
    let actor: Actor = github_actor(api, &m.user).await?;
    let note = match hear(api, tx, &m, &actor, said, Some(conversation)).await? {
        Heard::Passed { seq, conversation } => {
            format!("conversation {conversation}: message {seq}")
        }
        // Gatehouse's own words, addressed to the commenter, as replies to commands are.
        Heard::Refused { note, reply } => {
            let reply = format!("@{} {reply}", m.user);
            tx.want_comment(&format!("reply:{delivery}"), repo, e.issue.number, &reply)
                .await?;
            note
        }
    };
    Ok(Some(Outcome::processed(vec![note])))
}

/// The conversation's first message: the issue, as its author wrote it, with where it is.
fn issue_message(event: &LabelEvent<'_>, body: &str) -> String {
    let body = body.trim();
    let body = if body.is_empty() {
        "(the issue has no description)"
    } else {
        body
    };
    format!(
        "GitHub issue {}#{}: {}\n{}\n\n{body}",
        event.repo, event.number, event.title, event.url
    )
}

/// The text after the comment's first mention of the bot (`@login`, as a word, in any
/// case), to its end; `None` when the comment does not mention it.
fn after_mention<'a>(body: &'a str, bot_login: &str) -> Option<&'a str> {
    let mention = format!("@{}", bot_login.trim_start_matches('@'));
    let lower = body.to_ascii_lowercase();
    let mention = mention.to_ascii_lowercase();
    lower.match_indices(&mention).find_map(|(at, _)| {
        let end = at + mention.len();
        let word_ends = lower[end..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        let word_starts = lower[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        (word_ends && word_starts).then(|| body[end..].trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_after_the_bots_mention_is_what_is_said() {
        assert_eq!(
            after_mention("@Gatehouse deliver draft", "gatehouse"),
            Some("deliver draft")
        );
        assert_eq!(
            after_mention("Thanks! @gatehouse please add docs\ntoo", "@gatehouse"),
            Some("please add docs\ntoo")
        );
        assert_eq!(after_mention("ask @gatehouse-bot", "gatehouse"), None);
        assert_eq!(after_mention("mail me@gatehouse", "gatehouse"), None);
        assert_eq!(after_mention("no mention", "gatehouse"), None);
    }
}
