//! Checking a run's repositories out into its workspace before its first node: each one
//! made from this runner's [mirror](super::mirrors) of it (or, with mirrors off, cloned
//! from Gatehouse's remote) and put on its work branch (per mode: `auto` and `new` create
//! it from the base, `existing` checks out the remote's, `read-only` stays on the base).
//!
//! All or nothing: every repository is checked out into a scratch directory beside the
//! workspace first and moved into place only once all of them are, so one that fails (a
//! repository that does not exist, a token that may not read it, a branch missing) leaves
//! the workspace as it was. Once every repository is in place the
//! [record](super::checkouts) is written; with it there, preparing again (a later node, a
//! restart, another runner after a checkpoint) checks out nothing, and only points the
//! workspace's repositories at this runner's mirrors again. A repository already cloned
//! without a record (a workspace prepared by an earlier version) is kept as it is.

use std::path::{Path, PathBuf};

use gatehouse_events::RepositoryMode;

use super::checkouts::{self, Checkout, Planned};
use super::mirrors::{Lease, Mirror, Mirrors, Refill, plain};
use super::spares::{init_shared, refresh_refs, share_objects};
use super::{Deliverer, Origin, Remote, Session};
use crate::git::Network;
use crate::scratch::Scratch;

/// Where a preparation works: the workspace, the record beside it, and the scratch
/// directory clones are made in.
pub(crate) struct Layout<'a> {
    pub workspace: &'a Path,
    pub record: &'a Path,
    pub scratch: &'a Path,
    /// The runner's record of the workspace's files ([`crate::checkpoint::Local`]): a fresh
    /// checkout seeds it with the repositories' blobs, and files a restore left pending
    /// are written from the mirrors.
    pub local: &'a Path,
}

/// A prepared workspace: how its repositories were checked out, and the mirrors they
/// share objects with, held while the caller works in it.
pub(crate) struct Prepared {
    pub checkouts: Vec<Checkout>,
    pub leases: Vec<Lease>,
}

/// Why a checkout failed: the configuration (a branch missing), or git itself — which,
/// from a mirror that was there before, may be the mirror's fault.
enum Failed {
    Branch(String),
    Git(String),
}

