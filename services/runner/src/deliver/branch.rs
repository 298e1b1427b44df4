//! One writable repository on its way out: [verified](Repo::verify) (its `.git` checked,
//! its configuration reset, its tree computed and held to the approval, its changes
//! searched for secrets' values),
//! [committed](Repo::commit) (exactly that tree, on top of what the nodes committed, on its
//! work branch) and, for a pull request, [pushed](Repo::push_branch). A read-only
//! repository is only looked at, to say in the log when its changes stay behind.

use std::path::{Path, PathBuf};

use gatehouse_events::RepositoryMode;

use super::checkouts::Checkout;
use super::trees::{self, Objects};
use super::{Deliverer, Delivery, Remote, Session, leaks, messages};
use crate::git::Network;

/// A writable repository of the workspace being delivered.
pub(super) struct Repo<'a> {
    deliverer: &'a Deliverer,
    delivery: &'a Delivery<'a>,
    pub checkout: &'a Checkout,
    url: String,
    /// Where it is pushed, and who hosts it.
    pub remote: Remote<'a>,
    pub dir: PathBuf,
    pub session: Session,
    /// The branch it is delivered into.
    base: String,
    /// Its tree, once verified.
    tree: Option<String>,
    /// The commit on its work branch, once committed.
    pub commit: Option<String>,
    /// Whether that commit differs from where the work started.
    pub changed: bool,
}

impl<'a> Repo<'a> {
    /// Opens a session for the repository and settles its base branch: the `deliver`
    /// node's, else the one it was checked out from, else the repository's default.
    pub(super) async fn open(
        deliverer: &'a Deliverer,
        delivery: &'a Delivery<'a>,
        checkout: &'a Checkout,
    ) -> Result<Self, String> {
        let repo = &checkout.repo;
        let remote = deliverer.remote(repo, &checkout.origin)?;
        let dir = checkout.path(delivery.workspace);
        let mut session = deliverer.session(repo, &remote, delivery.scratch).await?;
        let base = match delivery.spec.branch.as_ref().or(checkout.base.as_ref()) {
            Some(base) => base.clone(),
            None => {
                deliverer
                    .default_branch(repo, &remote, delivery.scratch, &mut session)
                    .await?
            }
        };
        Ok(Self {
            deliverer,
            delivery,
            checkout,
            url: remote.url.clone(),
            remote,
            dir,
            session,
            base,
            tree: None,
            commit: None,
            changed: false,
        })
    }

    pub(super) fn base(&self) -> &str {
        &self.base
    }

    /// The work branch (a writable repository always has one).
    pub(super) fn branch(&self) -> &str {
        self.checkout.branch.as_deref().unwrap_or(&self.base)
    }

    /// `Err` when the work branch is the base branch or the repository's default branch:
    /// pushing it would put the work there with no pull request. Asked before anything is
    /// committed or pushed.
    pub(super) async fn refuse_base_branch(&mut self) -> Result<(), String> {
        let (repo, branch) = (self.checkout.repo.clone(), self.branch().to_owned());
        let protected = if branch == self.base {
            Some("its base branch")
        } else {
            let default = self
                .deliverer
                .default_branch(
                    &repo,
                    &self.remote,
                    self.delivery.scratch,
                    &mut self.session,
                )
                .await?;
            (branch == default).then_some("its default branch")
        };
        match protected {
            Some(which) => Err(format!(
                "refused: the work branch of {repo} is `{branch}`, {which}, and a conversation delivers only through a pull request from a branch of its own, never to a base branch (give {repo} a `branch_name` other than `{branch}`, or mode `auto` or `new`); nothing was pushed"
            )),
            None => Ok(()),
        }
    }

