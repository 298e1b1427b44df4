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
use crate::deliver::prepare::Layout;
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

    /// Checks the run's repositories out into its workspace, unless they are already;
    /// the git sessions' lines go to the attempt's log. `Err`: why not, which fails the
    /// attempt.
    pub(super) async fn prepare_workspace(
        &self,
        job: &NodeDispatch,
        scope: &RunScope,
        dirs: &RunDirs,
    ) -> Result<(), String> {
        let repositories = &scope.workspace.repositories;
        if repositories.is_empty() || dirs.checkouts().exists() {
            return Ok(());
        }
        let Some(delivery) = &self.runner.options.delivery else {
            let repos: Vec<&str> = repositories.iter().map(|r| r.repo.as_str()).collect();
            return Err(format!(
                "the run works on {}, but this runner cannot clone repositories: {}",
                repos.join(", "),
                crate::delivering::CANNOT_CLONE
            ));
        };
        let planned = scope.plan()?;
        let (workspace, record, scratch) = (dirs.workspace(), dirs.checkouts(), dirs.scratch());
        let layout = Layout {
            workspace: &workspace,
            record: &record,
            scratch: &scratch,
        };
        let mut log = Vec::new();
        let prepared = delivery.prepare(&planned, &layout, &mut log).await;
        self.store_log(job, &log).await;
        let checkouts = prepared?;
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
            .collect();
        self.store_log(job, &lines).await;
        Ok(())
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
            let tree = match trees::tree(&checkout.path(&workspace), &scratch, Objects::Scratch)
                .await
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
