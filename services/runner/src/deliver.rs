//! `deliver` nodes and the repository they deliver: the requirement's repository is cloned
//! into the run's workspace before its first node, and a `deliver` node commits the
//! workspace to a work branch named after the requirement, pushes it, and opens or
//! updates the branch's pull request — or, in `direct` mode, merges it into the target
//! branch after a conflict check.
//!
//! The token reaches git only through its environment, as an HTTP header scoped to the
//! remote (`GIT_CONFIG_*`), and only for the commands that talk to it: never in a remote
//! URL, the repository's config, logs or artifacts. Earlier nodes run code in the
//! workspace, so before git runs in it the `.git` is checked for links and redirections
//! ([`crate::gitdir`]), its config is rewritten (its remote pointing where Gatehouse says)
//! and its hooks removed, and every git command runs without global, system or the
//! runner's own git settings and with everything that could run a program or reach another
//! place turned off ([`crate::git`]): nothing the workspace holds can redirect the push or
//! run with the token in reach.

use std::path::Path;

use gatehouse_events::{DeliverMode, DeliverSpec};
use gatehouse_github::GithubClient;
use secrecy::SecretString;

use crate::git::{Git, Network};

/// What delivering needs: where repositories are, and who Gatehouse is on GitHub.
pub struct Deliverer {
    /// GitHub's API (pull requests, default branches).
    pub github: GithubClient,
    /// Where repositories are cloned from: `{git_url}/{owner}/{name}.git`.
    pub git_url: String,
    /// Commit author name.
    pub author_name: String,
    /// Commit author email.
    pub author_email: String,
}

impl std::fmt::Debug for Deliverer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliverer")
            .field("git_url", &self.git_url)
            .field("author_name", &self.author_name)
            .finish_non_exhaustive()
    }
}

/// One repository's git session: the token git authenticates with (the configured one,
/// or a fresh installation token for a GitHub App), and the lines it logged.
pub(crate) struct Session {
    token: SecretString,
    /// Commands and their output, for the node's log.
    pub lines: Vec<String>,
}

/// A GitHub issue a run works on.
pub(crate) struct Target<'a> {
    /// `owner/name`.
    pub repo: &'a str,
    pub number: u64,
    pub title: &'a str,
    /// The run (named in commits and the pull request).
    pub run: uuid::Uuid,
}

/// What a delivery did, or why it failed (the node's failure reason).
pub(crate) type Delivered = Result<DeliveredTo, String>;

/// Where the work went.
pub(crate) enum DeliveredTo {
    /// A pull request, by number, from the work branch.
    Pull {
        number: u64,
        /// The work branch it merges.
        branch: String,
    },
    /// Merged into a branch.
    Merged(String),
}

impl Deliverer {
    /// A session for `repo`: gets the token git will use.
    pub(crate) async fn session(&self, repo: &str) -> Result<Session, String> {
        let token = self
            .github
            .git_token(repo)
            .await
            .map_err(|e| format!("getting a token for {repo}: {e}"))?;
        Ok(Session {
            token,
            lines: Vec::new(),
        })
    }

    /// Clones `repo` into `workspace` (which must be empty) unless it is a clone already.
    pub(crate) async fn prepare(
        &self,
        repo: &str,
        workspace: &Path,
        log: &mut Session,
    ) -> Result<(), String> {
        if workspace.join(".git").exists() {
            return Ok(());
        }
        std::fs::create_dir_all(workspace).map_err(|e| format!("workspace: {e}"))?;
        let empty = std::fs::read_dir(workspace)
            .map_err(|e| format!("workspace: {e}"))?
            .next()
            .is_none();
        if !empty {
            return Err("the workspace has files but is not a clone; cannot clone into it".into());
        }
        let url = self.url(repo);
        let dir = workspace.to_string_lossy().into_owned();
        let parent = workspace.parent().unwrap_or(workspace);
        self.run(
            &url,
            parent,
            None,
            Network::Remote,
            &["clone", "--quiet", &url, &dir],
            log,
        )
        .await
        .map(drop)
    }

    /// Commits, pushes and opens (or updates) the pull request, or merges directly.
    pub(crate) async fn deliver(
        &self,
        target: &Target<'_>,
        workspace: &Path,
        spec: &DeliverSpec,
        log: &mut Session,
    ) -> Delivered {
        crate::gitdir::check(workspace)?;
        let url = self.url(target.repo);
        self.sanitize(workspace, &url)?;
        let repo = Repo {
            deliverer: self,
            url: &url,
            workspace,
        };
        let branch = work_branch(target.number, target.title);
        let base = match &spec.branch {
            Some(branch) => branch.clone(),
            None => self
                .github
                .default_branch(target.repo)
                .await
                .map_err(|e| format!("finding the default branch: {e}"))?,
        };
        repo.local(&["checkout", "--quiet", "-B", &branch], log)
            .await?;
        repo.local(&["add", "--all"], log).await?;
        let changes = repo.local(&["status", "--porcelain"], log).await?;
        if !changes.trim().is_empty() {
            let subject = format!("{} (#{})", target.title, target.number);
            let body = format!("Delivered by Gatehouse run {}.", target.run);
            let name = format!("user.name={}", self.author_name);
            let email = format!("user.email={}", self.author_email);
            repo.local(
                &[
                    "-c", &name, "-c", &email, "commit", "--quiet", "-m", &subject, "-m", &body,
                ],
                log,
            )
            .await?;
        }
        let ahead = repo
            .local(
                &["rev-list", "--count", &format!("origin/{base}..HEAD")],
                log,
            )
            .await?;
        if ahead.trim() == "0" {
            return Err(format!(
                "nothing to deliver: the workspace has no changes against {base}"
            ));
        }
        match spec.mode {
            DeliverMode::Direct => return repo.merge(&branch, &base, log).await,
            DeliverMode::Pr => {}
        }
        repo.remote(&["push", "--quiet", "--force", "origin", &branch], log)
            .await?;
        let body = format!(
            "Closes #{}\n\nDelivered by Gatehouse run `{}`.",
            target.number, target.run
        );
        self.github
            .open_or_update_pull(target.repo, &branch, &base, target.title, &body)
            .await
            .map(|number| DeliveredTo::Pull { number, branch })
            .map_err(|e| format!("opening the pull request: {e}"))
    }

