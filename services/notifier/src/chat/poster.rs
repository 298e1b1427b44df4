//! Makes Slack and Discord (and GitHub issues, for their conversations) show what each
//! chat message should: creates it once, then edits it in place; ephemeral answers are
//! sent once. A message whose create may have succeeded before a crash is found again
//! instead of posted twice: on Slack by the metadata key every message carries, on
//! Discord by the nonce Discord itself enforces, on GitHub by the comment's marker.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use futures::future::join_all;
use gatehouse_chat::{Body, DM_PREFIX, login_link_text};
use gatehouse_discord::DiscordError;
use gatehouse_slack::SlackError;
use gatehouse_store::ChatMessageRow;
use tokio_util::sync::CancellationToken;

use crate::Notifier;
use crate::notifier::CHAT_LEASE;
use crate::poster::Failure;
use gatehouse_outage::Outage;

/// How long the poster sleeps when nothing wakes it (messages another process wanted), and
/// after a failure.
const POLL: Duration = Duration::from_secs(1);
/// How far before the first try a found message may be (clock skew with the platform).
const FIND_SLACK: chrono::Duration = chrono::Duration::seconds(60);

impl Notifier {
    /// Posts dirty chat messages until `shutdown`.
    pub(crate) async fn post_chat(self, shutdown: CancellationToken) {
        // Conversations on GitHub issues post their messages here too.
        if !self.chat.any() && self.github.is_none() {
            return;
        }
        // Messages other services of this process want posted wake the poster at once;
        // those written by other processes wait for the poll.
        let mut wanted = self.store.watch_chat();
        // Each platform's outage, by its name, and when it may be tried again.
        let mut outages: BTreeMap<String, (Outage, Instant)> = BTreeMap::new();
        loop {
            if !self.may_post(CHAT_LEASE).await {
                // Another replica posts; this one stands by in case it stops.
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(POLL) => {}
                }
                continue;
            }
            let failed = match self.store.dirty_chat_messages(50).await {
                Ok(dirty) => {
                    // Channels are paced separately (Slack: one message a second each):
                    // each channel's messages go in order, the channels side by side, so a
                    // wait in one does not hold up a card in another.
                    // A platform that is down is left alone until its retry is due.
                    let now = Instant::now();
                    let mut by_channel: BTreeMap<(String, String), Vec<ChatMessageRow>> =
                        BTreeMap::new();
                    for message in dirty {
                        let resting = outages
                            .get(&message.platform)
                            .is_some_and(|(_, due)| *due > now);
                        if !resting {
                            by_channel
                                .entry((message.platform.clone(), message.channel.clone()))
                                .or_default()
                                .push(message);
                        }
                    }
                    let channels = by_channel.into_iter().map(|((platform, _), messages)| {
                        let posted = self.post_in_order(messages, &shutdown);
                        async move { (platform, posted.await) }
                    });
                    let mut failed = false;
                    for (platform, posted) in join_all(channels).await {
                        failed |= posted.failed;
                        let (outage, due) = outages
                            .entry(platform.clone())
                            .or_insert_with(|| (Outage::new(platform_name(&platform)), now));
                        let now = Instant::now();
                        if posted.reached {
                            Outage::log(&outage.answered(now));
                        }
                        if let Some(why) = posted.unreachable {
                            let (say, wait) = outage.failed(now, &why);
                            Outage::log(&say);
                            *due = now + wait;
                        }
                    }
                    if shutdown.is_cancelled() {
                        return;
                    }
                    failed
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reading chat messages to post failed");
                    true
                }
            };
            if !failed
                && self
                    .store
                    .dirty_chat_messages(1)
                    .await
                    .is_ok_and(|d| !d.is_empty())
            {
                continue;
            }
            // A platform that is down wakes the poster when its retry is due.
            let next_retry = outages
                .values()
                .map(|(_, due)| *due)
                .filter(|due| *due > Instant::now())
                .min()
                .map_or(POLL, |due| due - Instant::now())
                .min(POLL);
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = self.chat_wake.notified() => {}
                _ = wanted.changed() => {}
                () = tokio::time::sleep(next_retry) => {}
            }
        }
    }

    /// Posts one channel's messages in order, stopping at the first its platform does not
    /// answer.
    async fn post_in_order(
        &self,
        messages: Vec<ChatMessageRow>,
        shutdown: &CancellationToken,
    ) -> Posted {
        let mut posted = Posted::default();
        for message in messages {
            if shutdown.is_cancelled() {
                break;
            }
            if !self.may_post(CHAT_LEASE).await {
                posted.failed = true;
                return posted;
            }
            let result = self.post_chat_message(&message).await;
            let outcome = match &result {
                Ok(()) => "posted",
                Err(Failure::Refused(_)) => "refused",
                Err(Failure::Later(_)) => "retry",
                Err(Failure::Unreachable(_)) => "unreachable",
            };
            posted.reached |= !matches!(result, Err(Failure::Unreachable(_)));
            metrics::counter!("gatehouse_chat_messages_total", "platform" => message.platform.clone(), "outcome" => outcome)
                .increment(1);
            match result {
                Ok(()) => {}
                Err(Failure::Refused(e)) => {
                    tracing::error!(key = %message.key, platform = %message.platform, channel = %message.channel, error = %e, "chat refused a message; giving up on this version");
                    if let Err(e) = self
                        .store
                        .chat_abandoned(&message.key, &message.body_hash)
                        .await
                    {
                        tracing::warn!(error = %e, "recording an abandoned chat message failed");
                    }
                }
                Err(Failure::Later(e)) => {
                    tracing::warn!(key = %message.key, platform = %message.platform, channel = %message.channel, error = %e, "posting a chat message failed; retrying later");
                    posted.failed = true;
                }
                // The platform is down: the poster says so once, and waits for it.
                Err(Failure::Unreachable(why)) => {
                    posted.failed = true;
                    posted.unreachable = Some(why);
                    break;
                }
            }
        }
        posted
    }

    async fn post_chat_message(&self, m: &ChatMessageRow) -> Result<(), Failure> {
        let body: Body = serde_json::from_str(&m.body)
            .map_err(|e| Failure::Refused(format!("unreadable message body: {e}")))?;
        let id = match m.platform.as_str() {
            "slack" => self.post_slack(m, &body).await?,
            "discord" => self.post_discord(m, &body).await?,
            "github" => self.post_github(m, &body).await?,
            other => return Err(Failure::Refused(format!("unknown platform `{other}`"))),
        };
        self.store
            .chat_posted(&m.key, &id, &m.body_hash)
            .await
            .map_err(|e| Failure::Later(e.to_string()))
    }

    async fn post_slack(&self, m: &ChatMessageRow, body: &Body) -> Result<String, Failure> {
        let slack = self
            .chat
            .slack
            .as_ref()
            .ok_or_else(|| Failure::Refused("Slack is not configured".into()))?;
        let client = &slack.client;
        let message = match body {
            Body::Card(card) => gatehouse_slack::card_message(card),
            Body::Question(card) => gatehouse_slack::question_message(card),
            Body::Progress(progress) => gatehouse_slack::progress_message(progress),
            Body::Text { text } => gatehouse_slack::text_message(text),
            Body::LoginLink {
                person,
                scopes,
                ttl_secs,
            } => {
                // The channel is the person's user id: Slack posts in the app's direct
                // messages with them. There is no looking for an earlier try's message
                // (`conversations.history` does not take a user id), so a retry after a
                // failure before Slack answered may send a second message with a second
                // link; that is acceptable, as each works once and expires.
                let text = self.login_text(person, scopes, *ttl_secs).await?;
                self.store
                    .chat_first_try(&m.key)
                    .await
                    .map_err(|e| Failure::Later(e.to_string()))?;
                let message = gatehouse_slack::text_message(&text);
                return client
                    .post_message(&m.channel, None, &message, &m.key)
                    .await
                    .map_err(slack_failure);
            }
        };
        let thread = m.thread.as_deref();
        if let Some(user) = &m.recipient {
            client
                .post_ephemeral(&m.channel, user, thread, &message.text)
                .await
                .map_err(slack_failure)?;
            return Ok("ephemeral".into());
        }
        if let Some(ts) = &m.message_id {
            client
                .update_message(&m.channel, ts, &message)
                .await
                .map_err(slack_failure)?;
            return Ok(ts.clone());
        }
        if let Some(first) = m.first_try_at {
            let oldest = slack_ts(first - FIND_SLACK);
            let found = client
                .find_message(&m.channel, thread, &m.key, &oldest)
                .await
                .map_err(slack_failure)?;
            if let Some(ts) = found {
                tracing::info!(key = %m.key, %ts, "found a Slack message posted before a failure; editing it instead of posting again");
                client
                    .update_message(&m.channel, &ts, &message)
                    .await
                    .map_err(slack_failure)?;
                return Ok(ts);
            }
        }
        self.store
            .chat_first_try(&m.key)
            .await
            .map_err(|e| Failure::Later(e.to_string()))?;
        client
            .post_message(&m.channel, thread, &message, &m.key)
            .await
            .map_err(slack_failure)
    }

    async fn post_discord(&self, m: &ChatMessageRow, body: &Body) -> Result<String, Failure> {
        let discord = self
            .chat
            .discord
            .as_ref()
            .ok_or_else(|| Failure::Refused("Discord is not configured".into()))?;
        let client = &discord.client;
        if let Some(token) = &m.recipient {
            let text = match body {
                Body::Text { text } => text.clone(),
                _ => return Err(Failure::Refused("only text can be ephemeral".into())),
            };
            client
                .followup(token, &text, true)
                .await
                .map_err(discord_failure)?;
            return Ok("ephemeral".into());
        }
        let message = match body {
            Body::Card(card) => gatehouse_discord::card_message(card),
            Body::Question(card) => gatehouse_discord::question_message(card),
            Body::Progress(progress) => gatehouse_discord::progress_message(progress),
            Body::Text { text } => gatehouse_discord::text_message(text),
            Body::LoginLink {
                person,
                scopes,
                ttl_secs,
            } => {
                return self
                    .post_discord_login(client, m, person, scopes, *ttl_secs)
                    .await;
            }
        };
        if let Some(id) = &m.message_id {
            client
                .edit_message(&m.channel, id, &message)
                .await
                .map_err(discord_failure)?;
            return Ok(id.clone());
        }
        self.store
            .chat_first_try(&m.key)
            .await
            .map_err(|e| Failure::Later(e.to_string()))?;
        let id = client
            .create_message(&m.channel, m.thread.as_deref(), &message, &m.key)
            .await
            .map_err(discord_failure)?;
        // After an earlier try, Discord may answer with the message that try created, which
        // shows the body of then: bring it up to date.
        if m.first_try_at.is_some() {
            client
                .edit_message(&m.channel, &id, &message)
                .await
                .map_err(discord_failure)?;
        }
        Ok(id)
    }
}

