//! Discord: `POST /webhooks/discord/interactions` (Ed25519 over timestamp + body with the
//! application's `public_key`; PING → PONG) and the gateway's mentions and interactions
//! through [`DiscordSink`]. An interaction is answered within Discord's 3 seconds: a
//! dialog when the click needs one (send back, reject, deny an agent), else a deferred
//! update once the decision or answer is stored.

use async_trait::async_trait;
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use gatehouse_chat::{Control, QuestionVerb, Verb};
use gatehouse_discord::{
    GatewaySink, Interaction, Mention, deferred_update, deny_modal, ephemeral_reply,
    parse_interaction, pong, reject_modal, send_back_modal, verify_interaction,
};
use gatehouse_store::{DeliveryRow, Tx};
use serde_json::Value;

use super::Platform;
use super::click::{self, Click};
use super::question_click::{self, QuestionClick};
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
            let action = match c.custom_id.parse::<Control>() {
                Ok(Control::Gate(action)) => action,
                Ok(Control::Question(action)) if action.verb == QuestionVerb::Deny => {
                    // Said now rather than after a reason was typed for nothing.
                    if let Some(why) = question_click::closed(api, &action).await {
                        return Ok(ephemeral_reply(&format!(
                            "Cannot deny the agent's question: {why}."
                        )));
                    }
                    return Ok(deny_modal(&action));
                }
                Ok(Control::Question(_)) => {
                    let id = format!("interaction:{}", c.id);
                    deliveries::store(api, "discord", &id, "interaction", utf8(body)?).await?;
                    return Ok(deferred_update());
                }
                Err(_) => {
                    tracing::warn!(custom_id = %c.custom_id, user = %c.user, "unknown Discord component");
                    return Ok(unknown());
                }
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
            if m.custom_id.parse::<Control>().is_err() {
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
                Err(e) => {
                    return Ok(Outcome::ignored(format!(
                        "mention not understood, so nothing was done: {e}"
                    )));
                }
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
            // (control id, channel, token, user, comment) of a click or a submitted dialog.
            let clicked = match parse_interaction(delivery.body.as_bytes()) {
                Ok(Interaction::Component(c)) => {
                    Some((c.custom_id, c.channel_id, c.token, c.user, None))
                }
                Ok(Interaction::ModalSubmit(mut m)) => {
                    let comment = m.fields.remove("comment");
                    Some((m.custom_id, m.channel_id, m.token, m.user, comment))
                }
                _ => None,
            };
            let Some((id, channel, token, user, comment)) = clicked else {
                return Ok(Outcome::ignored(
                    "a button Gatehouse did not make, so nothing was done",
                ));
            };
            match id.parse::<Control>() {
                Ok(Control::Gate(action)) => {
                    let click = Click {
                        platform: Platform::Discord,
                        channel: channel.unwrap_or_default(),
                        recipient: token,
                        user,
                        action,
                        comment,
                    };
                    click::handle(api, tx, &delivery.delivery_id, &click).await
                }
                Ok(Control::Question(action)) => {
                    let click = QuestionClick {
                        platform: Platform::Discord,
                        channel: channel.unwrap_or_default(),
                        recipient: token,
                        user,
                        action,
                        comment,
                    };
                    question_click::handle(api, tx, &delivery.delivery_id, &click).await
                }
                Err(_) => Ok(Outcome::ignored(
                    "a button Gatehouse did not make, so nothing was done",
                )),
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
