//! `POST /webhooks/slack/events` and `POST /webhooks/slack/interactions`: the signature
//! first (v0, with a 5-minute replay window), then the request is stored and answered —
//! Slack wants a 2xx within 3 seconds and retries otherwise (`X-Slack-Retry-Num`, same
//! `event_id`, stored once). The work happens in [`process`].

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use gatehouse_chat::{CardAction, Control, QuestionAction, QuestionVerb, Verb};
use gatehouse_slack::{
    BlockAction, CallbackEvent, EventsRequest, Interaction, SlackClient, deny_modal, parse_events,
    parse_interaction, send_back_modal, verify_request,
};
use gatehouse_store::{DeliveryRow, Tx};
use serde_json::json;
use tracing::Instrument;

use super::Platform;
use super::click::{self, Click};
use super::question_click::{self, QuestionClick};
use super::{ChatMention, mention};
use crate::intake::deliveries::{self, Outcome, utf8};
use crate::{ApiError, ApiState};

/// Events API: `url_verification` is answered with its challenge; event callbacks are
/// stored under their `event_id` and answered 200 (a retry of one already stored too).
pub(crate) async fn events(
    State(api): State<ApiState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    verified(&api, &headers, &body)?;
    let request = parse_events(&body).map_err(malformed)?;
    match request {
        EventsRequest::UrlVerification { challenge } => {
            Ok(Json(json!({ "challenge": challenge })).into_response())
        }
        EventsRequest::Callback(callback) => {
            let retry = headers
                .get("x-slack-retry-num")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("0");
            let stored =
                deliveries::store(&api, "slack", &callback.event_id, "event", utf8(&body)?).await?;
            tracing::debug!(event = %callback.event_id, retry, stored, "Slack event received");
            Ok(StatusCode::OK.into_response())
        }
        EventsRequest::Other(kind) => {
            tracing::debug!(%kind, "Slack request not acted on");
            Ok(StatusCode::OK.into_response())
        }
    }
}

/// Interactivity: button clicks and dialog submissions. Decisions and answers are stored
/// and made afterwards; opening the send-back or Deny dialog must happen within the
/// click's 3-second trigger, so it is started right away; an unknown button is answered
/// with an ephemeral error and changes nothing.
pub(crate) async fn interactions(
    State(api): State<ApiState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    verified(&api, &headers, &body)?;
    match parse_interaction(&body).map_err(malformed)? {
        Interaction::BlockAction(click) => {
            let action = match click.action_id.parse::<Control>() {
                Ok(Control::Question(action)) if action.verb == QuestionVerb::Deny => {
                    tokio::spawn(open_deny(api.clone(), click, action).in_current_span());
                    return Ok(StatusCode::OK.into_response());
                }
                Ok(Control::Question(_)) => {
                    let id = format!("interaction:{}", click.trigger_id);
                    deliveries::store(&api, "slack", &id, "block_actions", utf8(&body)?).await?;
                    return Ok(StatusCode::OK.into_response());
                }
                Ok(Control::Gate(action)) => action,
                Err(e) => {
                    tracing::warn!(action = %click.action_id, user = %click.user, "unknown Slack action");
                    let text = format!(
                        "That button is not one Gatehouse knows ({e}); nothing was changed."
                    );
                    spawn_ephemeral(&api, &click, text);
                    return Ok(StatusCode::OK.into_response());
                }
            };
            if action.verb == Verb::SendBack && action.target.is_none() {
                // In the request's span, so what goes wrong shows with its trace.
                tokio::spawn(open_send_back(api.clone(), click, action).in_current_span());
                return Ok(StatusCode::OK.into_response());
            }
            let id = format!("interaction:{}", click.trigger_id);
            deliveries::store(&api, "slack", &id, "block_actions", utf8(&body)?).await?;
            Ok(StatusCode::OK.into_response())
        }
        Interaction::ViewSubmission(view) => {
            if view.callback_id.parse::<Control>().is_err() {
                return Err(ApiError::BadRequest(format!(
                    "`{}` is not a Gatehouse dialog",
                    view.callback_id
                )));
            }
            let id = format!("view:{}", view.view_id);
            deliveries::store(&api, "slack", &id, "view_submission", utf8(&body)?).await?;
            // An empty 200 closes the dialog.
            Ok(StatusCode::OK.into_response())
        }
        Interaction::Other(kind) => {
            tracing::debug!(%kind, "Slack interaction not acted on");
            Ok(StatusCode::OK.into_response())
        }
    }
}

