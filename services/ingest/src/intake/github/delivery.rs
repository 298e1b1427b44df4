//! GitHub deliveries: issues, pull requests and comments become requirements, triggered
//! runs and commands.

use gatehouse_events::RequirementState;
use gatehouse_github::{IssueCommentEvent, IssuesEvent, PullRequestEvent, Webhook};
use gatehouse_store::{DeliveryRow, PullState, Tx};

use super::conversation;
use super::lookup::Lookup;
use super::pulls;
use super::triggers::{ASSIGNED, LabelEvent, assigned, labeled, unassigned, unlabeled};
use crate::intake::commands::{self, Done, Scope};
use crate::intake::deliveries::Outcome;
use crate::issue_requirement::{self, Subject, github_actor};
use crate::{ApiError, ApiState, outbox, projects};

/// What a stored GitHub delivery comes to, written into `tx`.
pub(crate) async fn process(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &DeliveryRow,
    found: &Lookup,
) -> Result<Outcome, ApiError> {
    let parsed = Webhook::parse(&delivery.event, delivery.body.as_bytes());
    // Only repositories the configuration names are acted on: an App installed more
    // widely, or a hook on another repository, reaches nothing else.
    if let Ok(webhook) = &parsed
        && let Some(repo) = webhook.repository()
        && !projects::is_named(api, repo)
    {
        return Ok(Outcome::ignored(format!(
            "repository `{repo}` is not configured: name it in a trigger's `repos` or in [github] repositories"
        )));
    }
    if let Ok(webhook) = &parsed
        && let Some(outcome) = pulls::heard(api, tx, &delivery.delivery_id, webhook, found).await?
    {
        return Ok(outcome);
    }
    Ok(match parsed {
        Err(e) => {
            tracing::warn!(delivery = %delivery.delivery_id, event = %delivery.event, error = %e, "GitHub delivery lacks what Gatehouse reads; ignored");
            // Where in the body the parser stopped says nothing to the person reading.
            let why = e.to_string();
            let why = why.split(" at line ").next().unwrap_or_default();
            Outcome::ignored(format!(
                "payload not understood, so nothing was done: {why}"
            ))
        }
        Ok(Webhook::Ping) => {
            Outcome::ignored("ping: GitHub checking that the webhook reaches Gatehouse")
        }
        Ok(Webhook::Other(event)) => Outcome::ignored(format!("`{event}` events are not acted on")),
        Ok(Webhook::Issues(e)) => issues(api, tx, &e).await?,
        Ok(Webhook::PullRequest(e)) => pull_request(api, tx, delivery, &e).await?,
        Ok(Webhook::IssueComment(e)) => comment(api, tx, &delivery.delivery_id, &e).await?,
        // Reviews, checks and pushes were handled above, by `pulls::heard`.
        Ok(_) => Outcome::ignored(format!("`{}` events are not acted on", delivery.event)),
    })
}

async fn issues(api: &ApiState, tx: &mut Tx, e: &IssuesEvent) -> Result<Outcome, ApiError> {
    let issue = &e.issue;
    let subject = issue_subject(&e.repository.full_name, issue);
    let requirement = issue_requirement::sync(api, tx, &subject).await?;
    let label = LabelEvent {
        repo: subject.repo,
        number: issue.number,
        label: e.label.as_ref().map_or("", |l| l.name.as_str()),
        title: &issue.title,
        url: &issue.html_url,
        updated_at: &issue.updated_at,
        from_fork: false,
        assignment: false,
        sender: github_actor(api, &e.sender.login).await?,
    };
    let named = (label.label, label.repo);
    let notes = match e.action.as_str() {
        "labeled" => labeled(api, tx, &requirement, &label).await?,
        "unlabeled" => unlabeled(api, tx, &requirement, &label).await?,
        "assigned" | "unassigned" => {
            let assignee = e.assignee.as_ref().map_or("", |a| a.login.as_str());
            let bot = api.github.as_ref().map_or("", |g| g.bot_login.as_str());
            if !assignee.eq_ignore_ascii_case(bot) {
                return Ok(Outcome::ignored(format!(
                    "issue {} to @{assignee}, not to the bot (@{bot})",
                    e.action
                )));
            }
            let label = LabelEvent {
                label: ASSIGNED,
                assignment: true,
                ..label
            };
            if e.action == "assigned" {
                assigned(api, tx, &requirement, &label).await?
            } else {
                unassigned(api, tx, &requirement, &label).await?
            }
        }
        action => vec![format!("issue {action}: its requirement is up to date")],
    };
    Ok(labels_outcome(&e.action, named, notes))
}

