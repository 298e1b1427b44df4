//! A `deliver` node's attempt on the runner's side: the run's checked-out repositories and
//! its latest approval handed to the [`Deliverer`](crate::deliver::Deliverer), and what it
//! delivered recorded — each pull request with the requirement, each direct merge with the
//! gate that approved it. How repositories are verified, committed, pushed and merged, and
//! kept safe from what earlier nodes left in them, is [`crate::deliver`]'s. The secrets a
//! delivery refuses to push are every one the configuration names for the work
//! ([`Runner::delivery_secrets`](crate::runner::Runner::delivery_secrets)).
//!
//! A node whose run was sent back by feedback on a pull request (`answer` in its spec)
//! delivers to the same branch and pull request and answers there
//! ([`Deliverer::answer`](crate::deliver::Deliverer::answer)); when nothing changed it
//! says so on the pull request, pushes nothing, and succeeds. The head each pull request
//! was pushed to is recorded ([`Runner::pushed_head`](crate::runner::Runner::pushed_head)).

use gatehouse_bus::HandlerError;
use gatehouse_events::{DeliverSpec, NodeDispatch};
use gatehouse_store::DirectMergeRow;

use super::Nodes;
use super::report::Ended;
use crate::deliver::answer::{Answer, Answered};
use crate::deliver::approval;
use crate::deliver::checkouts;
use crate::deliver::trees::short;
use crate::deliver::{Delivered, DeliveredTo, Deliveries, Delivery};
use crate::delivering::{NOT_CONFIGURED, pushed_row};
use crate::durably::durably;
use crate::files::RunDirs;
use crate::outcome::Verdict;
use crate::scope::RunScope;

impl Nodes {
    /// A `deliver` node's attempt.
    pub(super) async fn deliver(
        &self,
        job: &NodeDispatch,
        spec: &DeliverSpec,
        scope: &RunScope,
        dirs: &RunDirs,
        started: std::time::Instant,
    ) -> Result<Ended, HandlerError> {
        let Some(delivery) = self.runner.options.delivery.clone() else {
            return Ok(self.failed(job, NOT_CONFIGURED.into(), started));
        };
        if scope.workspace.repositories.is_empty() {
            let reason = "deliver needs a run with repositories: a project's, or a GitHub issue's";
            return Ok(self.failed(job, reason.into(), started));
        }
        let loaded = scope
            .plan()
            .and_then(|planned| checkouts::load(&dirs.checkouts(), &planned));
        let checkouts = match loaded {
            Ok(Some(checkouts)) => checkouts,
            Ok(None) => {
                let reason = "the run's workspace was never prepared; nothing to deliver";
                return Ok(self.failed(job, reason.into(), started));
            }
            Err(reason) => return Ok(self.failed(job, reason, started)),
        };
        let decisions = self.runner.store.decisions(job.run_id).await?;
        let approved = self.runner.store.approved_trees(job.run_id).await?;
        let approval = approval::latest(&decisions, &approved);
        let (workspace, scratch) = (dirs.workspace(), dirs.scratch());
        let request = Delivery {
            workspace: &workspace,
            scratch: &scratch,
            checkouts: &checkouts,
            subject: scope.subject(),
            approval: approval.as_ref(),
            spec,
            draft: false,
            secrets: &self
                .runner
                .delivery_secrets(Some(job.run_id), &job.secrets)
                .await?,
        };
        let requirement = scope.requirement.as_ref().map(|r| r.id);
        let mut log = Vec::new();
        let delivered: Result<Vec<Delivered>, String> = match &spec.answer {
            None => delivery.deliver(&request, &mut log).await,
            Some(feedback) => {
                let recorded = match requirement {
                    Some(requirement) => {
                        self.runner
                            .recorded_head(requirement, &feedback.pull)
                            .await?
                    }
                    None => None,
                };
                let answer = Answer {
                    by: format!("run:{}:node:{}", job.run_id, job.node),
                    reply: "",
                    recorded_head: recorded.as_deref(),
                };
                match delivery.answer(&request, &answer, &mut log).await {
                    Ok(Answered {
                        deliveries: Deliveries::Done(done),
                        ..
                    }) => Ok(done),
                    Ok(Answered {
                        deliveries: Deliveries::Unchanged(reason),
                        ..
                    }) => {
                        log.push(format!(
                            "[gatehouse] {reason}; nothing pushed, said so on {}",
                            feedback.pull
                        ));
                        Ok(Vec::new())
                    }
                    Err(reason) => Err(reason),
                }
            }
        };
        self.store_log(job, &log).await;
        let delivered = match delivered {
            Ok(delivered) => delivered,
            Err(reason) => return Ok(self.failed(job, reason, started)),
        };
        let mut notes = Vec::new();
        for done in &delivered {
            let repo = &done.repo;
            notes.push(match &done.to {
                DeliveredTo::Pull { number, branch, .. } => {
                    match requirement {
                        Some(requirement) => {
                            durably("recording a pull request", || {
                                self.runner.store.record_pull_request(repo, *number, requirement, job.run_id, branch)
                            })
                            .await?;
                        }
                        None => tracing::info!(%repo, number, "a pull request of a run on no requirement is not recorded"),
                    }
                    format!("delivered: pull request #{number} on {repo}")
                }
                DeliveredTo::Pushed { branch } => format!("delivered: pushed to {branch} on {repo}"),
                DeliveredTo::Merged { branch, commit } => {
                    let row = DirectMergeRow {
                        run_id: job.run_id,
                        repo: repo.clone(),
                        requirement_id: requirement,
                        branch: branch.clone(),
                        commit_sha: commit.clone(),
                        approved_by: approval.as_ref().map(|a| a.gate.clone()),
                        created_at: std::time::SystemTime::now().into(),
                    };
                    durably("recording a direct merge", || self.runner.store.record_direct_merge(&row)).await?;
                    format!("delivered: merged into {branch} on {repo}")
                }
                DeliveredTo::PushedBranch { branch, commit, url } => {
                    if let Some(row) = pushed_row(job.run_id, requirement, done) {
                        durably("recording a pushed branch", || self.runner.store.record_pushed_branch(&row)).await?;
                    }
                    format!("delivered: pushed branch {branch} at {} to {url}", short(commit))
                }
                DeliveredTo::Request { forge, number, branch, url, head, .. } => {
                    if let Some(row) = pushed_row(job.run_id, requirement, done) {
                        durably("recording a merge request", || self.runner.store.record_pushed_branch(&row)).await?;
                    }
                    format!("delivered: {repo}#{number} on the forge `{forge}` from {branch} at {} ({url})", short(head))
                }
            });
        }
        self.runner.pushed_head(&delivered).await?;
        self.store_log(job, &notes).await;
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(Ended::new(
            job,
            Verdict::succeeded(),
            Some(duration_ms),
            Vec::new(),
        ))
    }
}
