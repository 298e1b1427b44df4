//! Discord: `POST /webhooks/discord/interactions` (Ed25519 over timestamp + body with the
//! application's `public_key`; PING → PONG) and the gateway's mentions and interactions
//! through [`DiscordSink`]. An interaction is answered within Discord's 3 seconds: a
//! dialog when the click needs one, else a deferred update once the decision is stored.

use async_trait::async_trait;
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use gatehouse_chat::{CardAction, Verb};
use gatehouse_discord::{
    GatewaySink, Interaction, Mention, deferred_update, ephemeral_reply, parse_interaction, pong,
    reject_modal, send_back_modal, verify_interaction,
};
use gatehouse_store::{DeliveryRow, Tx};
use serde_json::Value;

use super::Platform;
use super::click::{self, Click};
use super::{ChatMention, mention};
use crate::intake::deliveries::{self, Outcome, utf8};
use crate::{ApiError, ApiState};

/// Interactions over HTTP: 401 for a bad signature, 400 for a malformed body.
pub(crate) async fn interactions(
    State(api): State<ApiState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let Some(discord) = api.chat.discord.as_ref() else {
        return Err(ApiError::NotFound(
            "Discord is not configured ([discord])".into(),
        ));
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    verify_interaction(
        &discord.public_key,
        header("x-signature-ed25519"),
        header("x-signature-timestamp"),
        &body,
        chrono::Utc::now().timestamp(),
    )
    .map_err(|why| {
        metrics::counter!("gatehouse_webhook_rejected_total", "source" => "discord", "reason" => "signature")
            .increment(1);
        tracing::warn!(reason = %why, "Discord interaction refused");
        ApiError::Unauthorized(why.to_string())
    })?;
    Ok(Json(answer(&api, &body).await?))
}

/// The answer to an interaction, from the HTTP endpoint or the gateway.
pub(crate) async fn answer(api: &ApiState, body: &[u8]) -> Result<Value, ApiError> {
    let interaction = parse_interaction(body)
        .map_err(|e| ApiError::BadRequest(format!("malformed Discord interaction: {e}")))?;
    let unknown =
        || ephemeral_reply("That control is not one Gatehouse knows; nothing was changed.");
    match interaction {
        Interaction::Ping => Ok(pong()),
        Interaction::Component(c) => {
            let Ok(action) = c.custom_id.parse::<CardAction>() else {
                tracing::warn!(custom_id = %c.custom_id, user = %c.user, "unknown Discord component");
                return Ok(unknown());
            };
            match (action.verb, c.values.first()) {
                (Verb::Approve, _) => {
                    let id = format!("interaction:{}", c.id);
                    deliveries::store(api, "discord", &id, "interaction", utf8(body)?).await?;
                    Ok(deferred_update())
                }
                (Verb::Reject, _) => Ok(reject_modal(&action)),
                (Verb::SendBack, Some(target)) => Ok(send_back_modal(&action.with_target(target))),
                (Verb::SendBack, None) => {
                    Ok(ephemeral_reply("Choose the node to send the work back to."))
                }
            }
        }
        Interaction::ModalSubmit(m) => {
            if m.custom_id.parse::<CardAction>().is_err() {
                return Ok(unknown());
            }
            let id = format!("interaction:{}", m.id);
            deliveries::store(api, "discord", &id, "interaction", utf8(body)?).await?;
            Ok(deferred_update())
        }
        Interaction::Other { .. } => Ok(ephemeral_reply(
            "Gatehouse answers mentions: write `@Gatehouse help`.",
        )),
    }
}

/// What a stored Discord mention or interaction comes to, written into `tx`.
pub(crate) async fn process(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &DeliveryRow,
) -> Result<Outcome, ApiError> {
    match delivery.event.as_str() {
        "mention" => {
            let m: Mention = match serde_json::from_str(&delivery.body) {
                Ok(m) => m,
                Err(e) => return Ok(Outcome::ignored(format!("unreadable mention: {e}"))),
            };
            let mention = ChatMention {
                platform: Platform::Discord,
                root: m.reply_to.clone().unwrap_or_else(|| m.message_id.clone()),
                reply_to: m.message_id,
                direct: m.guild_id.is_none(),
                channel: m.channel_id,
                user: m.author,
                text: m.text,
            };
            mention::answer(api, tx, &delivery.delivery_id, &mention).await
        }
        "interaction" => {
            let click = match parse_interaction(delivery.body.as_bytes()) {
                Ok(Interaction::Component(c)) => c.custom_id.parse().ok().map(|action| Click {
                    platform: Platform::Discord,
                    channel: c.channel_id.unwrap_or_default(),
                    recipient: c.token,
                    user: c.user,
                    action,
                    comment: None,
                }),
                Ok(Interaction::ModalSubmit(mut m)) => {
                    m.custom_id.parse().ok().map(|action| Click {
                        platform: Platform::Discord,
                        channel: m.channel_id.unwrap_or_default(),
                        recipient: m.token,
                        user: m.user,
                        action,
                        comment: m.fields.remove("comment"),
                    })
                }
                _ => None,
            };
            match click {
                Some(click) => click::handle(api, tx, &delivery.delivery_id, &click).await,
                None => Ok(Outcome::ignored("not a Gatehouse control")),
            }
        }
        other => Ok(Outcome::ignored(format!("unknown Discord event `{other}`"))),
    }
}

/// Takes the gateway's mentions and interactions into ingest: mentions are stored like
/// webhooks (the message id dedupes a gateway resume that replays them); interactions get
/// the same answer as over HTTP.
#[derive(Clone)]
pub struct DiscordSink {
    api: ApiState,
}

impl DiscordSink {
    /// A sink into `api`'s store and delivery processor.
    pub fn new(api: ApiState) -> Self {
        Self { api }
    }
}

#[async_trait]
impl GatewaySink for DiscordSink {
    async fn mention(&self, m: Mention) {
        let id = format!("message:{}", m.message_id);
        let result = match serde_json::to_string(&m) {
            Ok(body) => deliveries::store(&self.api, "discord", &id, "mention", &body)
                .await
                .map(|_| ()),
            Err(e) => Err(e.into()),
        };
        if let Err(e) = result {
            tracing::error!(message = %id, error = %e, "storing a Discord mention failed; it is lost");
        }
    }

    async fn interaction(&self, body: Vec<u8>) -> Option<Value> {
        match answer(&self.api, &body).await {
            Ok(answer) => Some(answer),
            Err(e) => {
                tracing::error!(error = %e, "a Discord interaction from the gateway failed");
                None
            }
        }
    }
}