impl Notifier {
    /// A sign-in link in the person's Discord direct messages (channel `dm:<user id>`):
    /// the channel is opened (Discord answers with the same one every time), then the
    /// message created with the key as its nonce. A retry after a failure before Discord
    /// answered mints a second link: Discord may answer with the earlier try's message,
    /// which is then edited to show the new one. The link it showed is never seen again and
    /// expires; acceptable, as each link works once.
    async fn post_discord_login(
        &self,
        client: &gatehouse_discord::DiscordClient,
        m: &ChatMessageRow,
        person: &str,
        scopes: &str,
        ttl_secs: u64,
    ) -> Result<String, Failure> {
        let user = m.channel.strip_prefix(DM_PREFIX).ok_or_else(|| {
            Failure::Refused(format!(
                "a sign-in link goes only to direct messages, not to channel `{}`",
                m.channel
            ))
        })?;
        let channel = client.dm_channel(user).await.map_err(discord_failure)?;
        let text = self.login_text(person, scopes, ttl_secs).await?;
        let message = gatehouse_discord::text_message(&text);
        self.store
            .chat_first_try(&m.key)
            .await
            .map_err(|e| Failure::Later(e.to_string()))?;
        let id = client
            .create_message(&channel, None, &message, &m.key)
            .await
            .map_err(discord_failure)?;
        if m.first_try_at.is_some() {
            client
                .edit_message(&channel, &id, &message)
                .await
                .map_err(discord_failure)?;
        }
        Ok(id)
    }