/// What a stored Slack request comes to, written into `tx`.
pub(crate) async fn process(
    api: &ApiState,
    tx: &mut Tx,
    delivery: &DeliveryRow,
) -> Result<Outcome, ApiError> {
    let body = delivery.body.as_bytes();
    match delivery.event.as_str() {
        "event" => match parse_events(body) {
            Ok(EventsRequest::Callback(callback)) => match callback.event {
                CallbackEvent::Mention(m) => {
                    let mention = ChatMention {
                        platform: Platform::Slack,
                        root: m.thread_root().to_owned(),
                        reply_to: m.thread_root().to_owned(),
                        direct: m.direct,
                        channel: m.channel,
                        user: m.user,
                        text: m.text,
                    };
                    mention::answer(api, tx, &delivery.delivery_id, &mention).await
                }
                CallbackEvent::Other(kind) => Ok(Outcome::ignored(format!(
                    "`{kind}` events are not acted on"
                ))),
            },
            Ok(_) => Ok(Outcome::ignored(
                "not an event callback: of Slack's events, only callbacks are acted on",
            )),
            Err(e) => Ok(Outcome::ignored(format!(
                "payload not understood, so nothing was done: {e}"
            ))),
        },
        "block_actions" | "view_submission" => match parse_interaction(body) {
            Ok(Interaction::BlockAction(a)) => match a.action_id.parse::<Control>() {
                Ok(Control::Question(action)) => {
                    let click = QuestionClick {
                        platform: Platform::Slack,
                        channel: a.channel.unwrap_or_default(),
                        recipient: a.user.clone(),
                        user: a.user,
                        action,
                        comment: None,
                    };
                    question_click::handle(api, tx, &delivery.delivery_id, &click).await
                }
                Ok(Control::Gate(action)) => {
                    let click = Click {
                        platform: Platform::Slack,
                        channel: a.channel.unwrap_or_default(),
                        recipient: a.user.clone(),
                        user: a.user,
                        action,
                        comment: None,
                    };
                    click::handle(api, tx, &delivery.delivery_id, &click).await
                }
                Err(e) => Ok(Outcome::ignored(e.to_string())),
            },
            Ok(Interaction::ViewSubmission(mut v)) => {
                let mut action = match v.callback_id.parse::<Control>() {
                    Ok(Control::Gate(action)) => action,
                    Ok(Control::Question(action)) => {
                        let click = QuestionClick {
                            platform: Platform::Slack,
                            // The dialog carries the card's channel, for an answer.
                            channel: v.private_metadata,
                            recipient: v.user.clone(),
                            user: v.user,
                            action,
                            comment: v.values.remove("comment"),
                        };
                        return question_click::handle(api, tx, &delivery.delivery_id, &click)
                            .await;
                    }
                    Err(_) => {
                        return Ok(Outcome::ignored(
                            "a dialog Gatehouse did not open, so nothing was done",
                        ));
                    }
                };
                if let Some(target) = v.values.remove("target") {
                    action = action.with_target(&target);
                }
                let click = Click {
                    platform: Platform::Slack,
                    // The dialog carries the card's channel, for an answer.
                    channel: v.private_metadata,
                    recipient: v.user.clone(),
                    user: v.user,
                    action,
                    comment: v.values.remove("comment"),
                };
                click::handle(api, tx, &delivery.delivery_id, &click).await
            }
            Ok(_) => Ok(Outcome::ignored(
                "only button clicks and dialog submissions are acted on",
            )),
            Err(e) => Ok(Outcome::ignored(format!(
                "payload not understood, so nothing was done: {e}"
            ))),
        },
        other => Ok(Outcome::ignored(format!("unknown Slack event `{other}`"))),
    }
}

fn verified(api: &ApiState, headers: &HeaderMap, body: &[u8]) -> Result<(), ApiError> {
    let Some(slack) = api.chat.slack.as_ref() else {
        return Err(ApiError::NotFound(
            "Slack is not configured ([slack])".into(),
        ));
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let now = chrono::Utc::now().timestamp();
    verify_request(
        &slack.signing_secret,
        header("x-slack-request-timestamp"),
        header("x-slack-signature"),
        body,
        now,
    )
    .map_err(|why| {
        metrics::counter!("gatehouse_webhook_rejected_total", "source" => "slack", "reason" => "signature")
            .increment(1);
        tracing::warn!(reason = %why, "Slack request refused");
        ApiError::Unauthorized(why.to_string())
    })
}

fn malformed(e: impl std::fmt::Display) -> ApiError {
    ApiError::BadRequest(format!("malformed Slack request: {e}"))
}

fn client(api: &ApiState) -> Option<SlackClient> {
    api.chat.slack.as_ref().and_then(|s| s.client.clone())
}

/// Answers a click only its clicker sees, without storing anything: for clicks that
/// cannot become decisions.
fn spawn_ephemeral(api: &ApiState, click: &BlockAction, text: String) {
    let (Some(client), Some(channel)) = (client(api), click.channel.clone()) else {
        return;
    };
    let user = click.user.clone();
    tokio::spawn(
        async move {
            if let Err(e) = client.post_ephemeral(&channel, &user, None, &text).await {
                tracing::warn!(error = %e, "answering a Slack click failed");
            }
        }
        .in_current_span(),
    );
}

/// Opens the send-back dialog for a card's gate, or says why it cannot be sent back.
async fn open_send_back(api: ApiState, click: BlockAction, action: CardAction) {
    let Some(client) = client(&api) else {
        return;
    };
    let result = match click::send_back_targets(&api, &action).await {
        Ok(targets) => {
            let mut view = send_back_modal(&action, &targets);
            // The submission carries no channel; the dialog keeps the card's, for answers.
            view["private_metadata"] = json!(click.channel.clone().unwrap_or_default());
            client
                .open_view(&click.trigger_id, &view)
                .await
                .map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    };
    if let Err(why) = result {
        let text = format!("Cannot send `{}` back: {why}.", action.gate());
        spawn_ephemeral(&api, &click, text);
    }
}

/// Opens the Deny dialog for a question card, or says why the question cannot be answered
/// (already answered, unknown) without making the clicker type a reason first.
async fn open_deny(api: ApiState, click: BlockAction, action: QuestionAction) {
    let Some(client) = client(&api) else {
        return;
    };
    let result = match question_click::closed(&api, &action).await {
        None => {
            let mut view = deny_modal(&action);
            // The submission carries no channel; the dialog keeps the card's, for answers.
            view["private_metadata"] = json!(click.channel.clone().unwrap_or_default());
            client
                .open_view(&click.trigger_id, &view)
                .await
                .map_err(|e| e.to_string())
        }
        Some(why) => Err(why),
    };
    if let Err(why) = result {
        let text = format!("Cannot deny the agent's question: {why}.");
        spawn_ephemeral(&api, &click, text);
    }
}
