//! The REST client: posting and editing cards, replies and interaction answers through
//! serenity's `Http`, so that against Discord its per-route rate-limit buckets apply.
//!
//! Requests and answers stay raw JSON ([`Value`]): Gatehouse builds its own bodies
//! ([`crate::card_message`]) and needs only ids back, and a raw answer does not depend on
//! serenity's model keeping up with Discord's.

use std::sync::Arc;

use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use serenity::all::{
    ApplicationId, ChannelId, HttpBuilder, HttpError, InteractionId, LightMethod, MessageId,
    Request, Route,
};
use serenity::http::Http;

use crate::components::text_message;
use crate::error::DiscordError;
use crate::interactions::EPHEMERAL;

/// Where serenity sends requests: its routes are absolute URLs on this origin.
const DISCORD_ORIGIN: &str = "https://discord.com";
/// The API version serenity 0.12's routes speak.
const API_PATH: &str = "/api/v10";
/// Discord's limit on a message nonce.
const NONCE_LIMIT: usize = 25;

/// Gatehouse's calls to Discord's REST API, as the bot. Cheap to clone: clones share one
/// connection pool and one set of rate-limit buckets.
#[derive(Clone)]
pub struct DiscordClient {
    http: Arc<Http>,
    application_id: ApplicationId,
}

impl std::fmt::Debug for DiscordClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscordClient")
            .field("application_id", &self.application_id)
            .finish_non_exhaustive()
    }
}

/// serenity's `Http` for `api_url`, by the rules on [`DiscordClient::new`].
pub(crate) fn http_for(
    api_url: &str,
    token: &str,
    application_id: Option<ApplicationId>,
) -> Result<Http, DiscordError> {
    if token.trim().is_empty() {
        return Err(DiscordError::Setup("the bot token is empty".into()));
    }
    let origin = api_url
        .trim_end_matches('/')
        .strip_suffix(API_PATH)
        .filter(|o| o.starts_with("https://") || o.starts_with("http://"))
        .ok_or_else(|| {
            DiscordError::Setup(format!(
                "api_url `{api_url}` is not an http(s) URL ending in {API_PATH}"
            ))
        })?;
    let mut builder = HttpBuilder::new(token);
    if let Some(id) = application_id {
        builder = builder.application_id(id);
    }
    if origin != DISCORD_ORIGIN {
        builder = builder.proxy(origin).ratelimiter_disabled(true);
    }
    Ok(builder.build())
}

impl DiscordClient {
    /// A client for the bot with `bot_token` (with or without the `Bot ` prefix) of
    /// application `application_id`, calling `api_url`.
    ///
    /// `api_url` is `https://discord.com/api/v10`, or another origin serving the same paths
    /// (`http://127.0.0.1:PORT/api/v10` for a fake, a rate-limiting proxy): it must end in
    /// `/api/v10`, the version serenity 0.12 speaks, and what comes before becomes
    /// serenity's `proxy`, which replaces `https://discord.com` in every route. serenity's
    /// rate limiter only ever calls discord.com, so for another origin it is off (as
    /// serenity's docs advise for proxies) and a 429 from that origin is
    /// [`DiscordError::Unavailable`]; against Discord itself it waits out 429s and
    /// pre-empts them with the per-route buckets.
    pub fn new(
        api_url: &str,
        bot_token: SecretString,
        application_id: &str,
    ) -> Result<Self, DiscordError> {
        let application_id = ApplicationId::new(snowflake("application id", application_id)?);
        let http = http_for(api_url, bot_token.expose_secret(), Some(application_id))?;
        Ok(Self {
            http: Arc::new(http),
            application_id,
        })
    }

    /// Posts `body` (a [`crate::card_message`], ...) to `channel`, as a reply to `reply_to`
    /// when given, and returns the new message's id.
    ///
    /// `nonce` is the caller's idempotency key (an outbox entry id): Discord refuses to
    /// create a second message with the same nonce from the same author for a few minutes
    /// and answers with the first one, so a retry after a crash or a lost answer does not
    /// post twice. Keys longer than Discord's 25 characters are hashed.
    pub async fn create_message(
        &self,
        channel: &str,
        reply_to: Option<&str>,
        body: &Value,
        nonce: &str,
    ) -> Result<String, DiscordError> {
        let channel_id = ChannelId::new(snowflake("channel id", channel)?);
        let mut body = body.clone();
        let object = body
            .as_object_mut()
            .ok_or_else(|| DiscordError::Setup("a message body must be a JSON object".into()))?;
        object.insert("nonce".into(), json!(nonce_for(nonce)));
        object.insert("enforce_nonce".into(), json!(true));
        if let Some(message_id) = reply_to {
            // A reply to a deleted message is still worth posting, as a plain message.
            object.insert(
                "message_reference".into(),
                json!({"message_id": message_id, "fail_if_not_exists": false}),
            );
        }
        let answer = self
            .send(
                Route::ChannelMessages { channel_id },
                LightMethod::Post,
                Some(&body),
            )
            .await?;
        id_of(&answer)
    }