    fn url(&self, repo: &str) -> String {
        format!("{}/{repo}.git", self.git_url.trim_end_matches('/'))
    }

    /// Replaces whatever earlier nodes did to the clone's git configuration and hooks.
    /// `.git` was checked to hold no links ([`crate::gitdir`]); the config is still
    /// replaced by a new file rather than written through whatever is there.
    fn sanitize(&self, workspace: &Path, url: &str) -> Result<(), String> {
        let git_dir = workspace.join(".git");
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
        let git = Git {
            remote: url,
            token: &log.token,
        };
        let output = git
            .command(dir, repo, network, args)
            .output()
            .await
            .map_err(|e| format!("git {}: {e}", args.first().unwrap_or(&"")))?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        log.lines.push(format!("$ git {}", args.join(" ")));
        log.lines
            .extend(stdout.lines().chain(stderr.lines()).map(str::to_owned));
        if output.status.success() {
            Ok(stdout)
        } else {
            Err(format!(
                "git {} failed: {}",
                args.first().unwrap_or(&""),
                stderr.lines().last().unwrap_or("no message")
            ))
        }
    }
}

/// The workspace's repository, delivered to `url`.
struct Repo<'a> {
    deliverer: &'a Deliverer,
    url: &'a str,
    workspace: &'a Path,
}

impl Repo<'_> {
    /// A git command that stays in the workspace: no token.
    async fn local(&self, args: &[&str], log: &mut Session) -> Result<String, String> {
        let (url, dir) = (self.url, self.workspace);
        self.deliverer
            .run(url, dir, Some(dir), Network::Local, args, log)
            .await
    }

    /// A git command that talks to the remote, with the token.
    async fn remote(&self, args: &[&str], log: &mut Session) -> Result<String, String> {
        let (url, dir) = (self.url, self.workspace);
        self.deliverer
            .run(url, dir, Some(dir), Network::Remote, args, log)
            .await
    }

    /// Merges the work branch into `base` when it merges cleanly, and pushes `base`.
    async fn merge(&self, branch: &str, base: &str, log: &mut Session) -> Delivered {
        self.remote(&["fetch", "--quiet", "origin", base], log)
            .await?;
        self.local(
            &["checkout", "--quiet", "-B", base, &format!("origin/{base}")],
            log,
        )
        .await?;
        let name = format!("user.name={}", self.deliverer.author_name);
        let email = format!("user.email={}", self.deliverer.author_email);
        let message = format!("Merge {branch} into {base}");
        if self
            .local(
                &[
                    "-c", &name, "-c", &email, "merge", "--no-ff", "--quiet", "-m", &message,
                    branch,
                ],
                log,
            )
            .await
            .is_err()
        {
            let conflicts = self
                .local(&["diff", "--name-only", "--diff-filter=U"], log)
                .await
                .unwrap_or_default();
            let _ = self.local(&["merge", "--abort"], log).await;
            let _ = self.local(&["checkout", "--quiet", branch], log).await;
            return Err(format!(
                "the work conflicts with {base} in: {}",
                conflicts.split_whitespace().collect::<Vec<_>>().join(", ")
            ));
        }
        self.remote(&["push", "--quiet", "origin", base], log)
            .await?;
        Ok(DeliveredTo::Merged(base.to_owned()))
    }
}

/// `gatehouse/<number>-<title words>`: one branch per requirement, readable in GitHub.
pub(crate) fn work_branch(number: u64, title: &str) -> String {
    let mut slug = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') && !slug.is_empty() {
            slug.push('-');
        }
        if slug.len() >= 40 {
            break;
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        format!("gatehouse/{number}")
    } else {
        format!("gatehouse/{number}-{slug}")
    }
}

#[cfg(test)]
mod hostile;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branches_are_named_after_the_requirement() {
        assert_eq!(
            work_branch(12, "Spelling error in the README file"),
            "gatehouse/12-spelling-error-in-the-readme-file"
        );
        assert_eq!(work_branch(3, "¿Qué?"), "gatehouse/3-qu");
        assert_eq!(work_branch(4, "!!!"), "gatehouse/4");
        assert!(work_branch(5, &"long ".repeat(30)).len() <= "gatehouse/5-".len() + 40);
    }
}