async fn pull_request(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &DeliveryRow,
    e: &PullRequestEvent,
) -> Result<Outcome, ApiError> {
    let pr = &e.pull_request;
    let state = match (pr.state.as_str(), pr.merged) {
        (_, true) => RequirementState::Delivered,
        (state, false) => open_or_closed(state),
    };
    let subject = Subject {
        repo: &e.repository.full_name,
        number: pr.number,
        pull_request: true,
        title: &pr.title,
        body: pr.body.as_deref().unwrap_or_default(),
        url: &pr.html_url,
        state,
        author: &pr.user.login,
        updated_at: &pr.updated_at,
    };
    let requirement = issue_requirement::sync(api, tx, &subject).await?;
    let label = LabelEvent {
        repo: subject.repo,
        number: pr.number,
        label: e.label.as_ref().map_or("", |l| l.name.as_str()),
        title: &pr.title,
        url: &pr.html_url,
        updated_at: &pr.updated_at,
        from_fork: pr.from_fork(),
        assignment: false,
        sender: github_actor(api, &e.sender.login).await?,
    };
    let named = (label.label, label.repo);
    let notes = match e.action.as_str() {
        "labeled" => labeled(api, tx, &requirement, &label).await?,
        "unlabeled" => unlabeled(api, tx, &requirement, &label).await?,
        "closed" if pr.merged => {
            vec![pull_changed(api, tx, subject.repo, pr, PullState::Merged).await?]
        }
        "closed" => vec![pull_changed(api, tx, subject.repo, pr, PullState::Closed).await?],
        "reopened" => vec![pull_changed(api, tx, subject.repo, pr, PullState::Open).await?],
        action => vec![format!(
            "pull request {action}: its requirement is up to date"
        )],
    };
    let outcome = labels_outcome(&e.action, named, notes);
    pulls::record_pull_request(tx, &delivery.delivery_id, e, outcome.note()).await?;
    Ok(outcome)
}

/// What an issue or pull request event came to: ignored, and why, when a label was added
/// or removed that no trigger names for the repository.
fn labels_outcome(action: &str, (label, repo): (&str, &str), notes: Vec<String>) -> Outcome {
    if !notes.is_empty() {
        return Outcome::processed(notes);
    }
    match action {
        "labeled" => Outcome::ignored(format!(
            "label `{label}` starts nothing: no trigger names it for {repo}"
        )),
        "unlabeled" => Outcome::ignored(format!(
            "label `{label}` removed: no trigger names it for {repo}, so there is nothing to stop"
        )),
        "unassigned" => Outcome::ignored(format!(
            "unassigned from the bot: no `assigned` trigger covers {repo}, so there is nothing to stop"
        )),
        _ => Outcome::processed(notes),
    }
}

/// A pull request Gatehouse opened was closed or reopened. A requirement is delivered when
/// every pull request opened for it is merged, closed (without delivery) when any is
/// closed unmerged, and open again when that one is reopened.
async fn pull_changed(
    api: &ApiState,
    tx: &mut Tx,
    repo: &str,
    pr: &gatehouse_github::PullRequest,
    state: PullState,
) -> Result<String, ApiError> {
    let Some(id) = tx.set_pull_request_state(repo, pr.number, state).await? else {
        return Ok(format!("pull request {state} (not one Gatehouse opened)"));
    };
    let Some(requirement) = api.store.requirement(id).await? else {
        return Ok(format!("pull request {state}; its requirement is gone"));
    };
    let states = tx.pull_request_states(id).await?;
    let merged = states.iter().filter(|s| **s == PullState::Merged).count();
    let target = if states.contains(&PullState::Closed) {
        RequirementState::Closed
    } else if merged == states.len() {
        RequirementState::Delivered
    } else {
        RequirementState::Open
    };
    // Delivered stays delivered: what was merged is in.
    if requirement.state != target && requirement.state != RequirementState::Delivered {
        tx.update_requirement(id, &requirement.title, &requirement.body, target, "")
            .await?;
        let update = gatehouse_events::RequirementUpdated {
            requirement_id: id,
            title: None,
            body: None,
            state: target,
        };
        outbox::append(tx, gatehouse_events::Event::RequirementUpdated(update)).await?;
    }
    Ok(format!(
        "pull request {repo}#{} {state}: {merged} of {} merged, {} {target}",
        pr.number,
        states.len(),
        requirement.source_key
    ))
}

