//! The repositories of a run's workspace, from their checkout before its first node
//! ([`prepare`]) to their delivery by a `deliver` node: every writable repository with
//! changes is committed to its work branch and pushed, with one pull request per
//! repository ([`pulls`]) — or, in `direct` mode, merged into its base branch after a
//! conflict check ([`direct`]). Read-only repositories are never pushed.
//!
//! Delivery pushes only what was approved: before anything is committed or pushed, the
//! tree of every writable repository ([`trees`]) is compared with the one the run's
//! latest approval bound ([`approval`]), and the commit pushed is made of exactly that
//! tree. One repository that differs stops the whole delivery, as does one whose changes
//! add a configured secret's value ([`leaks`]). A conversation's delivery never pushes to
//! a base branch: it goes through a pull request ([`Delivery::pull_only`]).
//!
//! The token reaches git only through its environment, as an HTTP header scoped to the
//! remote (`GIT_CONFIG_*`), and only for the commands that talk to it: never in a remote
//! URL, the repository's config, logs or artifacts. Earlier nodes run code in the
//! workspace, so before git runs in a repository its `.git` is checked for links and
//! redirections ([`crate::gitdir`]), its config is rewritten (its remote pointing where
//! Gatehouse says) and its hooks removed, and every git command runs without global,
//! system or the runner's own git settings and with everything that could run a program or
//! reach another place turned off ([`crate::git`]): nothing the workspace holds can redirect
//! the push or run with the token in reach.

pub(crate) mod answer;
pub(crate) mod approval;
mod branch;
pub(crate) mod checkouts;
mod direct;
mod leaks;
mod messages;
pub(crate) mod mirrors;
pub(crate) mod prepare;
mod pulls;
mod spares;
pub(crate) mod trees;

use std::path::Path;

use gatehouse_events::{DeliverMode, DeliverSpec, RepositoryCheckout};
use gatehouse_github::GithubClient;
use gatehouse_project::remote::{Transport, transport};
use secrecy::{ExposeSecret, SecretString};
use uuid::Uuid;

use crate::git::{Auth, Git, Network};
use crate::remotes::{Credential, ForgeAccess, Remotes};
use crate::scratch::Scratch;
use crate::secrets::Secrets;
use approval::Approval;
use branch::Repo;
use checkouts::Checkout;
pub use mirrors::{MIRROR_LIMIT, Mirrors};

/// What delivering needs: where repositories are, who Gatehouse is on GitHub, and what it
/// authenticates with elsewhere.
pub struct Deliverer {
    /// GitHub's API (pull requests, default branches), for the repositories on GitHub;
    /// `None` when the configuration has no `[github]` (every repository names its own
    /// remote or forge).
    pub github: Option<GithubClient>,
    /// Where GitHub's repositories are cloned from: `{git_url}/{owner}/{name}.git`.
    pub git_url: String,
    /// The credentials of repositories with their own remote, and the forges.
    pub remotes: Remotes,
    /// Commit author name.
    pub author_name: String,
    /// Commit author email.
    pub author_email: String,
    /// The runner's mirrors workspaces are made from; `None` clones every repository
    /// whole for each run (`storage.mirror_limit = 0`).
    pub mirrors: Option<Mirrors>,
}

impl std::fmt::Debug for Deliverer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliverer")
            .field("github", &self.github.is_some())
            .field("git_url", &self.git_url)
            .field("remotes", &self.remotes)
            .field("author_name", &self.author_name)
            .field("mirrors", &self.mirrors)
            .finish_non_exhaustive()
    }
}

/// One repository's git session: what git authenticates with (the configured token, a
/// fresh installation token for a GitHub App, a deploy key written for the session), and
/// the lines it logged.
pub(crate) struct Session {
    auth: Auth,
    /// The directory holding the session's deploy key, removed with it when the session
    /// ends.
    _keys: Option<Scratch>,
    /// Commands and their output, for the node's log.
    pub lines: Vec<String>,
}

/// Where one repository is, as the run froze it: its own url, its forge and path there;
/// none of them for a repository on GitHub.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Origin {
    pub url: Option<String>,
    pub forge: Option<String>,
    pub path: Option<String>,
}

impl Origin {
    pub(crate) fn of(checkout: &RepositoryCheckout) -> Self {
        Self {
            url: checkout.url.clone(),
            forge: checkout.forge.clone(),
            path: checkout.path.clone(),
        }
    }
}

/// A repository's remote as this runner reaches it.
pub(crate) struct Remote<'a> {
    /// What git clones from and pushes to.
    pub url: String,
    pub host: Host<'a>,
}