    /// Replaces a message's content, embeds and components with `body`: a decided card, an
    /// updated progress message.
    pub async fn edit_message(
        &self,
        channel: &str,
        message_id: &str,
        body: &Value,
    ) -> Result<(), DiscordError> {
        let route = Route::ChannelMessage {
            channel_id: ChannelId::new(snowflake("channel id", channel)?),
            message_id: MessageId::new(snowflake("message id", message_id)?),
        };
        self.send(route, LightMethod::Patch, Some(body)).await?;
        Ok(())
    }

    /// Tells the person who clicked what came of it (who won a race, why a decision was
    /// refused), after the interaction was answered; `ephemeral` keeps it to them.
    pub async fn followup(
        &self,
        interaction_token: &str,
        text: &str,
        ephemeral: bool,
    ) -> Result<(), DiscordError> {
        let mut body = text_message(text);
        if ephemeral {
            body["flags"] = json!(EPHEMERAL);
        }
        let route = Route::WebhookFollowupMessages {
            application_id: self.application_id,
            token: interaction_token,
        };
        self.send(route, LightMethod::Post, Some(&body)).await?;
        Ok(())
    }

    /// Answers an interaction that came through the gateway (over HTTP the answer is the
    /// response body instead).
    pub async fn create_interaction_response(
        &self,
        interaction_id: &str,
        interaction_token: &str,
        body: &Value,
    ) -> Result<(), DiscordError> {
        let route = Route::InteractionResponse {
            interaction_id: InteractionId::new(snowflake("interaction id", interaction_id)?),
            token: interaction_token,
        };
        self.send(route, LightMethod::Post, Some(body)).await?;
        Ok(())
    }

    /// The id of the bot's direct-message channel with `user` (a user id), opened if it
    /// is not yet: where a message to that person alone goes. Discord answers with the same
    /// channel every time, so asking again is harmless.
    pub async fn dm_channel(&self, user: &str) -> Result<String, DiscordError> {
        snowflake("user id", user)?;
        let body = json!({ "recipient_id": user });
        let answer = self
            .send(Route::UserMeDmChannels, LightMethod::Post, Some(&body))
            .await?;
        id_of(&answer)
    }

    /// The bot's own user id: checks the token at start-up and recognises mentions.
    pub async fn current_user_id(&self) -> Result<String, DiscordError> {
        let answer = self.send(Route::UserMe, LightMethod::Get, None).await?;
        id_of(&answer)
    }

    async fn send(
        &self,
        route: Route<'_>,
        method: LightMethod,
        body: Option<&Value>,
    ) -> Result<Value, DiscordError> {
        let bytes = body
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|e| DiscordError::Setup(format!("an unencodable body: {e}")))?;
        let response = self
            .http
            .request(Request::new(route, method).body(bytes))
            .await
            .map_err(classify)?;
        let status = response.status();
        let answer = response
            .bytes()
            .await
            .map_err(|e| DiscordError::Unavailable(format!("the answer was cut off: {e}")))?;
        if answer.is_empty() {
            return Ok(Value::Null);
        }
        // A success with an unreadable answer most likely did what was asked; retrying is
        // safe (creates carry a nonce) and tells.
        serde_json::from_slice(&answer)
            .map_err(|e| DiscordError::Unavailable(format!("an unreadable answer ({status}): {e}")))
    }
}

fn classify(error: serenity::Error) -> DiscordError {
    match error {
        serenity::Error::Http(HttpError::UnsuccessfulRequest(refusal)) => {
            let status = refusal.status_code.as_u16();
            let what = format!("{} {}", refusal.method, refusal.url);
            if status == 429 {
                DiscordError::Unavailable(format!("rate limited on {what}"))
            } else if status >= 500 {
                DiscordError::Unavailable(format!("{status} from {what}"))
            } else {
                // serenity reports an error body it cannot decode with code -1.
                let message = if refusal.error.code >= 0 {
                    format!("{} (code {})", refusal.error.message, refusal.error.code)
                } else {
                    format!("no readable error from {what}")
                };
                DiscordError::Api { status, message }
            }
        }
        serenity::Error::Http(HttpError::Request(e)) => DiscordError::Unavailable(e.to_string()),
        other => DiscordError::Setup(other.to_string()),
    }
}

fn snowflake(what: &str, id: &str) -> Result<u64, DiscordError> {
    id.parse::<u64>()
        .ok()
        .filter(|n| *n != 0)
        .ok_or_else(|| DiscordError::Setup(format!("`{id}` is not a Discord {what}")))
}

