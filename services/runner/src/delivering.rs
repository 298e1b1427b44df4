//! What delivering needs from the runner, whichever kind of work delivers (a `deliver`
//! node, a conversation's `deliver`): why nothing can be delivered without a remote, and the
//! values of every secret the configuration names for the work, whose addition a delivery
//! refuses to push; and the head each delivery pushed to a pull request, recorded so a
//! check result for an older head is told apart and the next answer lists what it adds.

use gatehouse_bus::HandlerError;
use gatehouse_events::PullRef;
use gatehouse_store::PushedBranchRow;
use uuid::Uuid;

use crate::deliver::{Delivered, DeliveredTo};
use crate::durably::durably;
use crate::runner::Runner;
use crate::secrets::Secrets;

/// Why nothing can be delivered by a runner with no way to any remote.
pub(crate) const NOT_CONFIGURED: &str = "deliver needs a way to the repositories: [github] with a token or an app, or repositories that name their own `url` (or `forge`)";

/// What a runner that cannot clone lacks.
pub(crate) const CANNOT_CLONE: &str = "configure [github] with a token or an app, or give the project's repositories their own `url` (any git remote)";

/// The record of a branch pushed to a repository that is not on GitHub, by `by` (a run,
/// or a conversation) for `requirement`; `None` for any other delivery.
pub(crate) fn pushed_row(
    by: Uuid,
    requirement: Option<Uuid>,
    done: &Delivered,
) -> Option<PushedBranchRow> {
    let (branch, commit, remote, request) = match &done.to {
        DeliveredTo::PushedBranch {
            branch,
            commit,
            url,
        } => (branch, commit, url, None),
        DeliveredTo::Request {
            forge,
            number,
            branch,
            url,
            head,
            remote,
            ..
        } => (branch, head, remote, Some((forge, number, url))),
        _ => return None,
    };
    Some(PushedBranchRow {
        run_id: by,
        repo: done.repo.clone(),
        requirement_id: requirement,
        branch: branch.clone(),
        commit_sha: commit.clone(),
        remote: remote.clone(),
        forge: request.map(|(forge, _, _)| forge.clone()),
        request_number: request.and_then(|(_, number, _)| i64::try_from(*number).ok()),
        request_url: request.map(|(_, _, url)| url.clone()),
        created_at: std::time::SystemTime::now().into(),
    })
}

impl Runner {
    /// Records, for each pull request in `delivered`, the head commit the delivery pushed
    /// to it ([`gatehouse_store::Store::record_pull_head`]). A delivery answering feedback
    /// calls it after the answer is posted, so an attempt retried before that still finds
    /// the head from before and lists the same commits.
    pub(crate) async fn pushed_head(&self, delivered: &[Delivered]) -> Result<(), HandlerError> {
        for done in delivered {
            let DeliveredTo::Pull { number, head, .. } = &done.to else {
                continue;
            };
            if head.is_empty() {
                continue;
            }
            let repo = &done.repo;
            durably("recording a pull request's head", || {
                self.store.record_pull_head(repo, *number, head)
            })
            .await?;
        }
        Ok(())
    }

    /// The head last recorded as pushed to `pull` of `requirement`; `None` when none was.
    pub(crate) async fn recorded_head(
        &self,
        requirement: Uuid,
        pull: &PullRef,
    ) -> Result<Option<String>, HandlerError> {
        let rows = self.store.pull_requests_of_requirement(requirement).await?;
        Ok(rows
            .into_iter()
            .find(|r| r.repo == pull.repo && u64::try_from(r.number).ok() == Some(pull.number))
            .map(|r| r.head_sha)
            .filter(|head| !head.is_empty()))
    }

    /// The values of the secrets configured for the work being delivered, whose addition
    /// a delivery refuses: every configured role's, every node's of `run`'s SOP as it was
    /// frozen, and `declared` (the `deliver` node's own). One that is not set in the
    /// runner's environment cannot leak from it, and is left out.
    pub(crate) async fn delivery_secrets(
        &self,
        run: Option<Uuid>,
        declared: &[String],
    ) -> Result<Secrets, HandlerError> {
        let mut names: Vec<String> = declared.to_vec();
        for role in self.options.roles.values() {
            names.extend(role.secrets.iter().cloned());
        }
        if let Some(run) = run {
            names.extend(self.sop_secrets(run).await?);
        }
        names.sort();
        names.dedup();
        // Unlike a sandbox's, an unset one is no one's mistake here: nothing to warn of.
        let values = names
            .into_iter()
            .filter_map(|name| std::env::var(&name).ok().map(|value| (name, value)));
        Ok(Secrets::new(values))
    }

    /// The secrets the nodes of `run`'s frozen SOP declare.
    async fn sop_secrets(&self, run: Uuid) -> Result<Vec<String>, HandlerError> {
        let Some(row) = self.store.run(run).await? else {
            return Ok(Vec::new());
        };
        let Some((source, body)) = self.store.sop_version_body(&row.sop_version).await? else {
            return Ok(Vec::new());
        };
        match gatehouse_sop::parse(&source, &body) {
            Ok(sop) => Ok(sop.nodes.into_iter().flat_map(|n| n.secrets).collect()),
            Err(err) => {
                tracing::warn!(%run, error = %err, "the run's frozen SOP does not parse; its secrets are not looked for in the delivery");
                Ok(Vec::new())
            }
        }
    }
}
