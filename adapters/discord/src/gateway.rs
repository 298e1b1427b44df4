//! The gateway: a websocket on which Discord delivers messages that mention the bot (there is
//! no webhook for those) and, for applications without an interactions endpoint URL, the
//! interactions too. serenity keeps the connection (heartbeats, resumes, reconnects); this
//! module only turns its events into [`Mention`]s and raw interaction bodies for a
//! [`GatewaySink`].

use std::future::Future;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serenity::all::{
    ClientBuilder, Context, EventHandler, GatewayIntents, Interaction, Message, Ready,
};

use crate::client::http_for;
use crate::error::DiscordError;

/// A message that mentions the bot: a request for Gatehouse (`@gatehouse run bug-fix on …`).
/// Serialisable, so ingest can store it as it stores webhook bodies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mention {
    /// The message, for replies and de-duplication.
    pub message_id: String,
    /// Where it was said; replies go there.
    pub channel_id: String,
    /// The server, absent in direct messages.
    pub guild_id: Option<String>,
    /// Who said it (a Discord user id).
    pub author: String,
    /// What was said, without the mention of the bot, trimmed.
    pub text: String,
    /// The message this one replies to, when it is a reply.
    pub reply_to: Option<String>,
}

/// A mention of the bot in a `MESSAGE_CREATE` event's `d` object, or `None` for any other
/// message. A reply to the bot's message notifies it without a `<@id>` in the text, so
/// mentions are read from the `mentions` list, not from the content. Bots and webhooks are
/// ignored: Gatehouse answers people, and must never answer itself.
pub fn mention_from_message(message: &Value, bot_user_id: &str) -> Option<Mention> {
    let author = &message["author"];
    if author["bot"].as_bool() == Some(true) || message["webhook_id"].is_string() {
        return None;
    }
    let mentioned = message["mentions"]
        .as_array()?
        .iter()
        .any(|user| user["id"].as_str() == Some(bot_user_id));
    if !mentioned {
        return None;
    }
    let text = message["content"]
        .as_str()
        .unwrap_or_default()
        .replace(&format!("<@{bot_user_id}>"), "")
        .replace(&format!("<@!{bot_user_id}>"), "");
    Some(Mention {
        message_id: message["id"].as_str()?.to_owned(),
        channel_id: message["channel_id"].as_str()?.to_owned(),
        guild_id: message["guild_id"].as_str().map(str::to_owned),
        author: author["id"].as_str()?.to_owned(),
        text: text.trim().to_owned(),
        reply_to: message["message_reference"]["message_id"]
            .as_str()
            .map(str::to_owned),
    })
}

/// Where the gateway delivers what it receives: ingest, which records and normalises it.
#[async_trait]
pub trait GatewaySink: Send + Sync {
    /// Someone mentioned the bot.
    async fn mention(&self, mention: Mention);
    /// An interaction arrived (the same JSON as over HTTP, for [`crate::parse_interaction`]);
    /// the returned body is sent as its response. Discord waits three seconds for it.
    async fn interaction(&self, body: Vec<u8>) -> Option<Value>;
}

/// The events Gatehouse subscribes to:
///
/// - `GUILD_MESSAGES`: messages in server channels, where people mention the bot;
/// - `DIRECT_MESSAGES`: messages sent to the bot directly;
/// - `MESSAGE_CONTENT`: the text of those messages. Discord leaves `content` empty without
///   it except for messages it counts as mentioning the app; asking for it keeps replies to
///   the bot's messages readable however Discord counts them. It is a *privileged* intent:
///   enable "Message Content Intent" under Bot → Privileged Gateway Intents in the developer
///   portal, or Discord closes the connection (4014, disallowed intents).
///
/// Interactions need no intent.
fn intents() -> GatewayIntents {
    GatewayIntents::GUILD_MESSAGES
        | GatewayIntents::DIRECT_MESSAGES
        | GatewayIntents::MESSAGE_CONTENT
}

/// Connects to the gateway and delivers to `sink` until `shutdown` resolves (then closes the
/// connection cleanly) or the connection fails for good (a bad token, disallowed intents).
/// REST calls, including the gateway URL lookup and interaction responses, go to `api_url`
/// by the rules on [`crate::DiscordClient::new`].
pub async fn run_gateway(
    token: SecretString,
    api_url: &str,
    sink: Arc<dyn GatewaySink>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), DiscordError> {
    let http = http_for(api_url, token.expose_secret(), None)?;
    let handler = Handler {
        sink,
        bot: OnceLock::new(),
    };
    let mut client = ClientBuilder::new_with_http(http, intents())
        .event_handler(handler)
        .await
        .map_err(|e| DiscordError::Setup(format!("the gateway client: {e}")))?;
    let shards = client.shard_manager.clone();
    tokio::select! {
        ended = client.start() => ended.map_err(|e| DiscordError::Unavailable(format!("the gateway: {e}"))),
        () = shutdown => {
            shards.shutdown_all().await;
            Ok(())
        }
    }
}

struct Handler {
    sink: Arc<dyn GatewaySink>,
    /// The bot's own user id, from `READY`: mentions are recognised by it.
    bot: OnceLock<String>,
}

#[async_trait]
impl EventHandler for Handler {
    async fn ready(&self, _ctx: Context, ready: Ready) {
        tracing::info!(bot = %ready.user.id, name = %ready.user.name, "connected to the Discord gateway");
        let _ = self.bot.set(ready.user.id.to_string());
    }

    async fn message(&self, _ctx: Context, message: Message) {
        let Some(bot) = self.bot.get() else {
            return;
        };
        match serde_json::to_value(&message) {
            Ok(value) => {
                if let Some(mention) = mention_from_message(&value, bot) {
                    self.sink.mention(mention).await;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, message = %message.id, "could not read a Discord message")
            }
        }
    }

