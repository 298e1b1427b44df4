//! Slack and Discord: mentions become commands or requirements, card clicks become gate
//! decisions or answers to agents' questions. Requests are verified and stored before they are answered (Slack and Discord
//! both want an answer within 3 seconds); the work happens in
//! [`process_deliveries`](crate::process_deliveries), like GitHub's.

mod click;
mod conversation;
mod discord;
mod login;
mod mention;
mod question_click;
mod requirement;
mod settings;
mod slack;

pub use conversation::Assistant;
pub(crate) use conversation::{Heard, Saying, hear, open_in};
pub use discord::DiscordSink;
pub(crate) use discord::{interactions as discord_interactions, process as process_discord};
pub(crate) use mention::for_the_assistant;
pub use settings::{ChatSettings, DiscordSettings, SlackSettings};
pub(crate) use slack::{
    events as slack_events, interactions as slack_interactions, process as process_slack,
};

use gatehouse_events::Channel;

/// Which chat a message or click came from. A conversation on a GitHub issue is a
/// thread too: its channel is the repository, its thread the number, and the
/// notifier posts its messages as comments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Platform {
    Slack,
    Discord,
    Github,
}

impl Platform {
    /// The name stored with chat messages and requirement keys.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Platform::Slack => "slack",
            Platform::Discord => "discord",
            Platform::Github => "github",
        }
    }

    /// The audit channel.
    pub(crate) fn channel(self) -> Channel {
        match self {
            Platform::Slack => Channel::Slack,
            Platform::Discord => Channel::Discord,
            Platform::Github => Channel::Github,
        }
    }
}

/// A message addressed to the bot, from either platform.
pub(crate) struct ChatMention {
    pub platform: Platform,
    /// Channel id.
    pub channel: String,
    /// The conversation it belongs to: Slack's thread root ts; on Discord the message it
    /// replies to, or itself. The requirement of a thread is keyed by it.
    pub root: String,
    /// Where the answer goes: Slack's thread ts; on Discord the message to reply to.
    pub reply_to: String,
    /// The author's platform id.
    pub user: String,
    /// The text, without the bot's mention.
    pub text: String,
    /// Written to the bot directly (a Slack DM, a Discord message outside any server).
    pub direct: bool,
}
