//! What a delivery needs from GitHub's API before it is processed: a review's comments,
//! the failing checks of a pull request's head and of its base. Fetched before the
//! delivery's transaction (never while it holds the store), only for Gatehouse's own pull
//! requests; a delivery that needs it is not processed as it arrives, so GitHub is
//! answered at once.

use gatehouse_github::{FailedCheck, GithubClient, GithubError, ReviewComment, Webhook};
use gatehouse_store::{DeliveryRow, PullRequestRow};

use crate::{ApiError, ApiState};

/// Why [`lookup`] found nothing to go on.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LookupError {
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] ApiError),
    /// GitHub did not answer (down, unreachable, failing past every retry): the delivery
    /// waits for it, and the processor says so once rather than on every try.
    #[error("GitHub did not say {asked}: {why}")]
    Unreachable { asked: String, why: String },
    /// GitHub answered, with an error.
    #[error("GitHub did not say {asked}: {error}")]
    Answered { asked: String, error: GithubError },
}

impl From<gatehouse_store::StoreError> for LookupError {
    fn from(e: gatehouse_store::StoreError) -> Self {
        Self::Store(e.into())
    }
}

impl From<LookupError> for ApiError {
    fn from(e: LookupError) -> Self {
        match e {
            LookupError::Store(e) => e,
            other => ApiError::Internal(other.to_string()),
        }
    }
}

/// What [`lookup`] found; empty for a delivery that needs nothing.
#[derive(Debug, Default)]
pub(crate) struct Lookup {
    /// The comments of the review asking for changes, with file and line.
    pub review_comments: Vec<ReviewComment>,
    /// The failing checks of the pull request's head.
    pub failed: Vec<FailedCheck>,
    /// The names of checks that fail on the base branch too.
    pub failed_on_base: Vec<String>,
    /// After a push to a branch: Gatehouse's open pull requests into it that no longer
    /// merge cleanly, and those that still do (or whose state GitHub has not worked out).
    pub conflicting: Vec<u64>,
    pub merging: Vec<u64>,
    /// Whether GitHub's API was asked (and answered).
    pub asked_github: bool,
}

/// What the API is asked, by the webhook alone (no store, no network).
enum Need<'a> {
    /// A review's comments.
    Review {
        repo: &'a str,
        number: u64,
        review: u64,
    },
    /// The failing checks of `head` on pull request `number`.
    Checks {
        repo: &'a str,
        number: u64,
        head: &'a str,
        base: &'a str,
    },
    /// Whether Gatehouse's open pull requests into `branch` still merge.
    Mergeable { repo: &'a str, branch: &'a str },
}

fn need(webhook: &Webhook) -> Option<Need<'_>> {
    match webhook {
        Webhook::PullRequestReview(e) if e.action == "submitted" => Some(Need::Review {
            repo: &e.repository.full_name,
            number: e.pull_request.number,
            review: e.review.id,
        }),
        Webhook::PullRequestReviewComment(e) if e.action == "created" => {
            e.comment.pull_request_review_id.map(|review| Need::Review {
                repo: &e.repository.full_name,
                number: e.pull_request.number,
                review,
            })
        }
        Webhook::CheckSuite(e)
            if e.action == "completed" && failing(e.check_suite.conclusion.as_deref()) =>
        {
            let pull = e.check_suite.pull_requests.first()?;
            Some(Need::Checks {
                repo: &e.repository.full_name,
                number: pull.number,
                head: &e.check_suite.head_sha,
                base: &pull.base.sha,
            })
        }
        Webhook::WorkflowRun(e)
            if e.action == "completed" && failing(e.workflow_run.conclusion.as_deref()) =>
        {
            let pull = e.workflow_run.pull_requests.first()?;
            Some(Need::Checks {
                repo: &e.repository.full_name,
                number: pull.number,
                head: &e.workflow_run.head_sha,
                base: &pull.base.sha,
            })
        }
        Webhook::Push(e) if !e.deleted => Some(Need::Mergeable {
            repo: &e.repository.full_name,
            branch: e.git_ref.strip_prefix("refs/heads/")?,
        }),
        _ => None,
    }
}

fn failing(conclusion: Option<&str>) -> bool {
    matches!(
        conclusion,
        Some("failure" | "timed_out" | "startup_failure")
    )
}

/// The events that may need the API, by name: the others are never parsed to find out.
const MAY_NEED: [&str; 5] = [
    "pull_request_review",
    "pull_request_review_comment",
    "check_suite",
    "workflow_run",
    "push",
];