    /// Mints a sign-in link for `person` (the stored message has none: secrets are never
    /// kept in the clear) and says it; refused without `server.public_url`, where a link
    /// would lead nowhere.
    async fn login_text(
        &self,
        person: &str,
        scopes: &str,
        ttl_secs: u64,
    ) -> Result<String, Failure> {
        let url = self.public_url.as_deref().ok_or_else(|| {
            Failure::Refused(
                "server.public_url is not configured: a sign-in link would lead nowhere".into(),
            )
        })?;
        let expires_at = i64::try_from(ttl_secs)
            .ok()
            .and_then(chrono::TimeDelta::try_seconds)
            .and_then(|ttl| Utc::now().checked_add_signed(ttl))
            .ok_or_else(|| Failure::Refused(format!("a sign-in link cannot last {ttl_secs} s")))?;
        // The person asked for it themselves, in chat.
        let secret = self
            .store
            .mint_login_link(person, person, scopes, expires_at)
            .await
            .map_err(|e| Failure::Later(e.to_string()))?;
        Ok(login_link_text(url, &secret, ttl_secs))
    }
}

/// What posting one channel's messages came to.
#[derive(Default)]
struct Posted {
    /// Something must be tried again later.
    failed: bool,
    /// The platform answered at least once.
    reached: bool,
    /// The platform did not answer, and why.
    unreachable: Option<String>,
}

/// The platform as log lines name it.
fn platform_name(platform: &str) -> String {
    match platform {
        "slack" => "Slack API".to_owned(),
        "discord" => "Discord API".to_owned(),
        "github" => "GitHub API".to_owned(),
        other => other.to_owned(),
    }
}

/// A Slack timestamp (`seconds.micros`) for `at`.
fn slack_ts(at: DateTime<Utc>) -> String {
    format!("{}.{:06}", at.timestamp(), at.timestamp_subsec_micros())
}

fn slack_failure(e: SlackError) -> Failure {
    match e {
        SlackError::Unavailable(why) => Failure::Unreachable(why),
        _ => Failure::Refused(e.to_string()),
    }
}

fn discord_failure(e: DiscordError) -> Failure {
    match e {
        DiscordError::Unavailable(why) => Failure::Unreachable(why),
        _ => Failure::Refused(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_timestamps_have_microseconds() {
        let at = DateTime::parse_from_rfc3339("2026-11-30T14:02:09.000123Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(slack_ts(at), "1796047329.000123");
    }
}
