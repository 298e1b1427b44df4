//! `[slack]` and `[discord]` as ingest uses them.

use std::collections::BTreeMap;

use gatehouse_discord::PublicKey;
use gatehouse_slack::SlackClient;

/// Chat platforms Gatehouse listens to; either may be absent.
#[derive(Clone, Default)]
pub struct ChatSettings {
    /// Slack, when `[slack]` is configured.
    pub slack: Option<SlackSettings>,
    /// Discord, when `[discord]` is configured.
    pub discord: Option<DiscordSettings>,
}

impl ChatSettings {
    /// The SOP free-text requests in `channel` start: the channel's own, else `*`'s.
    pub(crate) fn channel_sop(&self, platform: super::Platform, channel: &str) -> Option<&str> {
        let sops = match platform {
            super::Platform::Slack => &self.slack.as_ref()?.channel_sops,
            super::Platform::Discord => &self.discord.as_ref()?.channel_sops,
            // An issue's conversation was opened by its trigger; no channel starts SOPs.
            super::Platform::Github => return None,
        };
        sops.get(channel)
            .or_else(|| sops.get("*"))
            .map(String::as_str)
    }
}

/// What ingest needs from `[slack]`.
#[derive(Clone)]
pub struct SlackSettings {
    /// Signs every request Slack sends.
    pub signing_secret: Vec<u8>,
    /// For what must happen within Slack's 3 seconds (opening the send-back dialog) and
    /// answers to clicks that cannot be stored (unknown buttons); none: those are skipped.
    pub client: Option<SlackClient>,
    /// The SOP a channel's free-text requests start, by channel id.
    pub channel_sops: BTreeMap<String, String>,
    /// Largest request body accepted.
    pub max_body_bytes: usize,
}

/// What ingest needs from `[discord]`.
#[derive(Clone)]
pub struct DiscordSettings {
    /// Verifies interaction requests (`public_key`).
    pub public_key: PublicKey,
    /// The SOP a channel's free-text requests start, by channel id.
    pub channel_sops: BTreeMap<String, String>,
    /// Largest request body accepted.
    pub max_body_bytes: usize,
}
