//! Labels that start SOPs, and what removing one does.

use std::collections::BTreeMap;

use gatehouse_events::{Actor, Event, RunCommand, RunCommandKind, RunRequested};
use gatehouse_sop::Sop;
use gatehouse_store::{RequirementRow, Tx};
use uuid::Uuid;

use super::conversation;
use crate::rights::may_start;
use crate::{ApiError, ApiState, Trigger, outbox, projects, run_request};
use gatehouse_project::Request;

/// A label event on an issue or pull request.
pub(crate) struct LabelEvent<'a> {
    /// `owner/name`.
    pub repo: &'a str,
    /// Issue or pull request number.
    pub number: u64,
    pub label: &'a str,
    /// The subject's title and link, offered to the SOP as parameters.
    pub title: &'a str,
    pub url: &'a str,
    /// The subject's `updated_at`: the same label event delivered twice (by an
    /// organisation hook and a repository hook) carries the same one.
    pub updated_at: &'a str,
    /// A pull request whose head is in a fork.
    pub from_fork: bool,
    /// An issue assigned to (or unassigned from) the bot, not a label: the `assigned`
    /// triggers apply, and `label` is [`ASSIGNED`].
    pub assignment: bool,
    /// Who labelled it.
    pub sender: Actor,
}

/// Starts the SOPs of the triggers matching a newly added label, once per label event.
/// Returns what happened, for the delivery's note.
pub(crate) async fn labeled(
    api: &ApiState,
    tx: &mut Tx,
    requirement: &RequirementRow,
    event: &LabelEvent<'_>,
) -> Result<Vec<String>, ApiError> {
    let mut notes = Vec::new();
    for trigger in triggers_for(api, event) {
        notes.push(start(api, tx, requirement, &trigger, event).await?);
    }
    Ok(notes)
}

/// Starts what one trigger starts: its conversation on the issue, or its SOP.
async fn start(
    api: &ApiState,
    tx: &mut Tx,
    requirement: &RequirementRow,
    trigger: &Trigger,
    event: &LabelEvent<'_>,
) -> Result<String, ApiError> {
    match trigger.conversation {
        true => conversation::open(api, tx, requirement, trigger, event).await,
        false => start_trigger(api, tx, requirement, trigger, event).await,
    }
}

/// The configured triggers of a label event's label and repository, or of an assignment
/// to the bot there.
fn triggers_for(api: &ApiState, event: &LabelEvent<'_>) -> Vec<Trigger> {
    api.github.as_ref().map_or_else(Vec::new, |github| {
        github
            .triggers
            .iter()
            .filter(|t| match event.assignment {
                true => t.matches_assignment(event.repo),
                false => t.matches(event.label, event.repo),
            })
            .cloned()
            .collect()
    })
}

/// What an assignment to the bot is called in the key that starts its run once and in
/// notes, where a label's name goes.
pub(crate) const ASSIGNED: &str = "assigned to the bot";

/// Starts what the `assigned` triggers of the issue's repository start: a conversation on
/// the issue, or each its own SOP, or the `default_sop` of the issue's project.
pub(crate) async fn assigned(
    api: &ApiState,
    tx: &mut Tx,
    requirement: &RequirementRow,
    event: &LabelEvent<'_>,
) -> Result<Vec<String>, ApiError> {
    let mut notes = Vec::new();
    for trigger in triggers_for(api, event) {
        let Some(trigger) = with_project_sop(api, trigger, event.repo) else {
            notes.push(format!(
                "assigned: the trigger names no `sop` and {}'s project has no `default_sop`",
                event.repo
            ));
            continue;
        };
        notes.push(start(api, tx, requirement, &trigger, event).await?);
    }
    if notes.is_empty() {
        notes.push("assigned to the bot, but no `assigned` trigger covers this repository".into());
    }
    Ok(notes)
}

/// Cancels what an assignment started, where its trigger says so (as a label's removal).
pub(crate) async fn unassigned(
    api: &ApiState,
    tx: &mut Tx,
    requirement: &RequirementRow,
    event: &LabelEvent<'_>,
) -> Result<Vec<String>, ApiError> {
    let triggers = triggers_for(api, event)
        .into_iter()
        .filter_map(|t| with_project_sop(api, t, event.repo))
        .collect();
    cancel_started(api, tx, requirement, event, triggers).await
}

/// The trigger with its SOP: its own, or the `default_sop` of `repo`'s project. A
/// conversation's trigger needs none.
fn with_project_sop(api: &ApiState, mut trigger: Trigger, repo: &str) -> Option<Trigger> {
    if trigger.sop.is_empty() && !trigger.conversation {
        let project = projects::project_of_repo(api, repo)?;
        trigger.sop = api.projects.get(&project)?.config().default_sop.clone()?;
    }
    Some(trigger)
}