/// Who hosts a repository: where its pull or merge requests open, if anywhere.
pub(crate) enum Host<'a> {
    /// GitHub, through `[github]`.
    Github(&'a GithubClient),
    /// A `[forges.NAME]`, with the repository's path there.
    Forge {
        name: &'a str,
        access: &'a ForgeAccess,
        path: &'a str,
    },
    /// A git remote alone: a delivery pushes its branch and says where.
    Plain,
}

/// Why a repository whose base is not configured cannot be checked out: its remote names
/// no default branch.
pub(crate) fn no_default_branch(repo: &str) -> String {
    format!(
        "finding the default branch of {repo}: its remote names no branch as HEAD (an empty repository?); give the repository a `branch`"
    )
}

/// Who delivers, as commits and pull requests say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum By {
    /// A `deliver` node of this run.
    Run(Uuid),
    /// A `deliver` said in this conversation's thread.
    Conversation(Uuid),
}

impl By {
    /// `run` or `conversation`.
    pub(crate) fn kind(self) -> &'static str {
        match self {
            Self::Run(_) => "run",
            Self::Conversation(_) => "conversation",
        }
    }

    pub(crate) fn id(self) -> Uuid {
        match self {
            Self::Run(id) | Self::Conversation(id) => id,
        }
    }
}

/// What a delivery is for, as commits and pull requests name it.
pub(crate) struct Subject<'a> {
    /// The run or conversation delivering.
    pub by: By,
    /// The requirement's title (or the run's, without one).
    pub title: &'a str,
    /// The GitHub issue it works on: `owner/name` and number.
    pub issue: Option<(&'a str, u64)>,
}

/// One delivery: the workspace, how its repositories were checked out, what it is for and
/// what was approved.
pub(crate) struct Delivery<'a> {
    pub workspace: &'a Path,
    /// The run's scratch directory, outside the workspace.
    pub scratch: &'a Path,
    pub checkouts: &'a [Checkout],
    pub subject: Subject<'a>,
    /// The approval the workspace must match, if a gate approved the run's work.
    pub approval: Option<&'a Approval>,
    pub spec: &'a DeliverSpec,
    /// Pull requests it opens are drafts (one found open is left as it is).
    pub draft: bool,
    /// The configured secrets' values: changes that add one are refused.
    pub secrets: &'a Secrets,
}

impl Delivery<'_> {
    /// Whether every change must go through a pull request: a conversation's delivery
    /// never pushes to a base branch (no gate approved its work, so a person reviews it
    /// in the pull request instead).
    pub(crate) fn pull_only(&self) -> bool {
        matches!(self.subject.by, By::Conversation(_))
    }
}

/// Where one repository's work went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Delivered {
    /// `owner/name`.
    pub repo: String,
    pub to: DeliveredTo,
}

