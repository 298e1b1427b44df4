//! Labels that start SOPs, and what removing one does.

use std::collections::BTreeMap;

use gatehouse_events::{Actor, Event, RunCommand, RunCommandKind, RunRequested};
use gatehouse_sop::Sop;
use gatehouse_store::{RequirementRow, Tx};
use uuid::Uuid;

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
        notes.push(start_trigger(api, tx, requirement, &trigger, event).await?);
    }
    Ok(notes)
}

/// The configured triggers of a label event's label and repository.
fn triggers_for(api: &ApiState, event: &LabelEvent<'_>) -> Vec<Trigger> {
    api.github.as_ref().map_or_else(Vec::new, |github| {
        github
            .triggers
            .iter()
            .filter(|t| t.matches(event.label, event.repo))
            .cloned()
            .collect()
    })
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
    if let Some(starters) = &trigger.starters
        && !gatehouse_sop::names_person(starters, person, groups)
    {
        return Some(format!(
            "{person} may not start it by labelling; the trigger's starters are {}",
            starters.join(", ")
        ));
    }
    may_start(sop, person, groups)
        .err()
        .map(|refused| refused.to_string())
}

/// Cancels the runs a removed label started, where its trigger says so.
pub(crate) async fn unlabeled(
    api: &ApiState,
    tx: &mut Tx,
    requirement: &RequirementRow,
    event: &LabelEvent<'_>,
) -> Result<Vec<String>, ApiError> {
    let mut notes = Vec::new();
    for trigger in triggers_for(api, event) {
        if !trigger.cancel_on_unlabel {
            notes.push(format!(
                "label removed; runs of `{}` go on (cancel_on_unlabel = false)",
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
            notes.push(format!("label removed: cancelling run {}", run.id));
        }
    }
    Ok(notes)
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
