//! The runner's side of a run's workspace: the repositories the run works on
//! ([`RunScope`]) checked out before a node runs ([`crate::deliver::prepare`]), and the
//! tree of every repository recorded after each attempt, which an approval binds and
//! delivery is held to.

use gatehouse_bus::HandlerError;
use gatehouse_events::NodeDispatch;
use uuid::Uuid;

use super::Nodes;
use super::attempt::Step;
use crate::deliver::checkouts;
use crate::deliver::mirrors::Lease;
use crate::deliver::prepare::{Layout, Prepared};
use crate::deliver::trees::{self, Objects, UNVERIFIABLE, short};
use crate::durably::durably;
use crate::files::RunDirs;
use crate::scope::RunScope;

impl Nodes {
    /// What the run works on, as this runner reads it (one that cannot clone gives a run
    /// on an issue no repository). `Ok(Err(reason))`: its frozen workspace cannot be read.
    pub(super) async fn scope(&self, run: Uuid) -> Step<RunScope> {
        RunScope::read(
            &self.runner.store,
            self.runner
                .options
                .delivery
                .as_ref()
                .is_some_and(|d| d.github.is_some()),
            run,
        )
        .await
    }

    /// Checks the run's repositories out into its workspace, unless they are already (then
    /// only points them at this runner's mirrors again); the git sessions' lines go to the
    /// attempt's log. The mirrors, held for the attempt. `Err`: why not, which fails the
    /// attempt.
    pub(super) async fn prepare_workspace(
        &self,
        job: &NodeDispatch,
        scope: &RunScope,
        dirs: &RunDirs,
    ) -> Result<Vec<Lease>, String> {
        let repositories = &scope.workspace.repositories;
        if repositories.is_empty() {
            return Ok(Vec::new());
        }
        let Some(delivery) = &self.runner.options.delivery else {
            if dirs.checkouts().exists() {
                return Ok(Vec::new());
            }
            let repos: Vec<&str> = repositories.iter().map(|r| r.repo.as_str()).collect();
            return Err(format!(
                "the run works on {}, but this runner cannot clone repositories: {}",
                repos.join(", "),
                crate::delivering::CANNOT_CLONE
            ));
        };
        let planned = scope.plan()?;
        let (workspace, record, scratch) = (dirs.workspace(), dirs.checkouts(), dirs.scratch());
        let local = dirs.local();
        let layout = Layout {
            workspace: &workspace,
            record: &record,
            scratch: &scratch,
            local: &local,
        };
        let fresh = !record.exists();
        let began = std::time::Instant::now();
        let mut log = Vec::new();
        let prepared = delivery.prepare(&planned, &layout, &mut log).await;
        let took = began.elapsed();
        self.store_log(job, &log).await;
        let Prepared { checkouts, leases } = prepared?;
        if !fresh {
            return Ok(leases);
        }
        let lines: Vec<String> = checkouts
            .iter()
            .map(|c| {
                let place = if c.dir.is_empty() {
                    "the workspace".to_owned()
                } else {
                    format!("`{}`", c.dir)
                };
                let branch = c
                    .branch
                    .as_deref()
                    .map_or_else(|| "read-only".to_owned(), |b| format!("on `{b}`"));
                format!(
                    "[gatehouse] {} checked out in {place}, {branch} ({})",
                    c.repo,
                    c.mode.as_str()
                )
            })
            .chain(std::iter::once(format!(
                "[gatehouse] workspace prepared in {:.1} s",
                took.as_secs_f64()
            )))
            .collect();
        self.store_log(job, &lines).await;
        Ok(leases)
    }

    /// Records the tree of every repository of the workspace as the attempt left it; one
    /// that cannot be computed is recorded as [unverifiable](UNVERIFIABLE), which no
    /// approval can match, so a delivery after it refuses.
    pub(super) async fn record_trees(
        &self,
        job: &NodeDispatch,
        scope: &RunScope,
        dirs: &RunDirs,
    ) -> Result<(), HandlerError> {
        let loaded = scope
            .plan()
            .and_then(|planned| checkouts::load(&dirs.checkouts(), &planned));
        let checkouts = match loaded {
            Ok(Some(checkouts)) => checkouts,
            Ok(None) => return Ok(()),
            Err(reason) => {
                tracing::warn!(%reason, "reading the workspace's checkouts failed");
                self.store_log(job, &[format!("[gatehouse] {reason}")])
                    .await;
                return Ok(());
            }
        };
        let (workspace, scratch) = (dirs.workspace(), dirs.scratch());
        let mut trees = Vec::new();
        let mut lines = Vec::new();
        for checkout in &checkouts {
            let shared = self
                .runner
                .options
                .delivery
                .as_ref()
                .and_then(|d| d.shared_objects(checkout));
            let path = checkout.path(&workspace);
            let tree = match trees::tree(&path, &scratch, Objects::Scratch, shared.as_deref()).await
            {
                Ok(tree) => {
                    lines.push(format!(
                        "[gatehouse] tree of {}: {}",
                        checkout.repo,
                        short(&tree)
                    ));
                    tree
                }
                Err(reason) => {
                    lines.push(format!(
                        "[gatehouse] the tree of {} cannot be verified ({reason}); no delivery will push it",
                        checkout.repo
                    ));
                    format!("{UNVERIFIABLE}{reason}")
                }
            };
            trees.push((checkout.repo.clone(), tree));
        }
        let attempt = i32::try_from(job.attempt).unwrap_or(i32::MAX);
        durably("recording the workspace's trees", || {
            self.runner
                .store
                .record_workspace_trees(job.run_id, &job.node, attempt, &trees)
        })
        .await?;
        self.store_log(job, &lines).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
