//! `[slack]` and `[discord]` as written in the file; `settings/chat.rs` turns them into what
//! ingest and the notifier take.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::secret::Secret;

/// `[slack]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlackConfig {
    /// Web API root.
    #[serde(default = "default_slack_api")]
    pub api_url: String,
    /// Bot token (`xoxb-...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot_token: Option<Secret>,
    /// Signing secret for request verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_secret: Option<Secret>,
    /// Default channel for approval cards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals_channel: Option<String>,
    /// The SOP that free-text requests start, by channel id (`"*"`: every other channel).
    #[serde(default)]
    pub channel_sops: BTreeMap<String, String>,
    /// Largest request body accepted; larger is refused with 413.
    #[serde(default = "default_chat_body_bytes")]
    pub max_body_bytes: usize,
}

/// Slack's and Discord's requests (events, clicks, dialog submissions) are a few KiB;
/// even a message with the most blocks Slack allows stays well under 1 MiB.
fn default_chat_body_bytes() -> usize {
    1024 * 1024
}

fn default_slack_api() -> String {
    "https://slack.com/api".into()
}

/// `[discord]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscordConfig {
    /// REST API root.
    #[serde(default = "default_discord_api")]
    pub api_url: String,
    /// Bot token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bot_token: Option<Secret>,
    /// Application id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_id: Option<String>,
    /// Ed25519 public key (hex) for interaction signatures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    /// Default channel for approval cards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals_channel: Option<String>,
    /// The SOP that free-text requests start, by channel id (`"*"`: every other channel).
    #[serde(default)]
    pub channel_sops: BTreeMap<String, String>,
    /// Connect to the gateway for mentions (and clicks, when no interactions endpoint is
    /// set in the developer portal). Needs the bot token.
    #[serde(default = "default_true")]
    pub gateway: bool,
    /// Largest request body accepted; larger is refused with 413.
    #[serde(default = "default_chat_body_bytes")]
    pub max_body_bytes: usize,
}

fn default_true() -> bool {
    true
}

fn default_discord_api() -> String {
    "https://discord.com/api/v10".into()
}