impl Failed {
    fn reason(self) -> String {
        match self {
            Self::Branch(reason) | Self::Git(reason) => reason,
        }
    }
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
    ) -> Result<Prepared, String> {
        if let Some(done) = checkouts::load(layout.record, planned)? {
            let leases = self.reattach(&done, layout, log).await?;
            return Ok(Prepared {
                checkouts: done,
                leases,
            });
        }
        let staging = Scratch::new(layout.scratch, "prepare")
            .map_err(|e| format!("preparing the workspace: {e}"))?;
        let mut checkouts = Vec::new();
        let mut leases = Vec::new();
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
            let (checkout, lease) = self
                .check_out(planned, &into, &target, layout.scratch, log)
                .await?;
            checkouts.push(checkout);
            leases.extend(lease);
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
        if self.mirrors.is_some() {
            self.seed(&checkouts, layout, log).await;
        }
        Ok(Prepared { checkouts, leases })
    }

    /// Records the files of the fresh checkouts as their repositories' blobs, so the
    /// workspace's checkpoints pack only what nodes change (see [`crate::checkpoint`]).
    /// A listing that fails only costs that: the files are hashed as any other.
    async fn seed(&self, checkouts: &[Checkout], layout: &Layout<'_>, log: &mut Vec<String>) {
        let mut repos = Vec::new();
        for checkout in checkouts {
            let Some(start) = &checkout.start else {
                continue;
            };
            let dir = checkout.path(layout.workspace);
            let args = ["ls-tree", "-r", "-l", "-z", "--full-tree", start.as_str()];
            match crate::git::local(&dir, Some(&dir), &args).await {
                Ok(out) => {
                    repos.push((checkout.dir.clone(), crate::checkpoint::parse_listing(&out)))
                }
                Err(reason) => log.push(format!("[gatehouse] listing {}: {reason}", checkout.repo)),
            }
        }
        let local = layout.local.to_owned();
        let workspace = layout.workspace.to_owned();
        if let Err(e) = crate::checkpoint::seed(local, workspace, repos).await {
            tracing::warn!(error = %e, "recording the checked-out files as blobs failed");
        }
    }

    /// Checks one repository out into `into` (to be moved to `target` in the workspace),
    /// on its work branch: from its mirror, held by the lease returned, or cloned when
    /// mirrors are off.
    async fn check_out(
        &self,
        planned: &Planned,
        into: &Path,
        target: &Path,
        scratch: &Path,
        log: &mut Vec<String>,
    ) -> Result<(Checkout, Option<Lease>), String> {
        let repo = &planned.checkout.repo;
        let origin = Origin::of(&planned.checkout);
        let remote = self.remote(repo, &origin)?;
        let mut session = self.session(repo, &remote, scratch).await?;
        let done = match &self.mirrors {
            Some(mirrors) => {
                self.check_out_from_mirror(mirrors, planned, &remote, into, target, &mut session)
                    .await
            }
            None => self
                .clone_into(planned, &remote, into, &mut session)
                .await
                .map(|checkout| (checkout, None)),
        };
        log.append(&mut session.lines);
        done
    }

    /// Brings the repository's mirror up to date and makes `into` from it; when git fails
    /// on a mirror that was there before, the mirror is discarded, fetched again, and the
    /// checkout tried once more.
    async fn check_out_from_mirror(
        &self,
        mirrors: &Mirrors,
        planned: &Planned,
        remote: &Remote<'_>,
        into: &Path,
        target: &Path,
        session: &mut Session,
    ) -> Result<(Checkout, Option<Lease>), String> {
        let repo = &planned.checkout.repo;
        let history = planned.checkout.history;
        let wanted = wanted(planned);
        let mirror = self
            .mirror(mirrors, repo, remote, history, &wanted, session)
            .await?;
        let reason = match self
            .share_mirror(mirrors, &mirror, planned, remote, into, session)
            .await
        {
            Ok(checkout) => {
                // The next run of the repository starts from a spare checkout, made once
                // this attempt is done with the repository.
                let mut lease = mirror.lease;
                if let Some(base) = &checkout.base {
                    lease.refill_when_done(Refill {
                        url: remote.url.clone(),
                        history,
                        default: mirror.default.clone(),
                        branch: base.clone(),
                        workspace: target.to_owned(),
                    });
                }
                return Ok((checkout, Some(lease)));
            }
            Err(Failed::Git(reason)) if mirror.warm => reason,
            Err(failed) => return Err(failed.reason()),
        };
        tracing::warn!(%repo, %reason, "a checkout from the mirror failed; fetching it again");
        drop(mirror);
        let _ = std::fs::remove_dir_all(into);
        let mirror = self
            .rebuild(mirrors, repo, remote, history, &wanted, session)
            .await?;
        let checkout = self
            .share_mirror(mirrors, &mirror, planned, remote, into, session)
            .await
            .map_err(Failed::reason)?;
        Ok((checkout, Some(mirror.lease)))
    }

    /// Makes `into` a repository sharing `mirror`'s objects, with the mirror's branches as
    /// `origin`'s and its tags, and puts it on its work branch.
    async fn share_mirror(
        &self,
        mirrors: &Mirrors,
        mirror: &Mirror,
        planned: &Planned,
        remote: &Remote<'_>,
        into: &Path,
        session: &mut Session,
    ) -> Result<Checkout, Failed> {
        let repo = &planned.checkout.repo;
        let url = remote.url.as_str();
        if mirrors.claim_spare(url, planned.checkout.history, into) {
            session.lines.push(format!(
                "[gatehouse] {repo} from the runner's spare checkout of its mirror"
            ));
        } else {
            init_shared(&mirror.objects(), url, into)
                .await
                .map_err(|reason| Failed::Git(format!("preparing {repo}: {reason}")))?;
        }
        refresh_refs(&mirror.dir, &mirror.refs, mirror.default.as_deref(), into)
            .map_err(|reason| Failed::Git(format!("preparing {repo}: {reason}")))?;
        let base = match (&planned.checkout.branch, &mirror.default) {
            (Some(base), _) | (None, Some(base)) => base.clone(),
            (None, None) => return Err(Failed::Branch(super::no_default_branch(repo))),
        };
        self.on_branch(planned, url, into, base, session).await
    }

    /// Points the repositories of a workspace prepared before (by an earlier node, or on
    /// another runner and restored from its checkpoint) at this runner's mirrors, fetching
    /// a mirror that is missing or lacks the commit the repository started from. A
    /// repository cloned whole (no alternates) is left as it is.
    async fn reattach(
        &self,
        done: &[Checkout],
        layout: &Layout<'_>,
        log: &mut Vec<String>,
    ) -> Result<Vec<Lease>, String> {
        let pending = crate::checkpoint::pending_repos(layout.local);
        let Some(mirrors) = &self.mirrors else {
            if pending.is_empty() {
                return Ok(Vec::new());
            }
            return Err(
                "the workspace's checkpoint holds files of its repositories' history, which this runner cannot write without mirrors (storage.mirror_limit is 0)"
                    .to_owned(),
            );
        };
        let mut leases = Vec::new();
        let mut sources = std::collections::BTreeMap::new();
        for checkout in done {
            let git = checkout.path(layout.workspace).join(".git");
            let shares = std::fs::symlink_metadata(git.join("objects/info/alternates")).is_ok();
            if !shares && !pending.contains(&checkout.dir) {
                continue;
            }
            let repo = &checkout.repo;
            let remote = self.remote(repo, &checkout.origin)?;
            let shared = mirrors.shared(&remote.url, checkout.history);
            let kept = match &checkout.start {
                Some(start) => mirrors.hold(&remote.url, checkout.history, start).await,
                None => None,
            };
            let lease = match kept {
                Some(lease) => lease,
                None => {
                    // Only a fetch needs the remote's credentials (a GitHub App's token
                    // is asked of GitHub): a node starting on a held mirror asks nothing.
                    let mut session = self.session(repo, &remote, layout.scratch).await?;
                    let wanted: Vec<&str> = checkout
                        .base
                        .iter()
                        .chain(&checkout.branch)
                        .map(String::as_str)
                        .collect();
                    let mirror = self
                        .mirror(
                            mirrors,
                            repo,
                            &remote,
                            checkout.history,
                            &wanted,
                            &mut session,
                        )
                        .await;
                    log.append(&mut session.lines);
                    mirror?.lease
                }
            };
            if shares {
                share_objects(&git, &shared)
                    .map_err(|e| format!("pointing {repo} at this runner's mirror: {e}"))?;
            }
            sources.insert(
                checkout.dir.clone(),
                shared.parent().unwrap_or(&shared).to_owned(),
            );
            leases.push(lease);
        }
        if !pending.is_empty() {
            let written =
                crate::checkpoint::fill_blobs(layout.local, layout.workspace, &sources).await?;
            log.push(format!(
                "[gatehouse] {written} files of the checkpoint written from the repositories' mirrors"
            ));
        }
        Ok(leases)
    }

    async fn clone_into(
        &self,
        planned: &Planned,
        remote: &Remote<'_>,
        into: &Path,
        session: &mut Session,
    ) -> Result<Checkout, String> {
        let repo = &planned.checkout.repo;
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
        let base = match &planned.checkout.branch {
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
        self.on_branch(planned, &url, into, base, session)
            .await
            .map_err(Failed::reason)
    }

    /// Puts the repository at `into`, with `origin`'s branches, on its work branch from
    /// `base`; what it records.
    async fn on_branch(
        &self,
        planned: &Planned,
        url: &str,
        into: &Path,
        base: String,
        session: &mut Session,
    ) -> Result<Checkout, Failed> {
        let checkout = &planned.checkout;
        let repo = &checkout.repo;
        if !self.has_branch(url, into, &base, session).await {
            return Err(Failed::Branch(format!(
                "`{base}` does not exist in {repo} (its base branch)"
            )));
        }
        let (branch, from) = match checkout.mode {
            RepositoryMode::Existing => {
                let name = planned.branch.clone().unwrap_or_default();
                if !self.has_branch(url, into, &name, session).await {
                    return Err(Failed::Branch(format!(
                        "`{name}` does not exist in {repo} (mode existing)"
                    )));
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
        self.local(url, into, &args, session)
            .await
            .map_err(|reason| {
                Failed::Git(format!("checking out `{branch}` of {repo}: {reason}"))
            })?;
        let start = self
            .local(url, into, &["rev-parse", "--verify", "HEAD"], session)
            .await
            .map_err(|reason| Failed::Git(format!("reading {repo}'s HEAD: {reason}")))?;
        Ok(Checkout {
            repo: repo.clone(),
            dir: planned.dir.clone(),
            mode: checkout.mode,
            base: Some(base),
            branch: planned.branch.clone(),
            start: Some(start.trim().to_owned()),
            origin: Origin::of(checkout),
            history: checkout.history,
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

/// The branches a repository's checkout needs besides the remote's default: its base,
/// when configured, and for mode `existing` its work branch.
fn wanted(planned: &Planned) -> Vec<&str> {
    let checkout = &planned.checkout;
    let mut wanted: Vec<&str> = checkout.branch.iter().map(String::as_str).collect();
    if checkout.mode == RepositoryMode::Existing {
        wanted.extend(planned.branch.as_deref());
    }
    wanted
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
