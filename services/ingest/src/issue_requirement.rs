//! Requirements for issues and pull requests: created on first sight, kept current by
//! later events (title and body edits, close, reopen, merge).
//! GitHub's webhooks keep them; the API's `issue` and chat's `run SOP on owner/repo#N`
//! find or create them too, so they sit under both.

use gatehouse_commands::IssueRef;
use gatehouse_events::{
    Actor, Channel, Event, RequirementSource, RequirementState, RequirementUpdated,
};
use gatehouse_store::{RequirementRow, Tx};

use crate::new_requirement::{self, NewRequirement};
use crate::{ApiError, ApiState, outbox};

/// An issue or pull request as a webhook shows it.
pub(crate) struct Subject<'a> {
    /// `owner/name`.
    pub repo: &'a str,
    pub number: u64,
    /// Whether it is a pull request.
    pub pull_request: bool,
    pub title: &'a str,
    pub body: &'a str,
    pub url: &'a str,
    pub state: RequirementState,
    /// Who opened it.
    pub author: &'a str,
    /// GitHub's `updated_at` of this view of it; empty when unknown.
    pub updated_at: &'a str,
}

/// The subject's requirement, created (with `requirement.created`) or brought up to
/// date (with `requirement.updated`) in `tx`.
pub(crate) async fn sync(
    api: &ApiState,
    tx: &mut Tx,
    subject: &Subject<'_>,
) -> Result<RequirementRow, ApiError> {
    let key = format!("github:{}#{}", subject.repo, subject.number);
    let Some(mut row) = tx.requirement_by_key(&key).await? else {
        return create_issue_requirement(api, tx, key, subject).await;
    };
    // Deliveries can arrive out of order: an older view must not undo a newer one.
    if subject.updated_at < row.source_updated_at.as_str() {
        return Ok(row);
    }
    // A merged pull request stays delivered when its `closed` event comes later.
    let state = match (row.state, subject.state) {
        (RequirementState::Delivered, RequirementState::Closed) => RequirementState::Delivered,
        (_, state) => state,
    };
    if row.title == subject.title && row.body == subject.body && row.state == state {
        return Ok(row);
    }
    let update = RequirementUpdated {
        requirement_id: row.id,
        title: (row.title != subject.title).then(|| subject.title.to_owned()),
        body: (row.body != subject.body).then(|| subject.body.to_owned()),
        state,
    };
    tx.update_requirement(
        row.id,
        subject.title,
        subject.body,
        state,
        subject.updated_at,
    )
    .await?;
    outbox::append(tx, Event::RequirementUpdated(update)).await?;
    row.title = subject.title.to_owned();
    row.body = subject.body.to_owned();
    row.state = state;
    Ok(row)
}

async fn create_issue_requirement(
    api: &ApiState,
    tx: &mut Tx,
    key: String,
    subject: &Subject<'_>,
) -> Result<RequirementRow, ApiError> {
    let new = NewRequirement {
        key,
        source: RequirementSource::Github {
            repo: subject.repo.to_owned(),
            number: subject.number,
            pull_request: subject.pull_request,
        },
        title: subject.title.to_owned(),
        body: subject.body.to_owned(),
        url: Some(subject.url.to_owned()),
        state: subject.state,
        source_updated_at: subject.updated_at.to_owned(),
        author: github_actor(api, subject.author).await?,
        project: crate::projects::project_of_repo(api, subject.repo),
    };
    new_requirement::create(tx, new).await
}

/// A GitHub account as an actor, resolved to a configured person when there is one.
pub(crate) async fn github_actor(api: &ApiState, login: &str) -> Result<Actor, ApiError> {
    Ok(Actor {
        channel: Channel::Github,
        handle: login.to_owned(),
        person: api
            .people
            .by_github_now(&api.store, login)
            .await?
            .map(|p| p.id),
    })
}

/// The requirement of an issue named by reference (chat's `run SOP on owner/repo#N`, the
/// API's `issue`); created when Gatehouse has not seen the
/// issue yet (its title and body arrive with the issue's next webhook).
pub(crate) async fn issue_requirement(
    api: &ApiState,
    tx: &mut Tx,
    issue: &IssueRef,
    actor: &Actor,
) -> Result<RequirementRow, ApiError> {
    let repo = format!("{}/{}", issue.owner, issue.repo);
    let name = format!("{repo}#{}", issue.number);
    let subject = Subject {
        repo: &repo,
        number: issue.number,
        pull_request: false,
        title: &name,
        body: "",
        url: "",
        state: RequirementState::Open,
        author: &actor.handle,
        // Older than any webhook's view, so a known issue is left as GitHub described it.
        updated_at: "",
    };
    sync(api, tx, &subject).await
}