/// Whether a delivery may need the API: then it is processed by the processor, after
/// [`lookup`], not as it arrives.
pub(crate) fn needs_lookup(delivery: &DeliveryRow) -> bool {
    delivery.source == "github"
        && MAY_NEED.contains(&delivery.event.as_str())
        && Webhook::parse(&delivery.event, delivery.body.as_bytes())
            .ok()
            .is_some_and(|w| need(&w).is_some())
}

/// Fetches what `delivery` needs. An API failure is an error: the delivery stays pending
/// and is tried again, rather than becoming work without its comments or logs.
pub(crate) async fn lookup(api: &ApiState, delivery: &DeliveryRow) -> Result<Lookup, LookupError> {
    let (Some(client), Ok(webhook)) = (
        api.github_client.as_ref(),
        Webhook::parse(&delivery.event, delivery.body.as_bytes()),
    ) else {
        return Ok(Lookup::default());
    };
    let Some(need) = need(&webhook) else {
        return Ok(Lookup::default());
    };
    let asked = match &need {
        Need::Mergeable { repo, branch } => {
            format!("whether {repo}'s pull requests into {branch} still merge")
        }
        Need::Review { repo, number, .. } | Need::Checks { repo, number, .. } => {
            // Only Gatehouse's own pull requests are worth the API's time.
            if api.store.pull_request(repo, *number).await?.is_none() {
                return Ok(Lookup::default());
            }
            format!("what {repo}#{number}'s event needs")
        }
    };
    let open = match &need {
        Need::Mergeable { repo, .. } => api.store.open_pull_requests(repo).await?,
        _ => Vec::new(),
    };
    let mut found = fetch(client, &need, &open)
        .await
        .map_err(|error| match error {
            GithubError::Unavailable(why) => LookupError::Unreachable { asked, why },
            error => LookupError::Answered { asked, error },
        })?;
    found.asked_github = true;
    Ok(found)
}

/// How long GitHub is given to work out whether a pull request merges after its base
/// moved (it answers `null` until it has): tries, and the pause between them.
const MERGEABLE_TRIES: u32 = 5;
const MERGEABLE_PAUSE: std::time::Duration = std::time::Duration::from_secs(2);

/// Which of `open` (Gatehouse's open pull requests on `repo`) merge into `branch`, and
/// which no longer do. One whose state GitHub has not worked out after a few tries counts
/// as merging: a conflict is only reported when GitHub says so.
async fn mergeable(
    client: &GithubClient,
    repo: &str,
    branch: &str,
    open: &[u64],
) -> Result<Lookup, gatehouse_github::GithubError> {
    let mut found = Lookup::default();
    for &number in open {
        let mut tries = 0;
        let pull = loop {
            let pull = client.pull(repo, number).await?;
            tries += 1;
            if pull.mergeable.is_some() || tries >= MERGEABLE_TRIES || pull.base.name != branch {
                break pull;
            }
            tokio::time::sleep(MERGEABLE_PAUSE).await;
        };
        if pull.base.name != branch || pull.state != "open" {
            continue;
        }
        match pull.mergeable {
            Some(false) => found.conflicting.push(number),
            _ => found.merging.push(number),
        }
    }
    Ok(found)
}

async fn fetch(
    client: &GithubClient,
    need: &Need<'_>,
    open: &[PullRequestRow],
) -> Result<Lookup, gatehouse_github::GithubError> {
    Ok(match need {
        Need::Review {
            repo,
            number,
            review,
        } => Lookup {
            review_comments: client.review_comments(repo, *number, *review).await?,
            ..Lookup::default()
        },
        Need::Checks {
            repo, head, base, ..
        } => {
            let limits = gatehouse_github::CheckLimits::default();
            let failed = client.failed_checks(repo, head, limits).await?;
            // The base is asked only about checks that fail here.
            let on_base = if base.is_empty() || failed.is_empty() {
                Vec::new()
            } else {
                client.failed_checks(repo, base, limits).await?
            };
            let failed_on_base = failed
                .iter()
                .filter(|c| on_base.iter().any(|b| b.name == c.name))
                .map(|c| c.name.clone())
                .collect();
            Lookup {
                failed,
                failed_on_base,
                ..Lookup::default()
            }
        }
        Need::Mergeable { repo, branch } => {
            let open: Vec<u64> = open
                .iter()
                .filter_map(|p| u64::try_from(p.number).ok())
                .collect();
            mergeable(client, repo, branch, &open).await?
        }
    })
}
