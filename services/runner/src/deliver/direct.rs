//! `direct` delivery: the work merged into its base branch, without a pull request.
//!
//! The merge never touches the workspace's files or branches: `git merge-tree
//! --write-tree` computes it from the two commits alone (its objects are the only thing
//! written), so there is no work tree to switch, clean up or leave half-merged. A conflict
//! anywhere stops the delivery before anything is pushed, naming the files. Every
//! repository is merged before any is pushed; each push carries a lease on the base's
//! commit the merge was made on (`--force-with-lease=refs/heads/<base>:<commit>`, a
//! compare-and-swap the remote applies under its ref lock), so a push that landed on the
//! base meanwhile is never overwritten or merged blind: the delivery fails naming both
//! commits.

use super::branch::Repo;
use super::pulls::with_done;
use super::trees::{is_object_id, short};
use super::{Delivered, DeliveredTo};
use crate::git::Network;

/// A merge made, not yet pushed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Merge {
    /// The base branch.
    pub base: String,
    /// The base's commit it was made on: the push's lease.
    pub expected: String,
    /// The merge commit.
    pub commit: String,
}

/// Merges every repository's work into its base, then pushes them all.
pub(super) async fn merge_all(
    repos: &mut [&mut Repo<'_>],
    several: bool,
) -> Result<Vec<Delivered>, String> {
    let mut merges = Vec::new();
    for repo in repos.iter_mut() {
        merges.push(repo.merge(several).await?);
    }
    let mut merged: Vec<String> = Vec::new();
    let mut delivered = Vec::new();
    for (repo, merge) in repos.iter_mut().zip(merges) {
        repo.push_merge(&merge)
            .await
            .map_err(|reason| with_done(reason, "merged already", &merged))?;
        merged.push(format!("{} into {}", repo.checkout.repo, merge.base));
        delivered.push(Delivered {
            repo: repo.checkout.repo.clone(),
            to: DeliveredTo::Merged {
                branch: merge.base,
                commit: merge.commit,
            },
        });
    }
    Ok(delivered)
}

impl Repo<'_> {
    /// Fetches the base and merges the committed work into it, when it merges cleanly.
    /// `several`: the message names the repository (one of several).
    pub(super) async fn merge(&mut self, several: bool) -> Result<Merge, String> {
        let repo = self.checkout.repo.clone();
        let (base, branch) = (self.base().to_owned(), self.branch().to_owned());
        let work = self.commit.clone().unwrap_or_default();
        let tracking = format!("refs/remotes/origin/{base}");
        let refspec = format!("+refs/heads/{base}:{tracking}");
        let fetched = self
            .ran(Network::Remote, &["fetch", "--quiet", "origin", &refspec])
            .await?;
        if fetched.code != Some(0) {
            return Err(if fetched.stderr.contains("couldn't find remote ref") {
                format!("`{base}` does not exist in {repo}; nothing to merge into")
            } else {
                format!("fetching `{base}` of {repo} failed: {}", fetched.reason())
            });
        }
        let expected = self
            .local(&["rev-parse", "--verify", &format!("{tracking}^{{commit}}")])
            .await?
            .trim()
            .to_owned();
        let ran = self
            .ran(
                Network::Local,
                &[
                    "merge-tree",
                    "--write-tree",
                    "--no-messages",
                    "--name-only",
                    "-z",
                    &expected,
                    &work,
                ],
            )
            .await?;
        let mut fields = ran.stdout.split('\0');
        let tree = fields.next().unwrap_or_default().trim().to_owned();
        match ran.code {
            Some(0) if is_object_id(&tree) => {}
            Some(1) => {
                let mut files: Vec<&str> = fields.filter(|f| !f.is_empty()).collect();
                files.dedup();
                let work = if several {
                    format!("the work on {repo}")
                } else {
                    "the work".to_owned()
                };
                return Err(format!(
                    "{work} conflicts with {base} in: {}",
                    files.join(", ")
                ));
            }
            _ => {
                return Err(format!(
                    "{repo}: merging `{branch}` into `{base}` failed: {}",
                    ran.reason()
                ));
            }
        }
        let (name, email) = self.author();
        let message = format!("Merge {branch} into {base}");
        let commit = self
            .local(&[
                "-c",
                &name,
                "-c",
                &email,
                "commit-tree",
                &tree,
                "-p",
                &expected,
                "-p",
                &work,
                "-m",
                &message,
            ])
            .await?
            .trim()
            .to_owned();
        Ok(Merge {
            base,
            expected,
            commit,
        })
    }

    /// Pushes the merge commit to the base, if the base is still where the merge was made.
    pub(super) async fn push_merge(&mut self, merge: &Merge) -> Result<(), String> {
        let Merge {
            base,
            expected,
            commit,
        } = merge;
        let lease = format!("--force-with-lease=refs/heads/{base}:{expected}");
        let refspec = format!("{commit}:refs/heads/{base}");
        let pushed = self
            .ran(
                Network::Remote,
                &["push", "--quiet", &lease, "origin", &refspec],
            )
            .await?;
        if pushed.code == Some(0) {
            return Ok(());
        }
        let repo = self.checkout.repo.clone();
        let listed = self
            .ran(
                Network::Remote,
                &["ls-remote", "origin", &format!("refs/heads/{base}")],
            )
            .await?;
        let actual = listed
            .stdout
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
        if listed.code == Some(0) && actual != *expected {
            let actual = if actual.is_empty() {
                "nothing (it was deleted)"
            } else {
                short(&actual)
            };
            return Err(format!(
                "{base} on {repo} moved from {} to {actual} while merging; nothing was pushed",
                short(expected)
            ));
        }
        Err(format!(
            "pushing the merge into {base} on {repo} failed: {}",
            pushed.reason()
        ))
    }
}
