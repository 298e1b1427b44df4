//! Makes GitHub show what each comment should say: creates it once (found again by its
//! marker after a failure or a crash), then edits it in place.

use std::time::Duration;

use gatehouse_store::CommentRow;
use tokio_util::sync::CancellationToken;

use crate::Notifier;

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
            match self.store.dirty_comments(50).await {
                Ok(dirty) => {
                    for comment in dirty {
                        if shutdown.is_cancelled() {
                            return;
                        }
                        if let Err(e) = self.post(&github, &comment).await {
                            tracing::warn!(key = %comment.key, repo = %comment.repo, number = comment.number, error = %e, "posting a GitHub comment failed; retrying later");
                            failed = true;
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

    async fn post(
        &self,
        github: &gatehouse_github::GithubClient,
        comment: &CommentRow,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let marker = format!("<!-- gatehouse:{} -->", comment.key);
        let number = u64::try_from(comment.number)?;
        let id = match comment.comment_id {
            Some(id) => {
                let id = u64::try_from(id)?;
                github
                    .update_comment(&comment.repo, id, &marker, &comment.body)
                    .await?;
                id
            }
            None => {
                github
                    .create_comment_once(&comment.repo, number, &marker, &comment.body)
                    .await?
            }
        };
        self.store
            .comment_posted(&comment.key, id, &comment.body_hash)
            .await?;
        Ok(())
    }
}
