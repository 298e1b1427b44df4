//! Where an attempt meets the GitHub issue its run works on, when deliveries are
//! configured: the issue's repository is cloned into the run's workspace before a node
//! runs, and a `deliver` node's attempt hands the workspace to the
//! [`Deliverer`](crate::deliver::Deliverer) and records the pull request it opened. How the
//! repository is cloned and delivered, and kept safe from what earlier nodes left in it,
//! is [`crate::deliver`]'s; this is the runner's side: which issue, which log, which
//! records.

use gatehouse_bus::HandlerError;
use gatehouse_events::{DeliverSpec, NodeDispatch, NodeFinished, NodeOutcome};
use gatehouse_store::AttemptStatus;

use super::Runner;
use crate::deliver::{DeliveredTo, Target};
use crate::files::RunDirs;

/// The GitHub issue a run works on.
pub(super) struct Issue {
    requirement: uuid::Uuid,
    repo: String,
    number: u64,
    title: String,
}

impl Runner {
    /// The GitHub issue of the run's requirement, when deliveries are configured.
    pub(super) async fn github_issue(
        &self,
        run_id: uuid::Uuid,
    ) -> Result<Option<Issue>, HandlerError> {
        if self.options.delivery.is_none() {
            return Ok(None);
        }
        let Some(requirement) = self.store.run(run_id).await?.and_then(|r| r.requirement_id) else {
            return Ok(None);
        };
        let Some(requirement) = self.store.requirement(requirement).await? else {
            return Ok(None);
        };
        Ok(match serde_json::from_str(&requirement.source) {
            Ok(gatehouse_events::RequirementSource::Github { repo, number, .. }) => Some(Issue {
                requirement: requirement.id,
                repo,
                number,
                title: requirement.title,
            }),
            _ => None,
        })
    }

    /// Clones the issue's repository into the run's workspace, unless it is a clone
    /// already; the git session's lines go to the attempt's log. `Err`: why it could not,
    /// which fails the attempt.
    pub(super) async fn clone_issue(
        &self,
        job: &NodeDispatch,
        issue: Option<&Issue>,
        dirs: &RunDirs,
    ) -> Result<(), String> {
        let (Some(delivery), Some(issue)) = (&self.options.delivery, issue) else {
            return Ok(());
        };
        let prepared = match delivery.session(&issue.repo).await {
            Ok(mut session) => {
                let cloned = delivery
                    .prepare(&issue.repo, &dirs.workspace(), &mut session)
                    .await;
                self.store_log(job, &session.lines).await;
                cloned
            }
            Err(reason) => Err(reason),
        };
        prepared.map_err(|reason| format!("cloning {}: {reason}", issue.repo))
    }

    /// A `deliver` node's attempt.
    pub(super) async fn deliver(
        &self,
        job: &NodeDispatch,
        spec: &DeliverSpec,
        issue: Option<Issue>,
        dirs: &RunDirs,
        started: std::time::Instant,
    ) -> Result<NodeFinished, HandlerError> {
        let Some(delivery) = self.options.delivery.clone() else {
            let reason = "deliver needs [github] with a token (and git_url) in the configuration";
            return self.failed(job, reason.into(), started).await;
        };
        let Some(issue) = issue else {
            let reason = "deliver needs a run that works on a GitHub issue";
            return self.failed(job, reason.into(), started).await;
        };
        let target = Target {
            repo: &issue.repo,
            number: issue.number,
            title: &issue.title,
            run: job.run_id,
        };
        let mut session = match delivery.session(&issue.repo).await {
            Ok(session) => session,
            Err(reason) => return self.failed(job, reason, started).await,
        };
        let delivered = delivery
            .deliver(&target, &dirs.workspace(), spec, &mut session)
            .await;
        self.store_log(job, &session.lines).await;
        let note = match delivered {
            Ok(DeliveredTo::Pull { number, branch }) => {
                self.store
                    .record_pull_request(
                        &issue.repo,
                        number,
                        issue.requirement,
                        job.run_id,
                        &branch,
                    )
                    .await?;
                format!("pull request #{number} on {}", issue.repo)
            }
            Ok(DeliveredTo::Merged(base)) => format!("merged into {base} on {}", issue.repo),
            Err(reason) => return self.failed(job, reason, started).await,
        };
        self.store_log(job, &[format!("delivered: {note}")]).await;
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let attempt = i32::try_from(job.attempt).unwrap_or(i32::MAX);
        self.store
            .finish_attempt(
                job.run_id,
                &job.node,
                attempt,
                AttemptStatus::Succeeded,
                None,
                None,
                Some(i64::try_from(duration_ms).unwrap_or(i64::MAX)),
            )
            .await?;
        Ok(NodeFinished {
            run_id: job.run_id,
            node: job.node.clone(),
            attempt: job.attempt,
            outcome: NodeOutcome::Succeeded,
            exit_code: None,
            duration_ms,
            artifacts: Vec::new(),
        })
    }
}
