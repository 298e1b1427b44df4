//! Mentions that talk to the assistant: prose, `steer`, `stop`, `ask` and (in a
//! conversation's thread) `status` and `deliver`. Ingest checks who may (the project's
//! `converse` right, and its `run` right for `deliver`), opens the thread's conversation
//! on its first message, numbers what was said and hands it on as `conversation.input`;
//! the scheduler owns the conversation from there, and its answers (acknowledgements,
//! replies, refusals that depend on its state) come from there. What ingest refuses, it
//! answers itself, and nothing is stored but the delivery.

use std::collections::BTreeSet;

use gatehouse_commands::IdRef;
use gatehouse_conversation::Conversation;
use gatehouse_events::{Actor, RunCommandKind, RunStatus, Said};
use gatehouse_project::Right;
use gatehouse_store::IdKind;
use gatehouse_store::{ConversationRow, NewConversation, Tx};
use uuid::Uuid;

use super::ChatMention;
use super::requirement::thread_requirement;
use crate::ids::resolve_ref;
use crate::intake::commands::send_run_command;
use crate::projects::{Reader, require};
use crate::{ApiError, ApiState};

/// `[assistant]`, as far as ingest reads it: that conversations are on, and which roles
/// `ask` may name.
#[derive(Debug, Clone)]
pub struct Assistant {
    /// The role every turn runs.
    pub role: String,
    /// Every configured role.
    pub roles: BTreeSet<String>,
    /// The roles `ask` may name: those whose configuration says `askable = true`.
    pub askable: BTreeSet<String>,
}

/// What ingest did with something said to the assistant.
pub(crate) enum Heard {
    /// Handed to the conversation, which answers in the thread.
    Passed { seq: u64, conversation: Uuid },
    /// Refused here; the text is the answer.
    Refused { note: String, reply: String },
}

impl Heard {
    fn refused(note: &str, reply: String) -> Self {
        Self::Refused {
            note: note.to_owned(),
            reply,
        }
    }
}

/// What a mention says to the assistant, as read: `take over` names its run by an id or a
/// prefix, which [`hear`] resolves among the runs its author may read.
#[derive(Debug, Clone)]
pub(crate) enum Saying {
    /// Anything but `take over`.
    Said(Said),
    /// `take over RUN`.
    TakeOver(IdRef),
}

/// Hands `said` to the thread's conversation (`conversation`, as [`of_thread`] found it),
/// opening it on a first message.
pub(crate) async fn hear(
    api: &ApiState,
    tx: &mut Tx,
    m: &ChatMention,
    actor: &Actor,
    said: Saying,
    conversation: Option<ConversationRow>,
) -> Result<Heard, ApiError> {
    let Some(assistant) = &api.assistant else {
        return Err(ApiError::Internal(
            "a message for the assistant, but [assistant] is not configured".into(),
        ));
    };
    let Some(person) = actor.person.as_deref() else {
        return Ok(Heard::refused(
            "conversation: refused, unknown person",
            format!(
                "Sorry, I only work with people configured for Gatehouse, and `{}` is not one of them. Ask an administrator to add your {} id to [[people]].",
                m.user,
                m.platform.name()
            ),
        ));
    };
    if let Saying::Said(Said::Ask { role, .. }) = &said
        && let Some(refused) = unaskable(assistant, role)
    {
        return Ok(refused);
    }
    let groups = api.people.current(&api.store).await?.groups(person);
    let said = match said {
        Saying::Said(said) => said,
        Saying::TakeOver(run) => {
            match resolve_ref(api, IdKind::Run, &run, Reader::new(person, &groups)).await {
                Ok(run) => Said::TakeOver { run },
                Err(failed @ (ApiError::Unavailable | ApiError::Internal(_))) => {
                    return Err(failed);
                }
                Err(refused) => {
                    return Ok(Heard::refused(
                        "take over: refused, no such run",
                        format!("Sorry, I can't take over `{run}`: {refused}."),
                    ));
                }
            }
        }
    };
    let conversation = match conversation {
        Some(row) => row,
        None if matches!(said, Said::Message { .. }) => {
            match open(api, tx, m, actor, person, &groups, &said).await? {
                Ok(row) => row,
                Err(refused) => return Ok(refused),
            }
        }
        None => {
            return Ok(Heard::refused(
                "conversation: none in this thread",
                "There is no conversation in this thread yet: mention me with what you need, and I will start working on it here.".into(),
            ));
        }
    };
    let Some(project) = api.projects.get(&conversation.project) else {
        return Ok(Heard::refused(
            "conversation: refused, project gone",
            format!(
                "This conversation's project `{}` is no longer configured, so I cannot go on with it.",
                conversation.project
            ),
        ));
    };
    if let Err(refusal) = require(project, Right::Converse, Some(person), &groups) {
        return Ok(Heard::refused(
            "conversation: refused, may not converse",
            format!("Sorry, I can't take this from you: {refusal}."),
        ));
    }
    // `deliver` pushes a work branch and opens a pull request: the project's `run` right,
    // as starting a run that delivers would need.
    if let Said::Deliver { .. } = &said
        && let Err(refusal) = require(project, Right::Run, Some(person), &groups)
    {
        return Ok(Heard::refused(
            "deliver: refused, may not run",
            format!(
                "Sorry, I can't deliver for you: delivering pushes a work branch and opens a pull request, which needs the project's `run` right, and {refusal}."
            ),
        ));
    }
    if let Said::TakeOver { run } = &said
        && let Err(reply) =
            pause_for_take_over(api, tx, &conversation, *run, actor, &groups).await?
    {
        return Ok(Heard::refused("take over: refused", reply));
    }
    let seq = crate::outbox::say_to_conversation(tx, conversation.id, person, said).await?;
    Ok(Heard::Passed {
        seq,
        conversation: conversation.id,
    })
}

