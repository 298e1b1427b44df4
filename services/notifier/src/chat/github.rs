//! Chat messages of a conversation on a GitHub issue (platform `github`: the channel is the
//! repository, the thread the number), posted as comments on the issue: created
//! once (found again by their marker after a failure or a crash), then edited in place,
//! as GitHub status comments are.

use gatehouse_chat::Body;
use gatehouse_store::ChatMessageRow;

use crate::Notifier;
use crate::poster::Failure;

impl Notifier {
    /// Shows `body` as `m`'s comment; the comment's id.
    pub(super) async fn post_github(
        &self,
        m: &ChatMessageRow,
        body: &Body,
    ) -> Result<String, Failure> {
        let github = self
            .github
            .as_ref()
            .ok_or_else(|| Failure::Refused("GitHub is not configured".into()))?;
        if m.recipient.is_some() {
            return Err(Failure::Refused(
                "GitHub has no private answers; an issue's comments are public".into(),
            ));
        }
        let text = gatehouse_github::chat_comment(body).ok_or_else(|| {
            Failure::Refused("an issue's comments cannot show a sign-in link".into())
        })?;
        let number = m
            .thread
            .as_deref()
            .and_then(|t| t.parse::<u64>().ok())
            .ok_or_else(|| {
                Failure::Refused(format!("`{:?}` is not an issue's number", m.thread))
            })?;
        let marker = gatehouse_github::comment_marker(&m.key);
        let posted = match m
            .message_id
            .as_deref()
            .and_then(|id| id.parse::<u64>().ok())
        {
            Some(id) => github
                .update_comment(&m.channel, id, &marker, &text)
                .await
                .map(|()| id),
            None => {
                github
                    .create_comment_once(&m.channel, number, &marker, &text)
                    .await
            }
        };
        posted.map(|id| id.to_string()).map_err(Failure::of_github)
    }
}
