//! Reconciliation: GitHub does not redeliver a webhook that found Gatehouse down, so at
//! start and every few minutes the open issues carrying a trigger label are listed, and
//! those with no run of the trigger's SOP get one — exactly once, however many replicas
//! reconcile at the same time.

use std::time::{Duration, Instant};

use gatehouse_events::{RequirementState, TraceParent};
use gatehouse_github::{FoundIssue, GithubClient, GithubError};
use gatehouse_outage::Outage;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::triggers::{LabelEvent, start_trigger};
use crate::issue_requirement::{self, Subject, github_actor};
use crate::{ApiError, ApiState, Trigger};

/// Reconciles at once and then every `interval` until `shutdown`.
pub async fn reconcile_github(
    api: ApiState,
    client: GithubClient,
    interval: Duration,
    shutdown: CancellationToken,
) {
    let mut outage = Outage::new(format!("GitHub API at {}", client.api_url()));
    loop {
        match reconcile_once(&api, &client).await {
            Ok(started) => {
                Outage::log(&outage.answered(Instant::now()));
                if started > 0 {
                    tracing::info!(
                        started,
                        "reconciliation started runs for labels added while Gatehouse was away"
                    );
                }
            }
            // GitHub down: said once, then at growing intervals, in the words the
            // notifier and the delivery processor use; tried again at the interval.
            Err(ReconcileError::Github(GithubError::Unavailable(why))) => {
                let (say, _) = outage.failed(Instant::now(), &why);
                Outage::log(&say);
            }
            Err(e) => {
                tracing::warn!(error = %e, "reconciling GitHub labels failed; trying again later")
            }
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
    }
}

/// Why a reconciliation pass stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// GitHub could not be asked.
    #[error(transparent)]
    Github(#[from] gatehouse_github::GithubError),
    /// The database could not be used.
    #[error(transparent)]
    Store(#[from] ApiError),
}

impl From<gatehouse_store::StoreError> for ReconcileError {
    fn from(e: gatehouse_store::StoreError) -> Self {
        Self::Store(e.into())
    }
}

/// One pass of what [`reconcile_github`] repeats: returns how many runs it started.
pub async fn reconcile_once(
    api: &ApiState,
    client: &GithubClient,
) -> Result<usize, ReconcileError> {
    let Some(github) = api.github.clone() else {
        return Ok(0);
    };
    let mut started = 0;
    // Assignments are not searched for: an issue assigned while Gatehouse was away is
    // started by assigning it again.
    for trigger in github.triggers.iter().filter(|t| !t.assigned) {
        // One search per owner or repository the trigger names; what a glob's owner
        // search finds beyond the glob is left alone.
        for scope in trigger.repositories().search_qualifiers() {
            for issue in client.open_with_label(&trigger.label, &scope).await? {
                if trigger.matches(&trigger.label, &issue.repo())
                    && reconcile_issue(api, trigger, &issue).await?
                {
                    started += 1;
                }
            }
        }
    }
    Ok(started)
}

/// Reconciles one issue in a trace of its own, in a `reconcile` span.
async fn reconcile_issue(
    api: &ApiState,
    trigger: &Trigger,
    issue: &FoundIssue,
) -> Result<bool, ReconcileError> {
    let trace = TraceParent::new_root();
    let span = tracing::info_span!("reconcile", trace_id = trace.trace_id());
    crate::trace::within(trace, reconcile_traced(api, trigger, issue))
        .instrument(span)
        .await
}

async fn reconcile_traced(
    api: &ApiState,
    trigger: &Trigger,
    issue: &FoundIssue,
) -> Result<bool, ReconcileError> {
    // A fork cannot be told from a search result: pull requests are left to their
    // webhooks unless the trigger accepts forks anyway.
    if issue.pull_request.is_some() && !trigger.allow_forks {
        return Ok(false);
    }
    let repo = issue.repo();
    // Read before the transaction: on SQLite a transaction holds the only write lock,
    // and reads through other connections meanwhile are best avoided.
    let key = format!("github:{repo}#{}", issue.number);
    if let Some(known) = api.store.requirement_by_key(&key).await? {
        let runs = api.store.runs_of_requirement(known.id).await?;
        if runs.iter().any(|r| r.sop == trigger.sop) {
            return Ok(false);
        }
    }
    let mut tx = api.store.begin().await?;
    let subject = Subject {
        repo: &repo,
        number: issue.number,
        pull_request: issue.pull_request.is_some(),
        title: &issue.title,
        body: issue.body.as_deref().unwrap_or_default(),
        url: &issue.html_url,
        state: RequirementState::Open,
        author: &issue.user.login,
        updated_at: &issue.updated_at,
    };
    let requirement = issue_requirement::sync(api, &mut tx, &subject).await?;
    let event = LabelEvent {
        repo: &repo,
        number: issue.number,
        label: &trigger.label,
        title: &issue.title,
        url: &issue.html_url,
        // One reconciliation start per issue, label and SOP, across replicas.
        updated_at: "reconciled",
        from_fork: false,
        assignment: false,
        sender: github_actor(api, &issue.user.login).await?,
    };
    let note = start_trigger(api, &mut tx, &requirement, trigger, &event).await?;
    tx.commit().await?;
    tracing::info!(%repo, number = issue.number, label = %trigger.label, %note, "reconciled");
    Ok(note.starts_with("started"))
}
