//! Messages addressed to the bot: a command, or a request in prose. With `[assistant]`
//! configured, prose (and `steer`, `stop`, `ask`) goes to the thread's conversation
//! ([`super::conversation`]), which answers for itself; without it, prose becomes the
//! thread's requirement (and starts the channel's SOP when one is configured). Every
//! other mention gets one reply in its thread; `login` also sends a sign-in link by
//! direct message ([`super::login`]).

use std::collections::BTreeMap;

use gatehouse_commands::{Command, Mention, parse_mention};
use gatehouse_events::{Actor, Said};
use gatehouse_store::{ConversationRow, Tx};

use super::conversation::{Heard, Saying, channel_project, hear, of_thread};
use super::requirement::{find_thread_requirement, thread_requirement};
use super::{ChatMention, Platform, login};
use crate::intake::commands::{self, Scope};
use crate::intake::deliveries::Outcome;
use crate::issue_requirement::issue_requirement;
use crate::{ApiError, ApiState, projects};

/// Where a text answer goes.
pub(crate) struct Reply<'a> {
    pub platform: Platform,
    /// The message's key: one answer per delivery, however often it is processed.
    pub key: &'a str,
    /// Channel id.
    pub channel: &'a str,
    /// Thread (Slack) or message replied to (Discord).
    pub thread: Option<&'a str>,
    /// For an ephemeral answer: the Slack user, or the Discord interaction token.
    pub recipient: Option<&'a str>,
}

/// Carries out a mention and wants its reply, keyed by the delivery so a redelivery or
/// a restart does not answer twice.
pub(crate) async fn answer(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &str,
    m: &ChatMention,
) -> Result<Outcome, ApiError> {
    let actor = chat_actor(api, m.platform, &m.user).await?;
    let mention = parse_mention(&m.text);
    // The thread's conversation, looked up once for whatever the mention turns out to be.
    let conversation = match api.assistant {
        Some(_) => of_thread(tx, m).await?,
        None => None,
    };
    if let Some(said) = for_the_assistant(api, m, &mention, conversation.as_ref()) {
        match hear(api, tx, m, &actor, said, conversation).await? {
            Heard::Passed { seq, conversation } => {
                let note = format!("conversation {conversation}: message {seq}");
                return Ok(Outcome::processed(vec![note]));
            }
            Heard::Refused { note, reply } => {
                reply_once(tx, delivery, m, &reply).await?;
                return Ok(Outcome::processed(vec![note]));
            }
        }
    }
    let (note, reply) = match mention {
        Mention::Command(Command::Login) => login::send_link(api, tx, delivery, m, &actor).await?,
        Mention::Command(command) => {
            chat_command(api, tx, m, &actor, command, conversation).await?
        }
        Mention::Error(error) => {
            let help = matches!(
                error,
                gatehouse_commands::ParseError::UnknownCommand(_)
                    | gatehouse_commands::ParseError::Empty
            )
            .then(|| format!("\n```\n{}\n```", gatehouse_commands::help()))
            .unwrap_or_default();
            (error.to_string(), format!("{error}{help}"))
        }
        Mention::FreeText(text) => free_text(api, tx, m, &actor, &text).await?,
    };
    reply_once(tx, delivery, m, &reply).await?;
    Ok(Outcome::processed(vec![note]))
}

/// The mention's one answer in its thread, keyed by the delivery.
async fn reply_once(
    tx: &mut Tx,
    delivery: &str,
    m: &ChatMention,
    reply: &str,
) -> Result<(), ApiError> {
    let key = format!("reply:{}:{delivery}", m.platform.name());
    let to = Reply {
        platform: m.platform,
        key: &key,
        channel: &m.channel,
        thread: Some(&m.reply_to),
        recipient: None,
    };
    want_chat_text(tx, &to, reply).await
}

/// What the mention says to the assistant, when `[assistant]` is on: prose (but in a
/// `channel_sops` channel of no project, which starts its SOP as before), `steer`, `stop`,
/// `ask`, `deliver` and `take over`, and `status` in a thread that has a conversation
/// (elsewhere it is about runs, as before).
pub(crate) fn for_the_assistant(
    api: &ApiState,
    m: &ChatMention,
    mention: &Mention,
    conversation: Option<&ConversationRow>,
) -> Option<Saying> {
    api.assistant.as_ref()?;
    let said = match mention {
        // A channel of no project that starts an SOP on requests (`channel_sops`) keeps
        // doing so, unless the thread is a conversation already.
        Mention::FreeText(_)
            if channel_project(api, m).is_none()
                && api.chat.channel_sop(m.platform, &m.channel).is_some()
                && conversation.is_none() =>
        {
            None
        }
        Mention::FreeText(text) => Some(Said::Message { text: text.clone() }),
        Mention::Command(Command::Steer { text }) => Some(Said::Steer { text: text.clone() }),
        Mention::Command(Command::Stop) => Some(Said::Stop),
        Mention::Command(Command::Deliver { draft }) => Some(Said::Deliver { draft: *draft }),
        Mention::Command(Command::Ask { role, text }) => Some(Said::Ask {
            role: role.clone(),
            text: text.clone(),
        }),
        Mention::Command(Command::Status { run: None }) if conversation.is_some() => {
            Some(Said::Status)
        }
        Mention::Command(Command::TakeOver { run }) => {
            return Some(Saying::TakeOver(run.clone()));
        }
        _ => None,
    };
    said.map(Saying::Said)
}