    /// Checks the repository's `.git`, resets its configuration, and computes its tree;
    /// `Err` when it differs from the approved one, or its changes add a secret's value.
    pub(super) async fn verify(&mut self) -> Result<(), String> {
        let repo = self.checkout.repo.clone();
        let repo = repo.as_str();
        let shared = self.deliverer.shared_objects(self.checkout);
        crate::gitdir::check(&self.dir, shared.as_deref())
            .map_err(|reason| format!("{repo}: {reason}"))?;
        self.deliverer
            .sanitize(&self.dir, &self.url)
            .map_err(|reason| format!("{repo}: {reason}"))?;
        let tree = trees::tree(
            &self.dir,
            self.delivery.scratch,
            Objects::Repository,
            shared.as_deref(),
        )
        .await
        .map_err(|reason| format!("{repo}: its tree cannot be computed: {reason}"))?;
        if let Some(approval) = self.delivery.approval {
            approval.check(repo, &tree)?;
        }
        let start = self.start().await;
        let secrets = self.delivery.secrets;
        leaks::refuse_added_secrets(repo, &self.dir, start.as_deref(), &tree, secrets).await?;
        self.tree = Some(tree);
        Ok(())
    }

    /// Commits the verified tree on the work branch (no commit when `HEAD` has it already)
    /// and puts the repository on that branch. `true` when the work branch now differs
    /// from where the work started.
    pub(super) async fn commit(&mut self) -> Result<bool, String> {
        let repo = self.checkout.repo.clone();
        let tree = self.tree.clone().unwrap_or_default();
        let head = trees::head_commit(&self.dir.join(".git"))
            .map_err(|reason| format!("{repo}: {reason}"))?;
        let head_tree = match &head {
            Some(head) => Some(self.tree_of(head).await?),
            None => None,
        };
        let commit = match head {
            Some(head) if head_tree.as_deref() == Some(tree.as_str()) => head,
            parent => {
                let answer = self.delivery.spec.answer.as_ref();
                let (subject, body) =
                    messages::commit_message(&self.delivery.subject, &repo, answer);
                let (name, email) = self.author();
                let mut args = vec!["-c", &name, "-c", &email, "commit-tree", &tree];
                if let Some(parent) = &parent {
                    args.extend(["-p", parent]);
                }
                args.extend(["-m", &subject, "-m", &body]);
                self.local(&args).await?.trim().to_owned()
            }
        };
        let branch = self.branch().to_owned();
        let reference = format!("refs/heads/{branch}");
        self.local(&["update-ref", &reference, &commit]).await?;
        self.local(&["symbolic-ref", "HEAD", &reference]).await?;
        self.local(&["read-tree", &reference]).await?;
        self.commit = Some(commit);
        let start = self.start().await;
        self.changed = match start {
            Some(start) => self.tree_of(&start).await.ok().as_deref() != Some(tree.as_str()),
            None => true,
        };
        Ok(self.changed)
    }

    /// The commit the work started from: as recorded at checkout, else the remote's
    /// branch it was taken from; `None` when neither is known.
    async fn start(&mut self) -> Option<String> {
        if let Some(start) = &self.checkout.start {
            return Some(start.clone());
        }
        let from = match self.checkout.mode {
            RepositoryMode::Existing => self.branch().to_owned(),
            _ => self.base.clone(),
        };
        let name = format!("refs/remotes/origin/{from}^{{commit}}");
        self.local(&["rev-parse", "--verify", "--quiet", &name])
            .await
            .ok()
            .map(|s| s.trim().to_owned())
    }

    /// The head of the work branch on the remote as this clone last saw it (fetched or
    /// pushed); `None` when it never did. Read after [`Repo::verify`] reset the
    /// configuration, and before [`Repo::push_branch`] moves it.
    pub(super) async fn remote_head(&mut self) -> Option<String> {
        let name = format!("refs/remotes/origin/{}^{{commit}}", self.branch());
        self.local(&["rev-parse", "--verify", "--quiet", &name])
            .await
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    }