async fn comment(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &str,
    e: &IssueCommentEvent,
) -> Result<Outcome, ApiError> {
    let issue = &e.issue;
    let subject = issue_subject(&e.repository.full_name, issue);
    let requirement = issue_requirement::sync(api, tx, &subject).await?;
    let Some(github) = api.github.clone() else {
        return Ok(Outcome::ignored(
            "GitHub is not configured ([github]), so comments run no commands",
        ));
    };
    if github.is_own_comment(&e.comment.user.login, &e.comment.body) {
        return Ok(Outcome::ignored(format!(
            "comment by {}: Gatehouse's own comments run no commands",
            e.comment.user.login
        )));
    }
    let found = match e.action.as_str() {
        "created" => gatehouse_commands::parse_comment(&e.comment.body, &github.bot_login),
        // Only the commands the edit added run: the others ran when they were written.
        "edited" => {
            let before = e
                .changes
                .as_ref()
                .and_then(|c| c.body.as_ref())
                .map_or("", |b| b.from.as_str());
            gatehouse_commands::new_commands(before, &e.comment.body, &github.bot_login)
        }
        action => {
            return Ok(Outcome::ignored(format!(
                "comment {action}: only new and edited comments hold commands"
            )));
        }
    };
    if found.is_empty() {
        return Ok(Outcome::ignored("no command in the comment"));
    }
    // On an issue with a conversation, what is for the assistant is said to it.
    if let Some(outcome) = conversation::comment(api, tx, delivery, e).await? {
        return Ok(outcome);
    }
    // Prose for the bot on one of its pull requests (`@bot please rename this`) is review
    // feedback, not a command it does not know.
    let prose = found.iter().all(|c| {
        matches!(
            c.result,
            Err(gatehouse_commands::ParseError::UnknownCommand(_))
        )
    });
    if prose
        && e.action == "created"
        && let Some(outcome) = pulls::mention(api, tx, delivery, e).await?
    {
        return Ok(outcome);
    }
    // The same version of the comment under another delivery id runs nothing again.
    if !tx
        .claim_comment_commands(e.comment.id, &e.comment.updated_at, delivery)
        .await?
    {
        return Ok(Outcome::ignored(format!(
            "comment {} as of {} was acted on already, by another delivery",
            e.comment.id, e.comment.updated_at
        )));
    }
    let actor = github_actor(api, &e.comment.user.login).await?;
    let mut notes = Vec::new();
    let mut replies = Vec::new();
    for command in found {
        let done = match command.result {
            Ok(command) => {
                let scope = Scope {
                    requirement: Some(&requirement),
                    anywhere: false,
                    place: "issue",
                    project: None,
                    conversation: None,
                };
                commands::carry_out(api, tx, &scope, &actor, command).await?
            }
            Err(error) => {
                let help = matches!(
                    error,
                    gatehouse_commands::ParseError::UnknownCommand(_)
                        | gatehouse_commands::ParseError::Empty
                )
                .then(|| format!("\n\n```\n{}\n```", gatehouse_commands::help()))
                .unwrap_or_default();
                Done {
                    note: format!("line {}: {error}", command.line),
                    reply: Some(format!("`{}`: {error}{help}", command.text.trim())),
                }
            }
        };
        notes.push(done.note);
        replies.extend(done.reply);
    }
    if !replies.is_empty() {
        let reply = format!("@{} {}", e.comment.user.login, replies.join("\n\n"));
        let key = format!("reply:{delivery}");
        tx.want_comment(&key, &e.repository.full_name, issue.number, &reply)
            .await?;
    }
    Ok(Outcome::processed(notes))
}

/// An issue (or a pull request seen as an issue) as a requirement's subject.
fn issue_subject<'a>(repo: &'a str, issue: &'a gatehouse_github::Issue) -> Subject<'a> {
    Subject {
        repo,
        number: issue.number,
        pull_request: issue.pull_request.is_some(),
        title: &issue.title,
        body: issue.body.as_deref().unwrap_or_default(),
        url: &issue.html_url,
        state: open_or_closed(&issue.state),
        author: &issue.user.login,
        updated_at: &issue.updated_at,
    }
}

fn open_or_closed(state: &str) -> RequirementState {
    if state == "closed" {
        RequirementState::Closed
    } else {
        RequirementState::Open
    }
}
