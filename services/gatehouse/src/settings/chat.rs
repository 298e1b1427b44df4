//! `[slack]` and `[discord]` (their file shape is `config/chat.rs`) turned into what ingest
//! and the notifier use.

use anyhow::Context;
use gatehouse_fleet::DiscordGateway;
use gatehouse_ingest::{ChatSettings, DiscordSettings, SlackSettings};
use gatehouse_notifier::{ChatOutputs, DiscordOutput, SlackOutput};
use secrecy::ExposeSecret;

use crate::config::Config;

/// The Slack Web API client `[slack]` asks for (with a bot token), made once: ingest and the
/// notifier share it, and with it its per-channel pacing.
pub fn slack_client(config: &Config) -> anyhow::Result<Option<gatehouse_slack::SlackClient>> {
    let Some(slack) = &config.slack else {
        return Ok(None);
    };
    let Some(token) = &slack.bot_token else {
        return Ok(None);
    };
    let token = token.resolve().context("slack.bot_token")?;
    Ok(Some(
        gatehouse_slack::SlackClient::new(&slack.api_url, token).context("[slack]")?,
    ))
}

/// What ingest needs: signing secrets, the public key, channel SOPs (each one checked to
/// exist by [`super::check::refusals`]). A platform without its secret is left out with a
/// warning (every request would be refused anyway).
pub fn settings(
    config: &Config,
    slack_client: Option<&gatehouse_slack::SlackClient>,
) -> anyhow::Result<ChatSettings> {
    let mut chat = ChatSettings::default();
    if let Some(slack) = &config.slack {
        match &slack.signing_secret {
            Some(secret) => {
                let secret = secret.resolve().context("slack.signing_secret")?;
                chat.slack = Some(SlackSettings {
                    signing_secret: secret.expose_secret().as_bytes().to_vec(),
                    client: slack_client.cloned(),
                    channel_sops: slack.channel_sops.clone(),
                    max_body_bytes: slack.max_body_bytes,
                });
            }
            None => {
                tracing::warn!("[slack] has no signing_secret: Slack requests are not accepted")
            }
        }
    }
    if let Some(discord) = &config.discord {
        match &discord.public_key {
            Some(key) => {
                chat.discord = Some(DiscordSettings {
                    public_key: gatehouse_discord::PublicKey::from_hex(key)
                        .context("discord.public_key")?,
                    channel_sops: discord.channel_sops.clone(),
                    max_body_bytes: discord.max_body_bytes,
                });
            }
            None => tracing::warn!(
                "[discord] has no public_key: the interactions endpoint refuses every request"
            ),
        }
    }
    Ok(chat)
}

/// Where the notifier posts: each platform with a bot token.
pub fn outputs(
    config: &Config,
    slack_client: Option<gatehouse_slack::SlackClient>,
) -> anyhow::Result<ChatOutputs> {
    let mut outputs = ChatOutputs::default();
    if let (Some(slack), Some(client)) = (&config.slack, slack_client) {
        outputs.slack = Some(SlackOutput {
            client,
            approvals_channel: slack.approvals_channel.clone(),
        });
    }
    if let Some(discord) = &config.discord
        && let Some(token) = &discord.bot_token
    {
        let token = token.resolve().context("discord.bot_token")?;
        let application_id = discord
            .application_id
            .as_deref()
            .context("discord.application_id is needed with a bot token (for answers to clicks)")?;
        let client = gatehouse_discord::DiscordClient::new(&discord.api_url, token, application_id)
            .context("[discord]")?;
        outputs.discord = Some(DiscordOutput {
            client,
            approvals_channel: discord.approvals_channel.clone(),
        });
    }
    Ok(outputs)
}

/// The Discord gateway connection `[discord]` asks for: a bot token, with `gateway` on.
pub fn discord_gateway(config: &Config) -> anyhow::Result<Option<DiscordGateway>> {
    let Some(discord) = &config.discord else {
        return Ok(None);
    };
    let Some(token) = &discord.bot_token else {
        return Ok(None);
    };
    if !discord.gateway {
        return Ok(None);
    }
    Ok(Some(DiscordGateway {
        token: token.resolve().context("discord.bot_token")?,
        api_url: discord.api_url.clone(),
    }))
}
