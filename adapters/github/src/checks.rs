//! The checks that failed on a commit, with what they said and the end of their logs: what
//! an agent sent back to fix a red pull request reads.

use http::StatusCode;
use serde::Deserialize;

use crate::payload::{App, CheckOutput, failing_conclusion};
use crate::transport::{call, get_tail, retried};
use crate::{GithubClient, GithubError};

/// How much of the failures [`GithubClient::failed_checks`] gathers: the rework comment
/// it ends up in must stay readable and within an agent's context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckLimits {
    /// Failed checks described (the first ones GitHub lists).
    pub jobs: usize,
    /// Bytes kept from the end of each log.
    pub log_tail_bytes: usize,
    /// Bytes kept from the start of each check's title and summary.
    pub text_bytes: usize,
}

impl Default for CheckLimits {
    fn default() -> Self {
        Self {
            jobs: 3,
            log_tail_bytes: 8 * 1024,
            text_bytes: 2 * 1024,
        }
    }
}

/// A check run that completed with a [`failing_conclusion`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedCheck {
    /// The check run's id (for GitHub Actions, the job's).
    pub id: u64,
    /// The job's or check's name.
    pub name: String,
    /// failure, timed_out, cancelled or action_required.
    pub conclusion: String,
    pub html_url: Option<String>,
    /// The app that ran it, e.g. `github-actions`.
    pub app: Option<String>,
    /// What the check said, cut to [`CheckLimits::text_bytes`].
    pub title: Option<String>,
    /// Markdown, cut to [`CheckLimits::text_bytes`].
    pub summary: Option<String>,
    /// The end of the job's log (GitHub Actions only), at most
    /// [`CheckLimits::log_tail_bytes`]; `None` when there is none or it expired.
    pub log_tail: Option<String>,
}

/// A check run as `GET /repos/{repo}/commits/{sha}/check-runs` lists it.
#[derive(Deserialize)]
struct Listed {
    id: u64,
    name: String,
    status: String,
    conclusion: Option<String>,
    html_url: Option<String>,
    output: Option<CheckOutput>,
    app: Option<App>,
}

#[derive(Deserialize)]
struct CheckRuns {
    check_runs: Vec<Listed>,
}

/// The app whose check runs are jobs with logs.
const ACTIONS: &str = "github-actions";

impl GithubClient {
    /// The check runs on `sha` that completed with a [`failing_conclusion`], in GitHub's
    /// order, at most `limits.jobs` of them (from the first 100 runs), each with its output
    /// and, for GitHub Actions jobs, the end of its log. A log that cannot be had (expired,
    /// not readable with these credentials) leaves `log_tail` `None`.
    pub async fn failed_checks(
        &self,
        repo: &str,
        sha: &str,
        limits: CheckLimits,
    ) -> Result<Vec<FailedCheck>, GithubError> {
        let octo = self.client_for(repo).await?;
        let url = format!("/repos/{repo}/commits/{sha}/check-runs?per_page=100");
        let runs: CheckRuns = call(&octo, http::Method::GET, &url, None).await?;
        let mut failed = Vec::new();
        for run in runs.check_runs.into_iter().filter(|r| {
            r.status == "completed" && r.conclusion.as_deref().is_some_and(failing_conclusion)
        }) {
            if failed.len() >= limits.jobs {
                break;
            }
            let app = run.app.and_then(|a| a.slug);
            let log_tail = if app.as_deref() == Some(ACTIONS) {
                let logs = format!("/repos/{repo}/actions/jobs/{}/logs", run.id);
                match retried(|| get_tail(&octo, &logs, limits.log_tail_bytes)).await {
                    Ok(tail) => Some(tail_text(&tail)),
                    Err(GithubError::Api { status, message }) => {
                        if status != StatusCode::NOT_FOUND && status != StatusCode::GONE {
                            tracing::warn!(%status, %message, %repo, job = run.id, "job log not readable");
                        }
                        None
                    }
                    Err(other) => return Err(other),
                }
            } else {
                None
            };
            let output = run.output.unwrap_or(CheckOutput {
                title: None,
                summary: None,
            });
            failed.push(FailedCheck {
                id: run.id,
                name: run.name,
                conclusion: run.conclusion.unwrap_or_default(),
                html_url: run.html_url,
                app,
                title: output.title.map(|t| head_text(&t, limits.text_bytes)),
                summary: output.summary.map(|s| head_text(&s, limits.text_bytes)),
                log_tail,
            });
        }
        Ok(failed)
    }
}

/// The text of a log's last bytes, starting at a character: a cut through a multi-byte
/// character drops its remains (at most three bytes).
fn tail_text(bytes: &[u8]) -> String {
    let start = bytes
        .iter()
        .take(3)
        .take_while(|b| (**b & 0b1100_0000) == 0b1000_0000)
        .count();
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// At most `max` bytes from the start of `text`, cut at a character, ending with `…` when
/// cut.
fn head_text(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let ellipsis = '…';
    let mut end = max.saturating_sub(ellipsis.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{ellipsis}", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_log_starts_at_a_character() {
        let log = "é".repeat(10);
        for cut in 0..log.len() {
            let tail = tail_text(&log.as_bytes()[cut..]);
            assert!(log.ends_with(&tail), "{cut}");
            assert_eq!(tail.len(), (log.len() - cut) / 2 * 2, "{cut}");
        }
    }

    #[test]
    fn a_cut_summary_stays_within_its_bound() {
        assert_eq!(head_text("short", 10), "short");
        for max in 3..20 {
            let cut = head_text("ünïcödé ünïcödé ünïcödé", max);
            assert!(cut.len() <= max, "{max}: {cut}");
            assert!(cut.ends_with('…'));
        }
    }
}