fn id_of(answer: &Value) -> Result<String, DiscordError> {
    answer["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| DiscordError::Unavailable(format!("an answer without an id: {answer}")))
}

/// The caller's key when it fits Discord's 25 characters, otherwise a stable 64-bit FNV-1a
/// hash of it: the same key must give the same nonce in a restarted process, which rules out
/// std's randomly keyed hasher.
fn nonce_for(key: &str) -> String {
    if key.len() <= NONCE_LIMIT {
        return key.to_owned();
    }
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("gh-{hash:016x}")
}

#[cfg(test)]
mod tests {
    use wiremock::matchers::{body_partial_json, header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use super::*;

    const TOKEN: &str = "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs";

    async fn fake() -> (MockServer, DiscordClient) {
        let server = MockServer::start().await;
        let client = DiscordClient::new(
            &format!("{}/api/v10/", server.uri()),
            SecretString::from(TOKEN),
            "290926444748734465",
        )
        .unwrap();
        (server, client)
    }

    fn message(id: &str) -> Value {
        json!({"id": id, "channel_id": "345626669114982999", "content": "", "type": 0})
    }

    #[tokio::test]
    async fn creates_a_reply_with_a_nonce() {
        let (server, client) = fake().await;
        Mock::given(method("POST"))
            .and(path("/api/v10/channels/345626669114982999/messages"))
            .and(header("authorization", format!("Bot {TOKEN}").as_str()))
            .and(body_partial_json(json!({
                "content": "hi",
                "nonce": "outbox-17",
                "enforce_nonce": true,
                "message_reference": {"message_id": "844397162624450620", "fail_if_not_exists": false},
            })))
            .respond_with(ResponseTemplate::new(200).set_body_json(message("900000000000000001")))
            .expect(1)
            .mount(&server)
            .await;
        let id = client
            .create_message(
                "345626669114982999",
                Some("844397162624450620"),
                &json!({"content": "hi"}),
                "outbox-17",
            )
            .await
            .unwrap();
        assert_eq!(id, "900000000000000001");
    }

    #[tokio::test]
    async fn long_keys_become_short_stable_nonces() {
        let key = "card:0192f0c1-7a2b-7c3d-8e4f-001122334455:review:2";
        let nonce = nonce_for(key);
        assert!(nonce.len() <= NONCE_LIMIT, "{nonce}");
        assert_eq!(nonce, nonce_for(key));
        assert_ne!(nonce, nonce_for(&key.replace(":2", ":3")));

        let (server, client) = fake().await;
        Mock::given(method("POST"))
            .and(body_partial_json(json!({"nonce": nonce})))
            .respond_with(ResponseTemplate::new(200).set_body_json(message("1")))
            .expect(1)
            .mount(&server)
            .await;
        client
            .create_message("345626669114982999", None, &json!({"content": "x"}), key)
            .await
            .unwrap();
        let sent: Value = server.received_requests().await.unwrap()[0]
            .body_json()
            .unwrap();
        assert!(sent.get("message_reference").is_none());
    }

    #[tokio::test]
    async fn edits_follows_up_answers_and_knows_itself() {
        let (server, client) = fake().await;
        Mock::given(method("PATCH"))
            .and(path("/api/v10/channels/1/messages/2"))
            .and(body_partial_json(json!({"components": []})))
            .respond_with(ResponseTemplate::new(200).set_body_json(message("2")))
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/api/v10/webhooks/290926444748734465/tok-en"))
            .and(body_partial_json(
                json!({"content": "Bo approved first", "flags": 64}),
            ))
            .respond_with(ResponseTemplate::new(200).set_body_json(message("3")))
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path(
                "/api/v10/interactions/846462639134605312/tok-en/callback",
            ))
            .and(body_partial_json(json!({"type": 6})))
            .respond_with(ResponseTemplate::new(204))
            .expect(1)
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/api/v10/users/@me"))
            .and(header("authorization", format!("Bot {TOKEN}").as_str()))
            .respond_with(ResponseTemplate::new(200).set_body_json(
                json!({"id": "344487830824943618", "username": "gatehouse", "bot": true}),
            ))
            .expect(1)
            .mount(&server)
            .await;

        client
            .edit_message("1", "2", &json!({"components": []}))
            .await
            .unwrap();
        client
            .followup("tok-en", "Bo approved first", true)
            .await
            .unwrap();
        client
            .create_interaction_response("846462639134605312", "tok-en", &json!({"type": 6}))
            .await
            .unwrap();
        assert_eq!(
            client.current_user_id().await.unwrap(),
            "344487830824943618"
        );
    }

    #[tokio::test]
    async fn opens_a_direct_message_channel() {
        let (server, client) = fake().await;
        Mock::given(method("POST"))
            .and(path("/api/v10/users/@me/channels"))
            .and(header("authorization", format!("Bot {TOKEN}").as_str()))
            .and(body_partial_json(
                json!({"recipient_id": "80351110224678912"}),
            ))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "id": "319674150115610528",
                "type": 1,
                "last_message_id": null,
                "recipients": [{"id": "80351110224678912", "username": "Nelly"}]
            })))
            .expect(1)
            .mount(&server)
            .await;
        assert_eq!(
            client.dm_channel("80351110224678912").await.unwrap(),
            "319674150115610528"
        );
        assert!(matches!(
            client.dm_channel("dm:1").await,
            Err(DiscordError::Setup(_))
        ));
    }

    #[tokio::test]
    async fn errors_say_what_to_do() {
        let (server, client) = fake().await;
        let refusal = |status| {
            ResponseTemplate::new(status)
                .set_body_json(json!({"message": "Unknown Channel", "code": 10003}))
        };
        Mock::given(path("/api/v10/channels/404/messages"))
            .respond_with(refusal(404))
            .mount(&server)
            .await;
        Mock::given(path("/api/v10/channels/500/messages"))
            .respond_with(ResponseTemplate::new(502).set_body_string("<html>bad gateway</html>"))
            .mount(&server)
            .await;
        Mock::given(path("/api/v10/channels/429/messages"))
            .respond_with(
                ResponseTemplate::new(429)
                    .insert_header("retry-after", "0.5")
                    .insert_header("x-ratelimit-scope", "user")
                    .set_body_json(json!({"message": "You are being rate limited.", "retry_after": 0.5, "global": false})),
            )
            .mount(&server)
            .await;
        Mock::given(path("/api/v10/channels/400/messages"))
            .respond_with(ResponseTemplate::new(400).set_body_string("nope"))
            .mount(&server)
            .await;
        Mock::given(path("/api/v10/channels/200/messages"))
            .respond_with(ResponseTemplate::new(200).set_body_string("{\"no\":\"id\"}"))
            .mount(&server)
            .await;

        let create = |channel: &'static str| {
            let client = client.clone();
            async move {
                client
                    .create_message(channel, None, &json!({"content": "x"}), "k")
                    .await
                    .unwrap_err()
            }
        };
        match create("404").await {
            DiscordError::Api { status, message } => {
                assert_eq!(status, 404);
                assert_eq!(message, "Unknown Channel (code 10003)");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(create("500").await, DiscordError::Unavailable(_)));
        let limited = create("429").await;
        assert!(
            matches!(&limited, DiscordError::Unavailable(m) if m.contains("rate limited")),
            "{limited:?}"
        );
        assert!(matches!(
            create("400").await,
            DiscordError::Api { status: 400, .. }
        ));
        assert!(matches!(create("200").await, DiscordError::Unavailable(_)));
        assert!(matches!(create("abc").await, DiscordError::Setup(_)));
        assert!(matches!(create("0").await, DiscordError::Setup(_)));
    }

    #[tokio::test]
    async fn an_unreachable_api_is_unavailable() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/api/v10", closed.local_addr().unwrap());
        drop(closed);
        let client = DiscordClient::new(&url, SecretString::from(TOKEN), "1").unwrap();
        let error = client.current_user_id().await.unwrap_err();
        assert!(matches!(error, DiscordError::Unavailable(_)), "{error:?}");
    }

    #[test]
    fn setup_is_checked() {
        let new = |url: &str, token: &str, app: &str| {
            DiscordClient::new(url, SecretString::from(token), app).map(|_| ())
        };
        new("https://discord.com/api/v10", TOKEN, "1").unwrap();
        for (url, token, app) in [
            ("https://discord.com/api/v9", TOKEN, "1"),
            ("discord.com/api/v10", TOKEN, "1"),
            ("https://discord.com/api/v10", " ", "1"),
            ("https://discord.com/api/v10", TOKEN, "app"),
        ] {
            assert!(
                matches!(new(url, token, app), Err(DiscordError::Setup(_))),
                "{url} {token} {app}"
            );
        }
    }

    #[test]
    fn only_discord_itself_gets_serenitys_rate_limiter() {
        let discord = http_for("https://discord.com/api/v10", TOKEN, None).unwrap();
        assert!(discord.ratelimiter.is_some());
        assert_eq!(discord.proxy, None);
        let fake = http_for("http://127.0.0.1:9/api/v10/", TOKEN, None).unwrap();
        assert!(fake.ratelimiter.is_none());
        assert_eq!(fake.proxy.as_deref(), Some("http://127.0.0.1:9"));
    }
}
