//! Makes GitHub show what each comment should say: creates it once (found again by its
//! marker after a failure or a crash), then edits it in place.

use std::time::{Duration, Instant};

use gatehouse_github::{GithubClient, GithubError};
use gatehouse_store::CommentRow;
use tokio_util::sync::CancellationToken;

use crate::Notifier;
use crate::notifier::COMMENTS_LEASE;
use gatehouse_outage::Outage;

/// How long the poster sleeps when nothing wakes it, and after a failure.
const POLL: Duration = Duration::from_secs(2);

impl Notifier {
    /// Posts dirty comments until `shutdown`.
    pub(crate) async fn post_comments(self, shutdown: CancellationToken) {
        let Some(github) = self.github.clone() else {
            return;
        };
        let mut outage = Outage::new(format!("GitHub API at {}", github.api_url()));
        loop {
            let mut failed = false;
            // How long to wait when GitHub does not answer: growing while it stays down.
            let mut wait = POLL;
            if !self.may_post(COMMENTS_LEASE).await {
                // Another replica posts; this one stands by in case it stops.
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(POLL) => {}
                }
                continue;
            }
            match self.store.dirty_comments(50).await {
                Ok(dirty) => {
                    for comment in dirty {
                        if shutdown.is_cancelled() {
                            return;
                        }
                        if !self.may_post(COMMENTS_LEASE).await {
                            failed = true;
                            break;
                        }
                        let posted = self.post(&github, &comment).await;
                        if !matches!(posted, Err(Failure::Unreachable(_))) {
                            Outage::log(&outage.answered(Instant::now()));
                        }
                        match posted {
                            Ok(()) => {}
                            // GitHub refused it for good (gone, forbidden, invalid): retrying
                            // cannot help; a later change of the text tries again.
                            Err(Failure::Refused(e)) => {
                                tracing::error!(key = %comment.key, repo = %comment.repo, number = comment.number, error = %e, "GitHub refused a comment; giving up on this text");
                                if let Err(e) = self
                                    .store
                                    .comment_abandoned(&comment.key, &comment.body_hash)
                                    .await
                                {
                                    tracing::warn!(error = %e, "recording an abandoned comment failed");
                                }
                            }
                            Err(Failure::Later(e)) => {
                                tracing::warn!(key = %comment.key, repo = %comment.repo, number = comment.number, error = %e, "posting a GitHub comment failed; retrying later");
                                failed = true;
                            }
                            // GitHub is down: the other comments would fail too.
                            Err(Failure::Unreachable(e)) => {
                                let (say, retry) = outage.failed(Instant::now(), &e);
                                Outage::log(&say);
                                (failed, wait) = (true, retry);
                                break;
                            }
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reading comments to post failed");
                    failed = true;
                }
            }
            if !failed
                && self
                    .store
                    .dirty_comments(1)
                    .await
                    .is_ok_and(|d| !d.is_empty())
            {
                continue;
            }
            if failed {
                // A wake-up does not bring GitHub back: wait the retry out.
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(wait) => {}
                }
                continue;
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = self.wake.notified() => {}
                () = tokio::time::sleep(POLL) => {}
            }
        }
    }

    async fn post(&self, github: &GithubClient, comment: &CommentRow) -> Result<(), Failure> {
        let marker = gatehouse_github::comment_marker(&comment.key);
        let number = u64::try_from(comment.number).unwrap_or_default();
        let posted = match comment.comment_id.and_then(|id| u64::try_from(id).ok()) {
            Some(id) => github
                .update_comment(&comment.repo, id, &marker, &comment.body)
                .await
                .map(|()| id),
            None => {
                github
                    .create_comment_once(&comment.repo, number, &marker, &comment.body)
                    .await
            }
        };
        let id = posted.map_err(Failure::of_github)?;
        self.store
            .comment_posted(&comment.key, id, &comment.body_hash)
            .await
            .map_err(|e| Failure::Later(e.to_string()))
    }
}

/// How posting a comment or chat message failed.
pub(crate) enum Failure {
    /// The platform said no for good.
    Refused(String),
    /// Try again later (the database unavailable).
    Later(String),
    /// The platform did not answer (after the client's own retries): it is down, and the
    /// poster waits for it ([`Outage`]).
    Unreachable(String),
}

impl Failure {
    pub(crate) fn of_github(e: GithubError) -> Self {
        match e {
            GithubError::Api { .. } | GithubError::Setup(_) => Failure::Refused(e.to_string()),
            GithubError::Unavailable(why) => Failure::Unreachable(why),
        }
    }
}
