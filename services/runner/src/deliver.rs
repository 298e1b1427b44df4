//! `deliver` nodes and the repository they deliver: the requirement's repository is cloned
//! into the run's workspace before its first node, and a `deliver` node commits the
//! workspace to a work branch named after the requirement, pushes it, and opens or
//! updates the branch's pull request — or, in `direct` mode, merges it into the target
//! branch after a conflict check.
//!
//! The token reaches git only through its environment, as an HTTP header
//! (`GIT_CONFIG_*`): never in a remote URL, the repository's config, logs or artifacts.
//! Earlier nodes run code in the workspace, so before git runs with the token the clone's
//! config is rewritten (its remote pointing where Gatehouse says) and its hooks removed, and
//! every git command runs with hooks and fsmonitor turned off: nothing the workspace holds
//! can redirect the push or run with the token in reach.

use std::path::Path;

use base64::Engine;
use gatehouse_github::GithubClient;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

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

/// The `deliver` part of a dispatch.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct DeliverSpec {
    /// `pr` or `direct`.
    pub mode: String,
    /// The target branch; the repository's default when not given.
    pub branch: Option<String>,
}

/// A GitHub issue a run works on.
pub(crate) struct Target<'a> {
    /// `owner/name`.
    pub repo: &'a str,
    /// Issue number.
    pub number: u64,
    /// Issue title.
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
        /// Its number.
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
        self.git(
            workspace.parent().unwrap_or(workspace),
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
        if !workspace.join(".git").exists() {
            return Err("the workspace is not a clone of the repository".into());
        }
        self.sanitize(workspace, &self.url(target.repo))?;
        let branch = work_branch(target.number, target.title);
        let base = match &spec.branch {
            Some(branch) => branch.clone(),
            None => self
                .github
                .default_branch(target.repo)
                .await
                .map_err(|e| format!("finding the default branch: {e}"))?,
        };
        self.git(workspace, &["checkout", "--quiet", "-B", &branch], log)
            .await?;
        self.git(workspace, &["add", "--all"], log).await?;
        let changes = self.git(workspace, &["status", "--porcelain"], log).await?;
        if !changes.trim().is_empty() {
            let subject = format!("{} (#{})", target.title, target.number);
            let body = format!("Delivered by Gatehouse run {}.", target.run);
            let name = format!("user.name={}", self.author_name);
            let email = format!("user.email={}", self.author_email);
            self.git(
                workspace,
                &[
                    "-c", &name, "-c", &email, "commit", "--quiet", "-m", &subject, "-m", &body,
                ],
                log,
            )
            .await?;
        }
        let ahead = self
            .git(
                workspace,
                &["rev-list", "--count", &format!("origin/{base}..HEAD")],
                log,
            )
            .await?;
        if ahead.trim() == "0" {
            return Err(format!(
                "nothing to deliver: the workspace has no changes against {base}"
            ));
        }
        if spec.mode == "direct" {
            return self.merge(workspace, &branch, &base, log).await;
        }
        self.git(
            workspace,
            &["push", "--quiet", "--force", "origin", &branch],
            log,
        )
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

    /// Merges the work branch into `base` when it merges cleanly, and pushes `base`.
    async fn merge(
        &self,
        workspace: &Path,
        branch: &str,
        base: &str,
        log: &mut Session,
    ) -> Delivered {
        self.git(workspace, &["fetch", "--quiet", "origin", base], log)
            .await?;
        self.git(
            workspace,
            &["checkout", "--quiet", "-B", base, &format!("origin/{base}")],
            log,
        )
        .await?;
        let name = format!("user.name={}", self.author_name);
        let email = format!("user.email={}", self.author_email);
        let message = format!("Merge {branch} into {base}");
        if self
            .git(
                workspace,
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
                .git(workspace, &["diff", "--name-only", "--diff-filter=U"], log)
                .await
                .unwrap_or_default();
            let _ = self.git(workspace, &["merge", "--abort"], log).await;
            let _ = self
                .git(workspace, &["checkout", "--quiet", branch], log)
                .await;
            return Err(format!(
                "the work conflicts with {base} in: {}",
                conflicts.split_whitespace().collect::<Vec<_>>().join(", ")
            ));
        }
        self.git(workspace, &["push", "--quiet", "origin", base], log)
            .await?;
        Ok(DeliveredTo::Merged(base.to_owned()))
    }

    fn url(&self, repo: &str) -> String {
        format!("{}/{repo}.git", self.git_url.trim_end_matches('/'))
    }

    /// Replaces whatever earlier nodes did to the clone's git configuration and hooks.
    fn sanitize(&self, workspace: &Path, url: &str) -> Result<(), String> {
        let git_dir = workspace.join(".git");
        let config = format!(
            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n[remote \"origin\"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
        );
        std::fs::write(git_dir.join("config"), config)
            .map_err(|e| format!("resetting the clone's configuration: {e}"))?;
        let hooks = git_dir.join("hooks");
        if hooks.exists() {
            std::fs::remove_dir_all(&hooks).map_err(|e| format!("removing git hooks: {e}"))?;
        }
        Ok(())
    }

    /// Runs git with the token as an HTTP header in its environment; its output goes to
    /// the node's log.
    async fn git(&self, dir: &Path, args: &[&str], log: &mut Session) -> Result<String, String> {
        let credentials = base64::engine::general_purpose::STANDARD
            .encode(format!("x-access-token:{}", log.token.expose_secret()));
        let output = tokio::process::Command::new("git")
            // A Docker sandbox leaves the workspace owned by its non-root user; the
            // runner's git must still work in it.
            .args([
                "-c",
                "core.hooksPath=/dev/null",
                "-c",
                "core.fsmonitor=false",
                "-c",
                "safe.directory=*",
            ])
            .args(args)
            .current_dir(dir)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_COUNT", "1")
            .env("GIT_CONFIG_KEY_0", "http.extraHeader")
            .env(
                "GIT_CONFIG_VALUE_0",
                format!("Authorization: Basic {credentials}"),
            )
            .stdin(std::process::Stdio::null())
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