/// What a delivery came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Deliveries {
    /// Where each changed repository's work went.
    Done(Vec<Delivered>),
    /// No writable repository has changes: nothing was pushed. Says so, naming them.
    Unchanged(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DeliveredTo {
    /// A pull request, by number, from the work branch.
    Pull {
        number: u64,
        branch: String,
        /// Its page on GitHub (empty when GitHub gave none).
        url: String,
        /// Whether it is a draft, as GitHub says.
        draft: bool,
        /// Opened by this delivery (else it was open already, and was updated).
        opened: bool,
        /// The commit pushed to the work branch: the pull request's head.
        head: String,
    },
    /// Pushed to its work branch, which is its base too (no pull request to open).
    Pushed { branch: String },
    /// The work branch pushed to a remote with no forge to open a pull request on:
    /// someone merges it there.
    PushedBranch {
        branch: String,
        /// The commit pushed.
        commit: String,
        /// The remote, as shown (no user name).
        url: String,
    },
    /// A merge request (GitLab) or pull request (Gitea) on a forge, by number, from the
    /// work branch.
    Request {
        /// The `[forges.NAME]`.
        forge: String,
        number: u64,
        branch: String,
        /// Its page on the forge.
        url: String,
        /// Opened by this delivery (else it was open already, and was updated).
        opened: bool,
        /// The commit pushed to the work branch.
        head: String,
        /// The remote the branch was pushed to, as shown (no user name).
        remote: String,
    },
    /// Merged into `branch` by the merge commit `commit`.
    Merged { branch: String, commit: String },
}

impl Deliverer {
    /// Where `repo` is, as `origin` froze it: its own url, its forge's, or GitHub's.
    /// `Err`: this runner cannot reach it (no `[github]`, no such forge).
    pub(crate) fn remote<'a>(
        &'a self,
        repo: &'a str,
        origin: &'a Origin,
    ) -> Result<Remote<'a>, String> {
        if let Some(name) = &origin.forge {
            let access = self.remotes.forges.get(name).ok_or_else(|| {
                format!("{repo} is on the forge `{name}`, but this runner's configuration has no [forges.{name}]")
            })?;
            let path = origin.path.as_deref().unwrap_or(repo);
            let url = match &origin.url {
                Some(url) => url.clone(),
                None => format!("{}/{path}.git", access.git_url.trim_end_matches('/')),
            };
            return Ok(Remote {
                url,
                host: Host::Forge { name, access, path },
            });
        }
        if let Some(url) = &origin.url {
            return Ok(Remote {
                url: url.clone(),
                host: Host::Plain,
            });
        }
        let github = self.github.as_ref().ok_or_else(|| {
            format!("{repo} is on GitHub, but this runner has no [github] with a token or an app (give the repository its own `url` to work without GitHub)")
        })?;
        Ok(Remote {
            url: format!("{}/{repo}.git", self.git_url.trim_end_matches('/')),
            host: Host::Github(github),
        })
    }

    /// The object store `checkout`'s repository may name as its alternates: its mirror's
    /// on this runner; `None` when mirrors are off (then no alternates are accepted).
    pub(crate) fn shared_objects(&self, checkout: &Checkout) -> Option<std::path::PathBuf> {
        let mirrors = self.mirrors.as_ref()?;
        let remote = self.remote(&checkout.repo, &checkout.origin).ok()?;
        Some(mirrors.shared(&remote.url, checkout.history))
    }

    /// A session for `repo` at `remote`: finds what git authenticates with. A deploy key
    /// is written to a directory of its own under `scratch` (the run's, outside the
    /// workspace), readable by the runner alone, and removed when the session ends.
    pub(crate) async fn session(
        &self,
        repo: &str,
        remote: &Remote<'_>,
        scratch: &Path,
    ) -> Result<Session, String> {
        let own = self.remotes.credentials.get(&remote.url);
        let (auth, keys) = match (&remote.host, own) {
            (Host::Github(github), _) => {
                let token = github
                    .git_token(repo)
                    .await
                    .map_err(|e| format!("getting a token for {repo}: {e}"))?;
                (
                    Auth::Basic {
                        user: "x-access-token",
                        token,
                    },
                    None,
                )
            }
            // A repository on this machine takes no credential.
            _ if transport(&remote.url) == Ok(Transport::File) => (Auth::None, None),
            (_, Some(Credential::DeployKey { key, known_hosts })) => {
                let (auth, keys) = ssh_auth(key, known_hosts.as_deref(), scratch)
                    .map_err(|e| format!("writing the deploy key of {repo} for git: {e}"))?;
                (auth, Some(keys))
            }
            (Host::Forge { access, .. }, Some(Credential::Token(token))) => (
                Auth::Basic {
                    user: access.api.git_user(),
                    token: token.clone(),
                },
                None,
            ),
            (Host::Forge { access, .. }, None) => (
                Auth::Basic {
                    user: access.api.git_user(),
                    token: access.token.clone(),
                },
                None,
            ),
            (Host::Plain, Some(Credential::Token(token))) => (
                Auth::Basic {
                    user: "x-access-token",
                    token: token.clone(),
                },
                None,
            ),
            (Host::Plain, None) => (Auth::None, None),
        };
        Ok(Session {
            auth,
            _keys: keys,
            lines: Vec::new(),
        })
    }

    /// The default branch of `repo`: GitHub's or a forge's, as its API says; any other
    /// remote's, as its `HEAD` names it, asked from `dir` (the runner's scratch directory).
    pub(crate) async fn default_branch(
        &self,
        repo: &str,
        remote: &Remote<'_>,
        dir: &Path,
        session: &mut Session,
    ) -> Result<String, String> {
        match remote.host {
            Host::Github(github) => github
                .default_branch(repo)
                .await
                .map_err(|e| format!("finding the default branch of {repo}: {e}")),
            Host::Forge { access, path, .. } => access
                .api
                .default_branch(path)
                .await
                .map_err(|e| format!("finding the default branch of {repo}: {e}")),
            Host::Plain => self.remote_default(repo, &remote.url, dir, session).await,
        }
    }

    /// The branch the remote's `HEAD` names (`git ls-remote --symref`): the default branch
    /// of a repository that is not on GitHub. Asked from `dir`, a directory of the runner's
    /// own: never from the workspace's clone, whose configuration (an `insteadOf`, say)
    /// could send the question and its credential elsewhere.
    pub(crate) async fn remote_default(
        &self,
        repo: &str,
        url: &str,
        dir: &Path,
        session: &mut Session,
    ) -> Result<String, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("finding the default branch of {repo}: {e}"))?;
        let listed = self
            .run(
                url,
                dir,
                None,
                Network::Remote,
                &["ls-remote", "--symref", "--", url, "HEAD"],
                session,
            )
            .await
            .map_err(|reason| format!("finding the default branch of {repo}: {reason}"))?;
        mirrors::default_branch(&listed).ok_or_else(|| no_default_branch(repo))
    }

    /// Delivers every writable repository that changed. `Err`: why not (the node's
    /// failure reason, "nothing to deliver" among them); the git sessions' lines go to
    /// `log` either way.
    pub(crate) async fn deliver(
        &self,
        delivery: &Delivery<'_>,
        log: &mut Vec<String>,
    ) -> Result<Vec<Delivered>, String> {
        match self.deliver_changes(delivery, log).await? {
            Deliveries::Done(delivered) => Ok(delivered),
            Deliveries::Unchanged(reason) => Err(reason),
        }
    }

    /// [`Deliverer::deliver`], telling a workspace with nothing to deliver from a failure:
    /// a conversation answers the one and fails on the other.
    pub(crate) async fn deliver_changes(
        &self,
        delivery: &Delivery<'_>,
        log: &mut Vec<String>,
    ) -> Result<Deliveries, String> {
        self.deliver_watching(delivery, None, log).await
    }

    /// [`Deliverer::deliver_changes`]; with `change`, for a delivery answering feedback
    /// ([`answer`]): the answered pull request's repository is not pushed when its commit
    /// is the head `change` says was pushed before, and `change` learns what was pushed.
    async fn deliver_watching(
        &self,
        delivery: &Delivery<'_>,
        change: Option<&mut answer::Change>,
        log: &mut Vec<String>,
    ) -> Result<Deliveries, String> {
        let mut repos = Vec::new();
        let done = self.deliver_into(delivery, &mut repos, change, log).await;
        for repo in &mut repos {
            log.append(&mut repo.session.lines);
        }
        done
    }

    async fn deliver_into<'a>(
        &'a self,
        delivery: &'a Delivery<'a>,
        repos: &mut Vec<Repo<'a>>,
        mut change: Option<&mut answer::Change>,
        log: &mut Vec<String>,
    ) -> Result<Deliveries, String> {
        for checkout in delivery.checkouts {
            if checkout.writable() {
                repos.push(Repo::open(self, delivery, checkout).await?);
            } else if let Some(note) =
                branch::read_only_note(delivery, checkout, self.shared_objects(checkout).as_deref())
                    .await
            {
                log.push(note);
            }
        }
        if repos.is_empty() {
            return Err("nothing to deliver: the workspace has no writable repository".into());
        }
        if delivery.pull_only() {
            for repo in repos.iter_mut() {
                repo.refuse_base_branch().await?;
            }
        }
        // Every repository is verified before any is committed, and committed before any is
        // pushed: a refusal anywhere leaves every remote as it was.
        for repo in repos.iter_mut() {
            repo.verify().await?;
        }
        let several = repos.len() > 1;
        let mut unchanged = Vec::new();
        for repo in repos.iter_mut() {
            if !repo.commit().await? {
                unchanged.push((repo.checkout.repo.clone(), repo.base().to_owned()));
            }
        }
        let answered = delivery.spec.answer.as_ref().map(|f| f.pull.repo.as_str());
        let answered = answered.and_then(|name| repos.iter().position(|r| r.checkout.repo == name));
        if let (Some(i), Some(change)) = (answered, change.as_deref_mut()) {
            let repo = &mut repos[i];
            if change.before.is_none() {
                change.before = repo.remote_head().await;
            }
            change.after = repo.commit.clone();
            if repo.changed && change.before.is_some() && change.before == change.after {
                // Pushed before as it is: the feedback's turn changed nothing.
                repo.changed = false;
                let head = change.before.as_deref().unwrap_or_default();
                let against = format!("{} (its head, pushed before)", trees::short(head));
                unchanged.push((repo.checkout.repo.clone(), against));
            }
        }
        if unchanged.len() == repos.len() {
            let listed: Vec<String> = unchanged
                .iter()
                .map(|(repo, base)| format!("{repo} against {base}"))
                .collect();
            return Ok(Deliveries::Unchanged(match unchanged.as_slice() {
                [(repo, base)] => {
                    format!("nothing to deliver: {repo} has no changes against {base}")
                }
                _ => format!(
                    "nothing to deliver: no writable repository has changes ({})",
                    listed.join(", ")
                ),
            }));
        }
        for (repo, base) in &unchanged {
            log.push(format!(
                "[gatehouse] {repo} has no changes against {base}; not delivered"
            ));
        }
        let mut chosen: Vec<&mut Repo<'a>> = repos.iter_mut().filter(|r| r.changed).collect();
        let delivered = match delivery.spec.mode {
            DeliverMode::Direct => direct::merge_all(&mut chosen, several).await,
            DeliverMode::Pr => pulls::push_and_open(self, delivery, &mut chosen).await,
        }?;
        if let (Some(i), Some(change)) = (answered, change)
            && repos[i].changed
        {
            change.pushed = true;
            repos[i].list_commits(change).await;
        }
        Ok(Deliveries::Done(delivered))
    }

    /// Replaces whatever earlier nodes did to the clone's git configuration and hooks.
    /// `.git` was checked to hold no links ([`crate::gitdir`]); the config is still
    /// replaced by a new file rather than written through whatever is there.
    fn sanitize(&self, repo_dir: &Path, url: &str) -> Result<(), String> {
        let git_dir = repo_dir.join(".git");
        let config = format!(
            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n[remote \"origin\"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
        );
        let path = git_dir.join("config");
        let replaced = match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .and_then(|mut file| std::io::Write::write_all(&mut file, config.as_bytes())),
        };
        replaced.map_err(|e| format!("resetting the clone's configuration: {e}"))?;
        let hooks = git_dir.join("hooks");
        if hooks.exists() {
            std::fs::remove_dir_all(&hooks).map_err(|e| format!("removing git hooks: {e}"))?;
        }
        Ok(())
    }

    /// A git command in the repository at `repo_dir` that stays there: no token.
    async fn local(
        &self,
        url: &str,
        repo_dir: &Path,
        args: &[&str],
        log: &mut Session,
    ) -> Result<String, String> {
        self.run(url, repo_dir, Some(repo_dir), Network::Local, args, log)
            .await
    }

    /// Runs git ([`Git::command`]) for the remote `url`; its output goes to the node's log.
    async fn run(
        &self,
        url: &str,
        dir: &Path,
        repo: Option<&Path>,
        network: Network,
        args: &[&str],
        log: &mut Session,
    ) -> Result<String, String> {
        let ran = self.ran(url, dir, repo, network, args, log).await?;
        ran.into_result(args.first().unwrap_or(&""))
    }

    /// Like [`Deliverer::run`], with the exit code and output to judge.
    async fn ran(
        &self,
        url: &str,
        dir: &Path,
        repo: Option<&Path>,
        network: Network,
        args: &[&str],
        log: &mut Session,
    ) -> Result<crate::git::Ran, String> {
        let git = Git {
            remote: url,
            auth: &log.auth,
        };
        let command = git.command(dir, repo, network, args);
        let ran = crate::git::run(command, args.first().unwrap_or(&"")).await?;
        log.lines.push(format!("$ git {}", args.join(" ")));
        log.lines.extend(
            ran.stdout
                .lines()
                .chain(ran.stderr.lines())
                .map(str::to_owned),
        );
        Ok(ran)
    }
}

/// The deploy key written to a file of its own (0600, in a directory only the runner may
/// enter) under `scratch`, and the host keys ssh is held to: the configured file, strictly,
/// else the run's own, where a host's key is accepted the first time and held to for the
/// rest of the run.
fn ssh_auth(
    key: &SecretString,
    known_hosts: Option<&Path>,
    scratch: &Path,
) -> std::io::Result<(Auth, Scratch)> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let keys = Scratch::new(scratch, "ssh")?;
    std::fs::set_permissions(keys.path(), std::fs::Permissions::from_mode(0o700))?;
    let key_file = keys.path().join("deploy_key");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&key_file)?;
    file.write_all(key.expose_secret().trim_end().as_bytes())?;
    // OpenSSH reads no key without its final newline.
    file.write_all(b"\n")?;
    let (known_hosts, strict) = match known_hosts {
        Some(path) => (path.to_owned(), true),
        None => (scratch.join("known_hosts"), false),
    };
    Ok((
        Auth::Ssh {
            key_file,
            known_hosts,
            strict,
        },
        keys,
    ))
}

#[cfg(test)]
mod hostile;
#[cfg(test)]
pub(crate) mod scene;
#[cfg(test)]
mod tests;
