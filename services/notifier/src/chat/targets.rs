//! Where chat messages go: the configured platforms and their default approvals channels.

use gatehouse_discord::DiscordClient;
use gatehouse_events::RequirementSource;
use gatehouse_slack::SlackClient;

/// The chat platforms the notifier posts to; either may be absent.
#[derive(Clone, Default)]
pub struct ChatOutputs {
    /// Slack, when `[slack]` has a bot token.
    pub slack: Option<SlackOutput>,
    /// Discord, when `[discord]` has a bot token.
    pub discord: Option<DiscordOutput>,
}

/// Posting to Slack.
#[derive(Clone)]
pub struct SlackOutput {
    /// The Web API client.
    pub client: SlackClient,
    /// Where cards go when a gate names no channels (`approvals_channel`).
    pub approvals_channel: Option<String>,
}

/// Posting to Discord.
#[derive(Clone)]
pub struct DiscordOutput {
    /// The REST client.
    pub client: DiscordClient,
    /// Where cards go when a gate names no channels (`approvals_channel`).
    pub approvals_channel: Option<String>,
}

/// A place a message goes: platform, channel and thread.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Place {
    /// `slack` or `discord`.
    pub platform: &'static str,
    /// Channel id.
    pub channel: String,
    /// Slack thread ts, or the Discord message to reply to.
    pub thread: Option<String>,
}

impl ChatOutputs {
    /// Whether any platform is configured.
    pub(crate) fn any(&self) -> bool {
        self.slack.is_some() || self.discord.is_some()
    }

    /// Where a gate's cards go: the channels it names (`slack:C…`, `discord:…`, or bare:
    /// all digits is Discord, else Slack), else each platform's approvals channel; and the
    /// requirement's own thread. Places on platforms not configured are left out.
    pub(crate) fn card_places(
        &self,
        gate_channels: &[String],
        thread: Option<&Place>,
    ) -> Vec<Place> {
        let mut places = Vec::new();
        if gate_channels.is_empty() {
            if let Some(channel) = self
                .slack
                .as_ref()
                .and_then(|s| s.approvals_channel.clone())
            {
                places.push(Place::new("slack", channel, None));
            }
            if let Some(channel) = self
                .discord
                .as_ref()
                .and_then(|d| d.approvals_channel.clone())
            {
                places.push(Place::new("discord", channel, None));
            }
        }
        for named in gate_channels {
            let (platform, channel) = match named.split_once(':') {
                Some(("slack", c)) => ("slack", c),
                Some(("discord", c)) => ("discord", c),
                _ if named.chars().all(|c| c.is_ascii_digit()) => ("discord", named.as_str()),
                _ => ("slack", named.as_str()),
            };
            places.push(Place::new(platform, channel.to_owned(), None));
        }
        places.extend(thread.cloned());
        places.retain(|p| self.configured(p.platform));
        places.sort();
        places.dedup();
        places
    }

    /// The requirement's thread, when it came from a configured chat.
    pub(crate) fn thread_of(&self, source: &RequirementSource) -> Option<Place> {
        let place = match source {
            RequirementSource::Slack { channel, thread_ts } => {
                Place::new("slack", channel.clone(), Some(thread_ts.clone()))
            }
            RequirementSource::Discord {
                channel,
                message_id,
            } => Place::new("discord", channel.clone(), Some(message_id.clone())),
            _ => return None,
        };
        self.configured(place.platform).then_some(place)
    }

    fn configured(&self, platform: &str) -> bool {
        match platform {
            "slack" => self.slack.is_some(),
            "discord" => self.discord.is_some(),
            _ => false,
        }
    }
}

impl Place {
    fn new(platform: &'static str, channel: String, thread: Option<String>) -> Self {
        Self {
            platform,
            channel,
            thread,
        }
    }

    /// The part of a message key that names the place.
    pub(crate) fn key(&self) -> String {
        format!(
            "{}:{}:{}",
            self.platform,
            self.channel,
            self.thread.as_deref().unwrap_or("-")
        )
    }
}