    async fn interaction_create(&self, ctx: Context, interaction: Interaction) {
        let body = match interaction_body(&interaction) {
            Ok(body) => body,
            Err(e) => {
                tracing::warn!(error = %e, interaction = %interaction.id(), "could not read a Discord interaction");
                return;
            }
        };
        let Some(answer) = self.sink.interaction(body).await else {
            return;
        };
        if let Err(e) = ctx
            .http
            .create_interaction_response(interaction.id(), interaction.token(), &answer, vec![])
            .await
        {
            tracing::warn!(error = %e, interaction = %interaction.id(), "could not answer a Discord interaction");
        }
    }
}

/// The interaction as Discord sent it, near enough for [`crate::parse_interaction`]:
/// serenity's model serialises back without the `type` field (it is the enum's tag), so it
/// is put back.
fn interaction_body(interaction: &Interaction) -> Result<Vec<u8>, serde_json::Error> {
    let mut value = serde_json::to_value(interaction)?;
    if let Some(object) = value.as_object_mut() {
        object.insert("type".into(), u8::from(interaction.kind()).into());
    }
    serde_json::to_vec(&value)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::interactions::{Component, Interaction as Parsed, parse_interaction};

    const REPLY: &str = include_str!(
        "../../../tests/fixtures/discord/gateway.message_create.reply_mentions_bot.json"
    );
    const PLAIN: &str =
        include_str!("../../../tests/fixtures/discord/gateway.message_create.plain.json");
    const COMMAND: &str = include_str!(
        "../../../tests/fixtures/discord/gateway.interaction_create.application_command.json"
    );
    const COMPONENT: &str = include_str!(
        "../../../tests/fixtures/discord/interaction.message_component.discord-docs.json"
    );
    const BOT: &str = "344487830824943618";

    fn d(event: &str) -> Value {
        serde_json::from_str::<Value>(event).unwrap()["d"].clone()
    }

    fn reply_mention() -> Mention {
        Mention {
            message_id: "779520963116400721".into(),
            channel_id: "563557393640849437".into(),
            guild_id: Some("185949590652977152".into()),
            author: "134127815531560960".into(),
            text: "cool.".into(),
            reply_to: Some("775214933398782002".into()),
        }
    }

    #[test]
    fn a_reply_ping_is_a_mention() {
        assert_eq!(mention_from_message(&d(REPLY), BOT), Some(reply_mention()));
    }

    #[test]
    fn other_messages_are_not() {
        assert_eq!(mention_from_message(&d(PLAIN), BOT), None);
        assert_eq!(mention_from_message(&d(REPLY), "1"), None);
        let mut from_a_bot = d(REPLY);
        from_a_bot["author"]["bot"] = json!(true);
        assert_eq!(mention_from_message(&from_a_bot, BOT), None);
        let mut from_a_webhook = d(REPLY);
        from_a_webhook["webhook_id"] = json!("1234");
        assert_eq!(mention_from_message(&from_a_webhook, BOT), None);
    }

    #[test]
    fn the_mention_token_is_removed() {
        let mut message = d(PLAIN);
        message["content"] = json!(format!("<@{BOT}> run bug-fix on acme/api#42 <@!{BOT}> "));
        message["mentions"] = json!([{"id": BOT, "username": "Reacton", "bot": true}]);
        let mention = mention_from_message(&message, BOT).unwrap();
        assert_eq!(mention.text, "run bug-fix on acme/api#42");
        assert_eq!(mention.reply_to, None);
        assert_eq!(mention.author, "562268917771413264");
    }

    /// The live path: serenity parses the event, and its model serialised back still reads.
    #[test]
    fn serenitys_message_reads_the_same() {
        let message: Message = serde_json::from_value(d(REPLY)).unwrap();
        let value = serde_json::to_value(&message).unwrap();
        assert_eq!(mention_from_message(&value, BOT), Some(reply_mention()));
    }

    #[test]
    fn serenitys_interactions_read_the_same() {
        // The capture predates fields serenity requires and Discord now always sends.
        let mut command = d(COMMAND);
        command["data"]["type"] = json!(1);
        command["locale"] = json!("en-US");
        command["entitlements"] = json!([]);
        command["attachment_size_limit"] = json!(10_485_760);
        let command: Interaction = serde_json::from_value(command).unwrap();
        assert_eq!(
            parse_interaction(&interaction_body(&command).unwrap()).unwrap(),
            Parsed::Other {
                kind: 2,
                id: "817819131540668417".into(),
                token: "hunter2".into()
            }
        );

        let mut click: Value = serde_json::from_str(COMPONENT).unwrap();
        click["locale"] = json!("en-US");
        click["entitlements"] = json!([]);
        click["attachment_size_limit"] = json!(10_485_760);
        click["member"]["flags"] = json!(0);
        let click: Interaction = serde_json::from_value(click).unwrap();
        let Parsed::Component(component) =
            parse_interaction(&interaction_body(&click).unwrap()).unwrap()
        else {
            panic!("not a component");
        };
        assert_eq!(
            component,
            Component {
                id: "846462639134605312".into(),
                application_id: "290926444748734465".into(),
                token: "unique_interaction_token".into(),
                custom_id: "click_one".into(),
                component_type: 2,
                values: vec![],
                user: "53908232506183680".into(),
                channel_id: Some("345626669114982999".into()),
                message_id: Some("844397162624450620".into()),
                guild_id: Some("290926798626357999".into()),
            }
        );
    }
}