/// Why `ask ROLE` cannot name `role`, when it cannot: no such role, or one that does not
/// say `askable = true` (a role made for SOP nodes, with its keys, is nobody's to prompt).
fn unaskable(assistant: &Assistant, role: &str) -> Option<Heard> {
    let askable = || match assistant.askable.is_empty() {
        true => "none of the configured roles may be asked".to_owned(),
        false => {
            let names: Vec<&str> = assistant.askable.iter().map(String::as_str).collect();
            format!("the roles you may ask are {}", names.join(", "))
        }
    };
    if !assistant.roles.contains(role) {
        return Some(Heard::refused(
            "ask: refused, unknown role",
            format!("There is no role `{role}` to ask; {}.", askable()),
        ));
    }
    if !assistant.askable.contains(role) {
        return Some(Heard::refused(
            "ask: refused, role not askable",
            format!(
                "The role `{role}` may not be asked (its configuration does not say `askable = true`); {}.",
                askable()
            ),
        ));
    }
    None
}

/// The conversation the mention continues: its thread's, or (a reply to one of the bot's
/// messages, as Discord's reply chains are) the one that posted the message replied to.
pub(crate) async fn of_thread(
    tx: &mut Tx,
    m: &ChatMention,
) -> Result<Option<ConversationRow>, ApiError> {
    let platform = m.platform.name();
    if let Some(row) = tx
        .conversation_by_thread(platform, &m.channel, &m.root)
        .await?
    {
        return Ok(Some(row));
    }
    Ok(tx
        .conversation_of_posted(platform, &m.root)
        .await?
        .filter(|row| row.channel == m.channel))
}

/// The project a direct message works on: the one project that lets `person` converse.
/// With none, or several to choose from, the person is told where to go instead.
fn direct_project<'a>(
    api: &'a ApiState,
    person: &str,
    groups: &[String],
) -> Result<&'a gatehouse_project::Project, Heard> {
    let mine: Vec<_> = api
        .projects
        .iter()
        .filter(|p| p.grants(Right::Converse, person, groups))
        .collect();
    match mine.as_slice() {
        [one] => Ok(one),
        [] => Err(Heard::refused(
            "conversation: refused, no project to converse in",
            "No project lets you talk to its assistant, so there is nothing I can work on for you here.".into(),
        )),
        several => {
            let names: Vec<&str> = several.iter().map(|p| p.name()).collect();
            Err(Heard::refused(
                "conversation: refused, which project",
                format!(
                    "You may work with me on {}: mention me in that project's channel, so I know which repositories you mean.",
                    names.join(", ")
                ),
            ))
        }
    }
}