    /// `<short sha> <subject>` of the commits in `after` and not in `before`, newest
    /// first, at most `max`; with the number left out. `None` when `before` is not in
    /// the clone (pushed from elsewhere).
    pub(super) async fn commits_between(
        &mut self,
        before: &str,
        after: &str,
        max: usize,
    ) -> Option<(Vec<String>, usize)> {
        let range = format!("{before}..{after}");
        let count = self.local(&["rev-list", "--count", &range]).await.ok()?;
        let count: usize = count.trim().parse().ok()?;
        let limit = format!("--max-count={max}");
        let listed = self
            .local(&["log", "--no-decorate", "--format=%h %s", &limit, &range])
            .await
            .ok()?;
        let lines: Vec<String> = listed.lines().map(str::to_owned).collect();
        let more = count.saturating_sub(lines.len());
        Some((lines, more))
    }

    /// Pushes the work branch: replacing the remote's for the branches Gatehouse names
    /// (`auto`, `new`), only adding to it for an `existing` one.
    pub(super) async fn push_branch(&mut self) -> Result<(), String> {
        let branch = self.branch().to_owned();
        let refspec = format!("refs/heads/{branch}:refs/heads/{branch}");
        let existing = self.checkout.mode == RepositoryMode::Existing;
        let mut args = vec!["push", "--quiet"];
        if !existing {
            args.push("--force");
        }
        args.extend(["origin", &refspec]);
        let ran = self.ran(Network::Remote, &args).await?;
        if ran.code == Some(0) {
            return Ok(());
        }
        let repo = &self.checkout.repo;
        Err(if existing && ran.stderr.contains("[rejected]") {
            format!(
                "`{branch}` on {repo} has commits the workspace does not (someone pushed to it while the run worked); nothing was pushed to it"
            )
        } else {
            format!("pushing `{branch}` to {repo} failed: {}", ran.reason())
        })
    }

    /// `-c` settings naming Gatehouse as a commit's author and committer.
    pub(super) fn author(&self) -> (String, String) {
        (
            format!("user.name={}", self.deliverer.author_name),
            format!("user.email={}", self.deliverer.author_email),
        )
    }

    /// The tree of `commit`.
    pub(super) async fn tree_of(&mut self, commit: &str) -> Result<String, String> {
        let name = format!("{commit}^{{tree}}");
        Ok(self
            .local(&["rev-parse", "--verify", &name])
            .await?
            .trim()
            .to_owned())
    }

    /// A git command that stays in the repository: no token.
    pub(super) async fn local(&mut self, args: &[&str]) -> Result<String, String> {
        let (url, dir) = (&self.url, &self.dir);
        self.deliverer
            .local(url, dir, args, &mut self.session)
            .await
            .map_err(|reason| format!("{}: {reason}", self.checkout.repo))
    }

    /// A git command, its exit code and output to judge.
    pub(super) async fn ran(
        &mut self,
        network: Network,
        args: &[&str],
    ) -> Result<crate::git::Ran, String> {
        let (url, dir) = (&self.url, &self.dir);
        self.deliverer
            .ran(url, dir, Some(dir), network, args, &mut self.session)
            .await
    }
}

/// A note for the log when a read-only repository was changed in the workspace: its
/// changes are not delivered. `None` when it is as it was cloned (or cannot be told).
pub(super) async fn read_only_note(
    delivery: &Delivery<'_>,
    checkout: &Checkout,
    shared: Option<&Path>,
) -> Option<String> {
    let dir = checkout.path(delivery.workspace);
    let start = checkout.start.as_deref()?;
    let scratch = delivery.scratch;
    let now = trees::tree(&dir, scratch, Objects::Scratch, shared)
        .await
        .ok()?;
    let then = trees::tree_of_commit(&dir, scratch, start, shared)
        .await
        .ok()?;
    (now != then).then(|| {
        format!(
            "[gatehouse] {} is read-only: its changes in the workspace are not delivered",
            checkout.repo
        )
    })
}
