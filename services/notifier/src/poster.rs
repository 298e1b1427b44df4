//! Makes GitHub show what each comment should say: creates it once (found again by its
//! marker after a failure or a crash), then edits it in place.

use std::time::Duration;

use gatehouse_github::{GithubClient, GithubError};
use gatehouse_store::CommentRow;
use tokio_util::sync::CancellationToken;

use crate::Notifier;
use crate::notifier::COMMENTS_LEASE;

/// How long the poster sleeps when nothing wakes it, and after a failure.
const POLL: Duration = Duration::from_secs(2);

impl Notifier {
    /// Posts dirty comments until `shutdown`.
    pub(crate) async fn post_comments(self, shutdown: CancellationToken) {
        let Some(github) = self.github.clone() else {
            return;
        };
        loop {
            let mut failed = false;
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
                        match self.post(&github, &comment).await {
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
        let id = posted.map_err(|e| match e {
            GithubError::Api { .. } | GithubError::Setup(_) => Failure::Refused(e.to_string()),
            GithubError::Unavailable(_) => Failure::Later(e.to_string()),
        })?;
        self.store
            .comment_posted(&comment.key, id, &comment.body_hash)
            .await
            .map_err(|e| Failure::Later(e.to_string()))
    }
}

/// How posting a comment or chat message failed.
pub(crate) enum Failure {
    /// GitHub said no for good.
    Refused(String),
    /// Try again later (GitHub or the database unavailable).
    Later(String),
}
