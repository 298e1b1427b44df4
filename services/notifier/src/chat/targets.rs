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
    /// `slack`, `discord`, or `github` for an issue's conversation.
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
        places.retain(|p| self.configured(p.platform));
        // The thread was found where it is posted to (`thread_of`, an issue's conversation).
        places.extend(thread.cloned());
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
    /// The comments of GitHub issue `number` of `repo`, where its conversation is.
    pub(crate) fn issue(repo: &str, number: &str) -> Self {
        Self::new("github", repo.to_owned(), Some(number.to_owned()))
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::SecretString;

    fn outputs(slack: bool, discord: bool) -> ChatOutputs {
        ChatOutputs {
            slack: slack.then(|| SlackOutput {
                client: SlackClient::new("http://127.0.0.1:9/api", SecretString::from("x"))
                    .unwrap(),
                approvals_channel: Some("C0APPROVALS".into()),
            }),
            discord: discord.then(|| DiscordOutput {
                client: DiscordClient::new(
                    "http://127.0.0.1:9/api/v10",
                    SecretString::from("x"),
                    "1100000000000000001",
                )
                .unwrap(),
                approvals_channel: Some("900".into()),
            }),
        }
    }

    fn keys(places: &[Place]) -> Vec<String> {
        places.iter().map(Place::key).collect()
    }

    #[test]
    fn gates_without_channels_use_each_platforms_approvals_channel() {
        let thread = Place::new("slack", "C0REQ".into(), Some("1.2".into()));
        assert_eq!(
            keys(&outputs(true, true).card_places(&[], Some(&thread))),
            ["discord:900:-", "slack:C0APPROVALS:-", "slack:C0REQ:1.2"]
        );
        assert_eq!(
            keys(&outputs(true, false).card_places(&[], None)),
            ["slack:C0APPROVALS:-"]
        );
    }

    #[test]
    fn gate_channels_name_their_platform_or_are_told_apart_by_shape() {
        let named = [
            "slack:C1".to_owned(),
            "discord:42".into(),
            "C2".into(),
            "4343".into(),
            // Twice is once.
            "slack:C1".into(),
        ];
        assert_eq!(
            keys(&outputs(true, true).card_places(&named, None)),
            ["discord:42:-", "discord:4343:-", "slack:C1:-", "slack:C2:-"]
        );
        // Places on a platform that is not configured are left out.
        assert_eq!(
            keys(&outputs(false, true).card_places(&named, None)),
            ["discord:42:-", "discord:4343:-"]
        );
    }

    #[test]
    fn threads_come_from_chat_requirements_only() {
        let o = outputs(true, false);
        let slack = RequirementSource::Slack {
            channel: "C0REQ".into(),
            thread_ts: "1.2".into(),
        };
        assert_eq!(o.thread_of(&slack).unwrap().key(), "slack:C0REQ:1.2");
        let discord = RequirementSource::Discord {
            channel: "77".into(),
            message_id: "88".into(),
        };
        assert_eq!(o.thread_of(&discord), None, "Discord is not configured");
        let github = RequirementSource::Github {
            repo: "a/b".into(),
            number: 1,
            pull_request: false,
        };
        assert_eq!(o.thread_of(&github), None);
    }
}