/// `take over RUN`: the run must work on the conversation's requirement; one still going is
/// paused in this transaction, so it changes its workspace no more. `Err` is the answer
/// refusing it.
async fn pause_for_take_over(
    api: &ApiState,
    tx: &mut Tx,
    conversation: &ConversationRow,
    run: Uuid,
    actor: &Actor,
    groups: &[String],
) -> Result<Result<(), String>, ApiError> {
    let Some(row) = api.store.run(run).await? else {
        return Ok(Err(format!("There is no run {run} to take over.")));
    };
    if row.requirement_id != Some(conversation.requirement_id) {
        return Ok(Err(format!(
            "Run {run} works on another requirement; only a run of this thread's requirement can be taken over here."
        )));
    }
    if row.status.is_terminal() || row.status == RunStatus::Paused {
        return Ok(Ok(()));
    }
    let pause = send_run_command(api, tx, run, actor, groups, RunCommandKind::Pause);
    match pause.await {
        Ok(_) => Ok(Ok(())),
        // Failing to read or write is not an answer; the delivery is processed again.
        Err(failed @ (ApiError::Unavailable | ApiError::Internal(_))) => Err(failed),
        Err(refused) => Ok(Err(format!("Run {run} cannot be paused: {refused}."))),
    }
}

/// Opens the thread's conversation on the channel's project, with the thread's requirement
/// (created from the message when the thread has none).
async fn open(
    api: &ApiState,
    tx: &mut Tx,
    m: &ChatMention,
    actor: &Actor,
    person: &str,
    groups: &[String],
    said: &Said,
) -> Result<Result<ConversationRow, Heard>, ApiError> {
    let project = match channel_project(api, m).and_then(|name| api.projects.get(name)) {
        Some(project) => project,
        None if m.direct => match direct_project(api, person, groups) {
            Ok(project) => project,
            Err(refused) => return Ok(Err(refused)),
        },
        None => {
            return Ok(Err(Heard::refused(
                "conversation: refused, channel of no project",
                "This channel belongs to no project, so I have no repositories to work on here. An administrator adds it to a project's `channels` in the configuration.".into(),
            )));
        }
    };
    if let Err(refusal) = require(project, Right::Converse, Some(person), groups) {
        return Ok(Err(Heard::refused(
            "conversation: refused, may not converse",
            format!("Sorry, I can't take this from you: {refusal}."),
        )));
    }
    let text = match said {
        Said::Message { text } => text.as_str(),
        _ => "",
    };
    let requirement = thread_requirement(tx, m, actor, text, Some(project.name())).await?;
    tx.claim_requirement_project(requirement.id, project.name())
        .await?;
    let row = open_in(tx, project, requirement.id, m, person).await?;
    Ok(Ok(row))
}

/// The conversation of the mention's thread, opened on `project`'s workspace for
/// `requirement` (the one already there when another delivery opened it first).
pub(crate) async fn open_in(
    tx: &mut Tx,
    project: &gatehouse_project::Project,
    requirement: Uuid,
    m: &ChatMention,
    person: &str,
) -> Result<ConversationRow, ApiError> {
    let workspace = serde_json::to_string(&project.workspace(None))?;
    let state = serde_json::to_string(&Conversation::new())?;
    let (row, _) = tx
        .open_conversation(&NewConversation {
            id: Uuid::now_v7(),
            requirement_id: requirement,
            project: project.name(),
            platform: m.platform.name(),
            channel: &m.channel,
            thread: &m.root,
            started_by: person,
            workspace: &workspace,
            state: &state,
        })
        .await?;
    Ok(row)
}

/// The project whose channels include the mention's (`slack:C0API`).
pub(crate) fn channel_project<'a>(api: &'a ApiState, m: &ChatMention) -> Option<&'a str> {
    let channel = format!("{}:{}", m.platform.name(), m.channel);
    api.projects.of_channel(&channel).map(|p| p.name())
}
