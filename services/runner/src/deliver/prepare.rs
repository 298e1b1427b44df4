//! Checking a run's repositories out into its workspace before its first node: each one
//! cloned from Gatehouse's remote and put on its work branch (per mode: `auto` and `new`
//! create it from the base, `existing` checks out the remote's, `read-only` stays on the
//! base).
//!
//! All or nothing: every repository is cloned into a scratch directory beside the
//! workspace first and moved into place only once all of them are, so a clone that fails
//! (a repository that does not exist, a token that may not read it, a branch missing)
//! leaves the workspace as it was. Once every repository is in place the
//! [record](super::checkouts) is written; with it there, preparing again (a later node, a
//! restart) clones nothing. A repository already cloned without a record (a workspace
//! prepared by an earlier version) is kept as it is.

use std::path::{Path, PathBuf};

use gatehouse_events::RepositoryMode;

use super::checkouts::{self, Checkout, Planned};
use super::{Deliverer, Origin, Remote, Session};
use crate::git::Network;
use crate::scratch::Scratch;

/// Where a preparation works: the workspace, the record beside it, and the scratch
/// directory clones are made in.
pub(crate) struct Layout<'a> {
    pub workspace: &'a Path,
    pub record: &'a Path,
    pub scratch: &'a Path,
}

impl Deliverer {
    /// Checks out every planned repository (unless the workspace was prepared already) and
    /// records how. The git sessions' lines go to `log`. `Err`: why one could not be,
    /// naming it; nothing of this preparation is left then.
    pub(crate) async fn prepare(
        &self,
        planned: &[Planned],
        layout: &Layout<'_>,
        log: &mut Vec<String>,
    ) -> Result<Vec<Checkout>, String> {
        if let Some(done) = checkouts::load(layout.record, planned)? {
            return Ok(done);
        }
        let staging = Scratch::new(layout.scratch, "prepare")
            .map_err(|e| format!("preparing the workspace: {e}"))?;
        let mut checkouts = Vec::new();
        let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
        for (index, planned) in planned.iter().enumerate() {
            let target = if planned.dir.is_empty() {
                layout.workspace.to_owned()
            } else {
                layout.workspace.join(&planned.dir)
            };
            if target.join(".git").exists() {
                checkouts.push(planned.adopted());
                continue;
            }
            refuse_files(&target, &planned.dir, &planned.checkout.repo)?;
            let into = staging.path().join(index.to_string());
            checkouts.push(self.check_out(planned, &into, layout.scratch, log).await?);
            staged.push((into, target));
        }
        let mut moved: Vec<PathBuf> = Vec::new();
        for (from, to) in &staged {
            if let Err(e) = move_into(from, to) {
                for done in &moved {
                    let _ = std::fs::remove_dir_all(done);
                }
                return Err(format!("moving a clone into the workspace: {e}"));
            }
            moved.push(to.clone());
        }
        checkouts::save(layout.record, &checkouts)?;
        Ok(checkouts)
    }

    /// Clones one repository into `into` and puts it on its work branch.
    async fn check_out(
        &self,
        planned: &Planned,
        into: &Path,
        scratch: &Path,
        log: &mut Vec<String>,
    ) -> Result<Checkout, String> {
        let repo = &planned.checkout.repo;
        let origin = Origin::of(&planned.checkout);
        let remote = self.remote(repo, &origin)?;
        let mut session = self.session(repo, &remote, scratch).await?;
        let done = self.clone_into(planned, &remote, into, &mut session).await;
        log.append(&mut session.lines);
        done
    }

    async fn clone_into(
        &self,
        planned: &Planned,
        remote: &Remote<'_>,
        into: &Path,
        session: &mut Session,
    ) -> Result<Checkout, String> {
        let checkout = &planned.checkout;
        let repo = &checkout.repo;
        let url = remote.url.clone();
        let parent = into.parent().unwrap_or(into);
        let dest = into.to_string_lossy().into_owned();
        self.run(
            &url,
            parent,
            None,
            Network::Remote,
            &["clone", "--quiet", "--no-checkout", "--", &url, &dest],
            session,
        )
        .await
        .map_err(|reason| format!("cloning {repo}: {}", plain(&reason)))?;
        let base = match &checkout.branch {
            Some(base) => base.clone(),
            None => self
                .local(
                    &url,
                    into,
                    &["symbolic-ref", "--quiet", "--short", "HEAD"],
                    session,
                )
                .await
                .map(|b| b.trim().to_owned())
                .map_err(|reason| format!("finding the default branch of {repo}: {reason}"))?,
        };
        if !self.has_branch(&url, into, &base, session).await {
            return Err(format!(
                "`{base}` does not exist in {repo} (its base branch)"
            ));
        }
        let (branch, from) = match checkout.mode {
            RepositoryMode::Existing => {
                let name = planned.branch.clone().unwrap_or_default();
                if !self.has_branch(&url, into, &name, session).await {
                    return Err(format!("`{name}` does not exist in {repo} (mode existing)"));
                }
                (name.clone(), name)
            }
            RepositoryMode::Auto | RepositoryMode::New => {
                (planned.branch.clone().unwrap_or_default(), base.clone())
            }
            RepositoryMode::ReadOnly => (base.clone(), base.clone()),
        };
        let from = format!("refs/remotes/origin/{from}");
        let args = ["checkout", "--quiet", "--no-track", "-B", &branch, &from];
        self.local(&url, into, &args, session)
            .await
            .map_err(|reason| format!("checking out `{branch}` of {repo}: {reason}"))?;
        let start = self
            .local(&url, into, &["rev-parse", "--verify", "HEAD"], session)
            .await
            .map_err(|reason| format!("reading {repo}'s HEAD: {reason}"))?;
        Ok(Checkout {
            repo: repo.clone(),
            dir: planned.dir.clone(),
            mode: checkout.mode,
            base: Some(base),
            branch: planned.branch.clone(),
            start: Some(start.trim().to_owned()),
            origin: Origin::of(checkout),
        })
    }

    /// Whether the fresh clone at `repo_dir` has the remote's `branch`.
    async fn has_branch(
        &self,
        url: &str,
        repo_dir: &Path,
        branch: &str,
        session: &mut Session,
    ) -> bool {
        let name = format!("refs/remotes/origin/{branch}^{{commit}}");
        self.local(
            url,
            repo_dir,
            &["rev-parse", "--verify", "--quiet", &name],
            session,
        )
        .await
        .is_ok()
    }
}

/// Git's reason without the command it came from (`git clone failed: fatal: x` → `x`).
fn plain(reason: &str) -> &str {
    let reason = reason.strip_prefix("git clone failed: ").unwrap_or(reason);
    reason.strip_prefix("fatal: ").unwrap_or(reason)
}

/// `Err` when `target` holds files but is no clone: nothing is cloned over them.
fn refuse_files(target: &Path, dir: &str, repo: &str) -> Result<(), String> {
    let has_files = std::fs::read_dir(target).is_ok_and(|mut entries| entries.next().is_some());
    match (has_files, dir.is_empty()) {
        (false, _) => Ok(()),
        (true, true) => Err(format!(
            "the workspace has files but is not a clone; cannot clone {repo} into it"
        )),
        (true, false) => Err(format!(
            "`{dir}` in the workspace has files but is not a clone; cannot clone {repo} into it"
        )),
    }
}

/// Moves a finished clone to `to`, which is missing or an empty directory.
fn move_into(from: &Path, to: &Path) -> std::io::Result<()> {
    if to.exists() {
        std::fs::remove_dir(to)?;
    }
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::rename(from, to)
}
