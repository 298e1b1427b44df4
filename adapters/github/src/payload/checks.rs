//! `check_suite`, `check_run` and `workflow_run`: CI's verdicts on a commit, and the pull
//! requests that commit heads.

use serde::Deserialize;

use super::{Repository, User};

/// Whether a check's `conclusion` is a failure a person (or agent) must act on: failure,
/// timed_out, cancelled or action_required. Neutral, skipped, stale and success are not.
pub fn failing_conclusion(conclusion: &str) -> bool {
    matches!(
        conclusion,
        "failure" | "timed_out" | "cancelled" | "action_required"
    )
}

/// `check_suite`
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CheckSuiteEvent {
    /// requested, rerequested, completed.
    pub action: String,
    pub check_suite: CheckSuite,
    pub repository: Repository,
    /// Who did it.
    pub sender: User,
}

/// One app's checks on one commit.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CheckSuite {
    pub id: u64,
    /// The commit checked.
    pub head_sha: String,
    /// Its branch; `None` when pushed to another repository (a fork).
    pub head_branch: Option<String>,
    /// queued, in_progress, completed.
    pub status: Option<String>,
    /// success, failure, neutral, cancelled, timed_out, action_required, stale, ...;
    /// `None` until completed.
    pub conclusion: Option<String>,
    /// The open pull requests whose head is this commit, in this repository.
    #[serde(default)]
    pub pull_requests: Vec<CheckPull>,
    /// The app running the checks.
    pub app: Option<App>,
}

impl CheckSuite {
    /// Whether it completed with a [`failing_conclusion`].
    pub fn failed(&self) -> bool {
        self.conclusion.as_deref().is_some_and(failing_conclusion)
    }
}

/// `check_run`
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CheckRunEvent {
    /// created, completed, rerequested, requested_action.
    pub action: String,
    pub check_run: CheckRun,
    pub repository: Repository,
    /// Who did it (left out of some deliveries).
    pub sender: Option<User>,
}

/// One check (for GitHub Actions, one job: its id is the job's).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CheckRun {
    pub id: u64,
    /// The job's or check's name.
    pub name: String,
    /// The commit checked.
    pub head_sha: String,
    /// queued, in_progress, completed, ...
    pub status: String,
    /// As [`CheckSuite::conclusion`].
    pub conclusion: Option<String>,
    pub html_url: Option<String>,
    /// The suite it belongs to.
    pub check_suite: Option<CheckSuiteId>,
    /// The open pull requests whose head is this commit, in this repository.
    #[serde(default)]
    pub pull_requests: Vec<CheckPull>,
    /// What the check said.
    pub output: Option<CheckOutput>,
    /// The app running the check.
    pub app: Option<App>,
}

impl CheckRun {
    /// Whether it completed with a [`failing_conclusion`].
    pub fn failed(&self) -> bool {
        self.conclusion.as_deref().is_some_and(failing_conclusion)
    }
}

/// A check suite as a check run names it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckSuiteId {
    pub id: u64,
}

/// What a check said about itself.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckOutput {
    pub title: Option<String>,
    /// Markdown.
    pub summary: Option<String>,
}

/// A GitHub App, e.g. `github-actions`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct App {
    /// Left out of some deliveries.
    pub slug: Option<String>,
}

/// `workflow_run`
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct WorkflowRunEvent {
    /// requested, in_progress, completed.
    pub action: String,
    pub workflow_run: WorkflowRun,
    pub repository: Repository,
    /// Who did it.
    pub sender: Option<User>,
}

/// One run of a GitHub Actions workflow.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct WorkflowRun {
    pub id: u64,
    /// The workflow's name (may be empty).
    pub name: Option<String>,
    /// The commit run on.
    pub head_sha: String,
    pub head_branch: Option<String>,
    /// requested, in_progress, completed, ...
    pub status: Option<String>,
    /// As [`CheckSuite::conclusion`].
    pub conclusion: Option<String>,
    pub html_url: String,
    /// The open pull requests whose head is this commit, in this repository.
    #[serde(default)]
    pub pull_requests: Vec<CheckPull>,
}

impl WorkflowRun {
    /// Whether it completed with a [`failing_conclusion`].
    pub fn failed(&self) -> bool {
        self.conclusion.as_deref().is_some_and(failing_conclusion)
    }
}

/// A pull request as checks name it: its number and both ends' commits.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckPull {
    pub number: u64,
    pub head: Tip,
    pub base: Tip,
}

/// A branch and the commit it was at.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Tip {
    #[serde(rename = "ref")]
    pub name: String,
    pub sha: String,
}