/// Starts one trigger's SOP for a label event, unless this occurrence (`updated_at`)
/// started it before. Returns what happened.
pub(crate) async fn start_trigger(
    api: &ApiState,
    tx: &mut Tx,
    requirement: &RequirementRow,
    trigger: &Trigger,
    event: &LabelEvent<'_>,
) -> Result<String, ApiError> {
    if event.from_fork && !trigger.allow_forks {
        return Ok(format!(
            "`{}` not started: the pull request comes from a fork (allow_forks = false)",
            trigger.sop
        ));
    }
    let Some(sop) = api.catalog.get(&trigger.sop) else {
        tracing::error!(label = %event.label, sop = %trigger.sop, "a GitHub trigger names an SOP that does not exist");
        return Ok(format!("trigger names no SOP `{}`", trigger.sop));
    };
    let sop = &*sop;
    // The labeller's groups as they are now (none for someone Gatehouse does not know),
    // read once for every check below.
    let groups = match &event.sender.person {
        Some(person) => api.people.groups_now(&api.store, person).await?,
        None => Vec::new(),
    };
    if let Some(refusal) = labeller_refused(trigger, sop, &event.sender, &groups) {
        return Ok(format!("`{}` not started: {refusal}", trigger.sop));
    }
    let params = issue_params(sop, event);
    if let Err(why) = sop.check_start(&params) {
        return Ok(format!("`{}` cannot start: {why}", trigger.sop));
    }
    // The issue's repository brings its project; a repository no project lists is
    // refused when projects are configured.
    let request = Request {
        issue_repo: Some(event.repo),
        sop: Some(&sop.name),
        ..Request::default()
    };
    let workspace = match projects::bind(api, request, event.sender.person.as_deref(), &groups) {
        Ok(workspace) => workspace,
        Err(ApiError::Unprocessable(why) | ApiError::Forbidden(why)) => {
            return Ok(format!("`{}` not started: {why}", trigger.sop));
        }
        Err(other) => return Err(other),
    };
    projects::claim_for_requirement(tx, Some(requirement.id), workspace.as_ref()).await?;
    let run_id = Uuid::now_v7();
    let key = format!(
        "github:{}#{}:{}:{}:{}",
        event.repo, event.number, event.label, trigger.sop, event.updated_at
    );
    if !tx.record_trigger_start(&key, run_id).await? {
        return Ok(format!(
            "`{}` already started for this label event (delivered twice)",
            trigger.sop
        ));
    }
    let request = RunRequested {
        run_id,
        sop: sop.name.clone(),
        params,
        requirement_id: Some(requirement.id),
        requested_by: event.sender.clone(),
        schedule: None,
        parent: None,
        workspace,
    };
    run_request::request(tx, sop, request).await?;
    Ok(format!("started `{}` as run {run_id}", trigger.sop))
}

/// Why the person who labelled may not start the trigger's SOP, if they may not: the
/// trigger's `require_person` and `starters`, then the SOP's own `starters`.
fn labeller_refused(
    trigger: &Trigger,
    sop: &Sop,
    sender: &Actor,
    groups: &[String],
) -> Option<String> {
    let Some(person) = &sender.person else {
        let needs_person =
            trigger.require_person || trigger.starters.is_some() || sop.starters.is_some();
        return needs_person.then(|| {
            format!(
                "`{}` is not one of the people known to Gatehouse, and this trigger starts runs only for them",
                sender.handle
            )
        });
    };
    if let Some(why) = not_a_starter(trigger, person, groups) {
        return Some(why);
    }
    may_start(sop, person, groups)
        .err()
        .map(|refused| refused.to_string())
}

/// Why the trigger's `starters` refuse `person`, if they do.
pub(super) fn not_a_starter(trigger: &Trigger, person: &str, groups: &[String]) -> Option<String> {
    let starters = trigger.starters.as_ref()?;
    (!gatehouse_sop::names_person(starters, person, groups)).then(|| {
        format!(
            "{person} may not start it by labelling; the trigger's starters are {}",
            starters.join(", ")
        )
    })
}

/// Cancels the runs a removed label started, where its trigger says so.
pub(crate) async fn unlabeled(
    api: &ApiState,
    tx: &mut Tx,
    requirement: &RequirementRow,
    event: &LabelEvent<'_>,
) -> Result<Vec<String>, ApiError> {
    let triggers = triggers_for(api, event);
    cancel_started(api, tx, requirement, event, triggers).await
}

/// Cancels the requirement's unfinished runs of each trigger's SOP, for the triggers that
/// say `cancel_on_unlabel`.
async fn cancel_started(
    api: &ApiState,
    tx: &mut Tx,
    requirement: &RequirementRow,
    event: &LabelEvent<'_>,
    triggers: Vec<Trigger>,
) -> Result<Vec<String>, ApiError> {
    let mut notes = Vec::new();
    for trigger in triggers {
        if let Some(note) = conversation::stop(api, tx, &trigger, event, what(event)).await? {
            notes.push(note);
            continue;
        }
        if !trigger.cancel_on_unlabel {
            notes.push(format!(
                "{} removed; runs of `{}` go on (cancel_on_unlabel = false)",
                what(event),
                trigger.sop
            ));
            continue;
        }
        for run in api.store.runs_of_requirement(requirement.id).await? {
            let ended = ["succeeded", "failed", "cancelled"].contains(&run.status.as_str());
            if run.sop != trigger.sop || ended {
                continue;
            }
            let command = RunCommand {
                run_id: run.id,
                command: RunCommandKind::Cancel,
                actor: event.sender.clone(),
            };
            outbox::append(tx, Event::RunCommand(command)).await?;
            notes.push(format!(
                "{} removed: cancelling run {}",
                what(event),
                run.id
            ));
        }
    }
    Ok(notes)
}

/// What was removed, in a note: the label, or the assignment.
fn what(event: &LabelEvent<'_>) -> &'static str {
    if event.assignment {
        "assignment"
    } else {
        "label"
    }
}

/// The parameters a triggered SOP gets from its issue: those it declares among `repo`,
/// `issue`, `title` and `url`.
fn issue_params(sop: &Sop, event: &LabelEvent<'_>) -> BTreeMap<String, String> {
    [
        ("repo", event.repo.to_owned()),
        ("issue", event.number.to_string()),
        ("title", event.title.to_owned()),
        ("url", event.url.to_owned()),
    ]
    .into_iter()
    .filter(|(name, _)| sop.params.contains_key(*name))
    .map(|(name, value)| (name.to_owned(), value))
    .collect()
}
