//! What a run's workspace held, so delivery pushes only what a gate approved: the tree of
//! each repository as the last attempt left it, the trees each approval saw, and work that
//! was merged straight into a branch.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::StoreError;
use crate::store::{Store, with_pool, with_writer};
use crate::tx::{Tx, with_tx};

/// The tree of one repository, as an attempt left it or an approval saw it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TreeRow {
    /// For a workspace tree, the attempt that left it; for an approved one, the gate.
    pub node: String,
    pub attempt: i32,
    /// `owner/name`.
    pub repo: String,
    /// `git write-tree` of every file, tracked and untracked.
    pub tree: String,
}

/// Work merged into a branch by a `deliver` node in `direct` mode.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DirectMergeRow {
    pub run_id: Uuid,
    pub repo: String,
    pub requirement_id: Option<Uuid>,
    /// The branch merged into.
    pub branch: String,
    /// The merge commit pushed.
    pub commit_sha: String,
    /// The approved gate upstream of the delivery, if one accepted the work.
    pub approved_by: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A work branch a `deliver` node pushed to a repository that is not on GitHub: to a git
/// remote alone, or to a forge with the merge request (pull request) opened from it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PushedBranchRow {
    pub run_id: Uuid,
    pub repo: String,
    pub requirement_id: Option<Uuid>,
    pub branch: String,
    /// The commit pushed.
    pub commit_sha: String,
    /// The remote pushed to, as shown (no user name).
    pub remote: String,
    /// The `[forges.NAME]` the merge request is on; `None` for a git remote alone.
    pub forge: Option<String>,
    /// The merge request's number there (`!N` on GitLab, `#N` on Gitea).
    pub request_number: Option<i64>,
    /// Its page.
    pub request_url: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl Store {
    /// Records a work branch a delivery pushed (and the merge request opened from it, if
    /// any), replacing what an earlier attempt of the run recorded for the repository.
    pub async fn record_pushed_branch(&self, pushed: &PushedBranchRow) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO pushed_branches (run_id, repo, requirement_id, branch, commit_sha,
                   remote, forge, request_number, request_url, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                 ON CONFLICT (run_id, repo) DO UPDATE SET branch = excluded.branch,
                   commit_sha = excluded.commit_sha, remote = excluded.remote,
                   forge = excluded.forge, request_number = excluded.request_number,
                   request_url = excluded.request_url, created_at = excluded.created_at",
            )
            .bind(pushed.run_id)
            .bind(&pushed.repo)
            .bind(pushed.requirement_id)
            .bind(&pushed.branch)
            .bind(&pushed.commit_sha)
            .bind(&pushed.remote)
            .bind(&pushed.forge)
            .bind(pushed.request_number)
            .bind(&pushed.request_url)
            .bind(pushed.created_at)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// The branches `run` pushed, by repository.
    pub async fn pushed_branches_of_run(
        &self,
        run: Uuid,
    ) -> Result<Vec<PushedBranchRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT run_id, repo, requirement_id, branch, commit_sha, remote, forge,
                   request_number, request_url, created_at
                 FROM pushed_branches WHERE run_id = $1 ORDER BY repo",
            )
            .bind(run)
            .fetch_all(pool)
            .await?
        }))
    }

    /// The branches the runs of `requirement` pushed, oldest first.
    pub async fn pushed_branches_of_requirement(
        &self,
        requirement: Uuid,
    ) -> Result<Vec<PushedBranchRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT run_id, repo, requirement_id, branch, commit_sha, remote, forge,
                   request_number, request_url, created_at
                 FROM pushed_branches WHERE requirement_id = $1 ORDER BY created_at, repo",
            )
            .bind(requirement)
            .fetch_all(pool)
            .await?
        }))
    }

    /// Records the trees `node`'s attempt left in the run's workspace, replacing earlier
    /// ones of the same repositories.
    pub async fn record_workspace_trees(
        &self,
        run: Uuid,
        node: &str,
        attempt: i32,
        trees: &[(String, String)],
    ) -> Result<(), StoreError> {
        let mut tx = self.begin().await?;
        for (repo, tree) in trees {
            with_tx!(tx, conn => {
                sqlx::query(
                    "INSERT INTO workspace_trees (run_id, repo, tree, node, attempt, recorded_at)
                     VALUES ($1, $2, $3, $4, $5, $6)
                     ON CONFLICT (run_id, repo) DO UPDATE SET tree = excluded.tree,
                       node = excluded.node, attempt = excluded.attempt,
                       recorded_at = excluded.recorded_at",
                )
                .bind(run)
                .bind(repo)
                .bind(tree)
                .bind(node)
                .bind(attempt)
                .bind(Utc::now())
                .execute(conn)
                .await?;
            });
        }
        tx.commit().await
    }

    /// The trees of the run's workspace as its last attempts left them.
    pub async fn workspace_trees(&self, run: Uuid) -> Result<Vec<TreeRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT node, attempt, repo, tree FROM workspace_trees WHERE run_id = $1
                 ORDER BY repo",
            )
            .bind(run)
            .fetch_all(pool)
            .await?
        }))
    }

    /// The trees each of the run's approvals saw, by gate and attempt.
    pub async fn approved_trees(&self, run: Uuid) -> Result<Vec<TreeRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT node, attempt, repo, tree FROM approved_trees WHERE run_id = $1
                 ORDER BY node, attempt, repo",
            )
            .bind(run)
            .fetch_all(pool)
            .await?
        }))
    }

    /// Records work a delivery merged into a branch itself, and marks its requirement
    /// delivered: what was merged is in, as when its pull requests are merged.
    pub async fn record_direct_merge(&self, merge: &DirectMergeRow) -> Result<(), StoreError> {
        with_writer!(self, pool => {
            sqlx::query(
                "INSERT INTO direct_merges (run_id, repo, requirement_id, branch, commit_sha,
                   approved_by, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (run_id, repo) DO UPDATE SET commit_sha = excluded.commit_sha,
                   branch = excluded.branch, approved_by = excluded.approved_by",
            )
            .bind(merge.run_id)
            .bind(&merge.repo)
            .bind(merge.requirement_id)
            .bind(&merge.branch)
            .bind(&merge.commit_sha)
            .bind(&merge.approved_by)
            .bind(merge.created_at)
            .execute(pool)
            .await?;
        });
        with_writer!(self, pool => {
            sqlx::query(
                "UPDATE requirements SET state = 'delivered', updated_at = $1
                 WHERE id = $2 AND state = 'open'",
            )
            .bind(Utc::now())
            .bind(merge.requirement_id)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// The direct merges done for a requirement, oldest first.
    pub async fn direct_merges_of_requirement(
        &self,
        requirement: Uuid,
    ) -> Result<Vec<DirectMergeRow>, StoreError> {
        Ok(with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT run_id, repo, requirement_id, branch, commit_sha, approved_by, created_at
                 FROM direct_merges WHERE requirement_id = $1 ORDER BY created_at, repo",
            )
            .bind(requirement)
            .fetch_all(pool)
            .await?
        }))
    }
}

impl Tx {
    /// Binds an approval of `(node, attempt)` to the run's workspace as it is now: its
    /// trees are copied beside the decision, in the decision's transaction.
    pub async fn bind_approved_trees(
        &mut self,
        run: Uuid,
        node: &str,
        attempt: i32,
    ) -> Result<(), StoreError> {
        with_tx!(self, conn => {
            sqlx::query(
                "INSERT INTO approved_trees (run_id, node, attempt, repo, tree)
                 SELECT run_id, $2, $3, repo, tree FROM workspace_trees WHERE run_id = $1
                 ON CONFLICT (run_id, node, attempt, repo) DO NOTHING",
            )
            .bind(run)
            .bind(node)
            .bind(attempt)
            .execute(conn)
            .await?;
        });
        Ok(())
    }
}