async fn chat_command(
    api: &ApiState,
    tx: &mut Tx,
    m: &ChatMention,
    actor: &Actor,
    command: Command,
    conversation: Option<ConversationRow>,
) -> Result<(String, String), ApiError> {
    let known = actor.person.is_some();
    if let Command::Run {
        issue: Some(issue), ..
    } = &command
    {
        let repo = format!("{}/{}", issue.owner, issue.repo);
        if !projects::is_named(api, &repo) {
            return Ok((
                format!("run: refused, repository `{repo}` is not configured"),
                format!(
                    "`{command}`: refused: Gatehouse works only on the repositories its configuration names, and `{repo}` is not one of them (an administrator adds it to a project's repositories, a trigger's `repos` or [github] repositories)."
                ),
            ));
        }
    }
    // In a conversation's thread, commands are about its requirement, and a run started
    // there works on its workspace.
    // A run needs something to work on: the issue it names, or else this thread, which
    // becomes a requirement. Other commands only look the thread up.
    let requirement = match (&command, &conversation) {
        (
            Command::Run {
                issue: Some(issue), ..
            },
            _,
        ) if known => Some(issue_requirement(api, tx, issue, actor).await?),
        (_, Some(conversation)) => api.store.requirement(conversation.requirement_id).await?,
        (Command::Run { issue: None, .. }, None) if known => {
            Some(thread_requirement(tx, m, actor, &m.text, channel_project(api, m)).await?)
        }
        _ => find_thread_requirement(tx, m).await?,
    };
    let on_the_conversation = matches!(command, Command::Run { issue: None, .. });
    let scope = Scope {
        requirement: requirement.as_ref(),
        anywhere: true,
        place: "thread",
        project: channel_project(api, m),
        conversation: conversation.as_ref().filter(|_| on_the_conversation),
    };
    let done = commands::carry_out(api, tx, &scope, actor, command).await?;
    // Chat has no status comment to show that a command worked, so say so.
    let reply = done
        .reply
        .unwrap_or_else(|| format!("Done: {}.", done.note));
    Ok((done.note, reply))
}

/// Prose: the thread's requirement, started with the channel's SOP when it has one.
async fn free_text(
    api: &ApiState,
    tx: &mut Tx,
    m: &ChatMention,
    actor: &Actor,
    text: &str,
) -> Result<(String, String), ApiError> {
    if actor.person.is_none() {
        return Ok((
            "request refused: unknown person".into(),
            format!(
                "Sorry, I can only take requests from people configured for Gatehouse, and `{}` is not one of them. Ask an administrator to add your {} id to [[people]].",
                m.user,
                m.platform.name()
            ),
        ));
    }
    let project = channel_project(api, m);
    let requirement = thread_requirement(tx, m, actor, text, project).await?;
    let default_sop = project
        .and_then(|name| api.projects.get(name))
        .and_then(|p| p.config().default_sop.as_deref());
    let Some(sop) = api.chat.channel_sop(m.platform, &m.channel).or(default_sop) else {
        return Ok((
            format!("requirement {} noted", requirement.source_key),
            "Noted as a requirement for this thread. No SOP is configured for this channel; start one here with `run SOP`.".into(),
        ));
    };
    let scope = Scope {
        requirement: Some(&requirement),
        anywhere: true,
        place: "thread",
        project,
        conversation: None,
    };
    let command = Command::Run {
        sop: sop.to_owned(),
        issue: None,
        params: BTreeMap::new(),
    };
    let done = commands::carry_out(api, tx, &scope, actor, command).await?;
    let reply = match done.reply {
        Some(refusal) => format!("Noted as a requirement for this thread, but {refusal}"),
        None => format!("Noted as a requirement for this thread. {}.", done.note),
    };
    Ok((done.note, reply))
}

/// A chat account as an actor, resolved to a configured person when there is one.
pub(crate) async fn chat_actor(
    api: &ApiState,
    platform: Platform,
    user: &str,
) -> Result<Actor, ApiError> {
    let people = api.people.current(&api.store).await?;
    let person = match platform {
        Platform::Slack => people.by_slack(user),
        Platform::Discord => people.by_discord(user),
        Platform::Github => people.by_github(user),
    };
    Ok(Actor {
        channel: platform.channel(),
        handle: user.to_owned(),
        person: person.map(|p| p.id.clone()),
    })
}

/// Wants a text message in chat: a reply in a thread, or an ephemeral answer.
pub(crate) async fn want_chat_text(
    tx: &mut Tx,
    to: &Reply<'_>,
    text: &str,
) -> Result<(), ApiError> {
    let body = serde_json::to_string(&gatehouse_chat::Body::text(text))?;
    tx.want_chat_message(&gatehouse_store::WantChat {
        key: to.key,
        platform: to.platform.name(),
        channel: to.channel,
        thread: to.thread,
        recipient: to.recipient,
        run_id: None,
        body: &body,
    })
    .await?;
    Ok(())
}
