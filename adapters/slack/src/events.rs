//! The Events API requests ingest receives: Slack's URL check when the endpoint is
//! configured, and event callbacks, of which Gatehouse acts only on people addressing it
//! (a mention in a channel, or a direct message).

use crate::read::{Typed, read};
use serde::Deserialize;

use crate::error::PayloadError;

/// One request to the Events API endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventsRequest {
    /// Slack checking the endpoint: answer with the challenge.
    UrlVerification {
        /// What to echo back.
        challenge: String,
    },
    /// An event the app subscribed to.
    Callback(Callback),
    /// Another request type (`app_rate_limited`, ...), by its `type`: acknowledge it.
    Other(String),
}

/// An `event_callback`: the envelope around one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callback {
    /// Slack's id for the delivery; retries of the same event repeat it, so it deduplicates.
    pub event_id: String,
    /// The workspace.
    pub team_id: Option<String>,
    /// What happened.
    pub event: CallbackEvent,
}

/// The event inside a callback, reduced to what Gatehouse acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallbackEvent {
    /// Someone addressed the bot.
    Mention(Mention),
    /// Anything else, by its event `type`, including every message a bot wrote: the bot must
    /// never answer itself.
    Other(String),
}

/// A person addressing the bot: an `app_mention`, or a message in a direct conversation with
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// The conversation.
    pub channel: String,
    /// Who wrote it.
    pub user: String,
    /// What they wrote, without the leading `<@BOT>` (and a `:` or `,` after it), trimmed.
    pub text: String,
    /// The message's timestamp, its id in the conversation.
    pub ts: String,
    /// The thread it was written in, if any.
    pub thread_ts: Option<String>,
    /// Written in a direct conversation with the bot, not in a channel.
    pub direct: bool,
}

impl Mention {
    /// Where replies go: the thread it was written in, or a new thread under it.
    pub fn thread_root(&self) -> &str {
        self.thread_ts.as_deref().unwrap_or(&self.ts)
    }
}

/// Reads an Events API request body (already signature-checked).
pub fn parse_events(body: &[u8]) -> Result<EventsRequest, PayloadError> {
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|source| PayloadError::NotJson {
            what: "Events API body",
            source,
        })?;
    let head: Typed = read(value.clone(), "Events API body")?;
    Ok(match head.kind.as_str() {
        "url_verification" => {
            let check: UrlVerification = read(value, "url_verification request")?;
            EventsRequest::UrlVerification {
                challenge: check.challenge,
            }
        }
        "event_callback" => {
            let raw: RawCallback = read(value, "event_callback")?;
            EventsRequest::Callback(Callback {
                event_id: raw.event_id,
                team_id: raw.team_id,
                event: event(raw.event)?,
            })
        }
        _ => EventsRequest::Other(head.kind),
    })
}

fn event(value: serde_json::Value) -> Result<CallbackEvent, PayloadError> {
    let head: RawEventHead = read(value.clone(), "event")?;
    let addressed = match head.kind.as_str() {
        "app_mention" => true,
        "message" => head.channel_type.as_deref() == Some("im"),
        _ => false,
    };
    // Edits, joins and bot posts carry a subtype or a bot_id; answering those would make
    // the bot talk to itself or to other bots.
    if !addressed || head.subtype.is_some() || head.bot_id.is_some() {
        return Ok(CallbackEvent::Other(head.kind));
    }
    let message: RawMessage = read(value, "message event")?;
    Ok(CallbackEvent::Mention(Mention {
        channel: message.channel,
        user: message.user,
        text: without_leading_mention(&message.text).to_owned(),
        ts: message.ts,
        thread_ts: message.thread_ts,
        direct: head.channel_type.as_deref() == Some("im"),
    }))
}

/// `<@U123> run x`, `<@U123|gatehouse>: run x` → `run x`; other text only trimmed.
fn without_leading_mention(text: &str) -> &str {
    let text = text.trim_start();
    let Some(rest) = text.strip_prefix("<@") else {
        return text.trim_end();
    };
    let Some(end) = rest.find('>') else {
        return text.trim_end();
    };
    let rest = rest[end + 1..].trim_start();
    rest.strip_prefix([':', ',']).unwrap_or(rest).trim()
}

#[derive(Deserialize)]
struct UrlVerification {
    challenge: String,
}

#[derive(Deserialize)]
struct RawCallback {
    event_id: String,
    team_id: Option<String>,
    event: serde_json::Value,
}

#[derive(Deserialize)]
struct RawEventHead {
    #[serde(rename = "type")]
    kind: String,
    subtype: Option<String>,
    bot_id: Option<String>,
    channel_type: Option<String>,
}

#[derive(Deserialize)]
struct RawMessage {
    channel: String,
    user: String,
    #[serde(default)]
    text: String,
    ts: String,
    thread_ts: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> &'static str {
        match name {
            "url_verification" => {
                include_str!("../../../tests/fixtures/slack/url_verification.json")
            }
            "app_mention" => {
                include_str!("../../../tests/fixtures/slack/event_callback.app_mention.json")
            }
            "app_mention.with_blocks" => {
                include_str!(
                    "../../../tests/fixtures/slack/event_callback.app_mention.with_blocks.json"
                )
            }
            "message.channels" => {
                include_str!("../../../tests/fixtures/slack/event_callback.message.channels.json")
            }
            "message_changed" => include_str!(
                "../../../tests/fixtures/slack/slack-morphism.event_callback.message_changed.json"
            ),
            "message_changed_by_bot" => include_str!(
                "../../../tests/fixtures/slack/slack-morphism.event_callback.message_changed_by_bot.json"
            ),
            _ => panic!("no fixture {name}"),
        }
    }

    fn parse(name: &str) -> EventsRequest {
        parse_events(fixture(name).as_bytes()).unwrap()
    }

    /// A fixture with its event changed by `edit`, for cases no recorded payload shows.
    fn edited(name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> EventsRequest {
        let mut value: serde_json::Value = serde_json::from_str(fixture(name)).unwrap();
        edit(&mut value["event"]);
        parse_events(value.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn url_verification_yields_the_challenge() {
        assert_eq!(
            parse("url_verification"),
            EventsRequest::UrlVerification {
                challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P".into()
            }
        );
    }

    #[test]
    fn app_mentions_become_mentions_without_the_bot_handle() {
        let EventsRequest::Callback(callback) = parse("app_mention") else {
            panic!("not a callback")
        };
        assert_eq!(callback.event_id, "Ev111");
        assert_eq!(callback.team_id.as_deref(), Some("T111"));
        let CallbackEvent::Mention(mention) = callback.event else {
            panic!("not a mention")
        };
        assert_eq!(
            mention,
            Mention {
                channel: "C111".into(),
                user: "W222".into(),
                text: "Hi there!".into(),
                ts: "1595926230.009600".into(),
                thread_ts: None,
                direct: false,
            }
        );
        assert_eq!(mention.thread_root(), "1595926230.009600");

        let EventsRequest::Callback(callback) = parse("app_mention.with_blocks") else {
            panic!("not a callback")
        };
        let CallbackEvent::Mention(mention) = callback.event else {
            panic!("not a mention")
        };
        assert_eq!(
            (mention.user.as_str(), mention.text.as_str()),
            ("U222", "hey")
        );
        assert_eq!(callback.event_id, "Ev04SPP46R6J");
    }

    #[test]
    fn mentions_in_threads_reply_in_the_thread() {
        let EventsRequest::Callback(Callback {
            event: CallbackEvent::Mention(mention),
            ..
        }) = edited("app_mention", |e| {
            e["thread_ts"] = "1595926000.000100".into();
            e["text"] = "<@W111|gatehouse>:  run platform-check ".into();
        })
        else {
            panic!("not a mention")
        };
        assert_eq!(mention.text, "run platform-check");
        assert_eq!(mention.thread_root(), "1595926000.000100");
    }

    #[test]
    fn only_direct_messages_from_people_are_mentions() {
        // A channel message that does not name the bot is not for it.
        let EventsRequest::Callback(callback) = parse("message.channels") else {
            panic!("not a callback")
        };
        assert_eq!(callback.event, CallbackEvent::Other("message".into()));

        let dm = edited("message.channels", |e| e["channel_type"] = "im".into());
        let EventsRequest::Callback(Callback {
            event: CallbackEvent::Mention(mention),
            ..
        }) = dm
        else {
            panic!("a direct message is a mention")
        };
        assert_eq!(
            (mention.user.as_str(), mention.text.as_str(), mention.direct),
            ("W111", "Hello World!", true)
        );

        // The bot's own direct messages, and bot posts of any kind, are not.
        for edit in [
            |e: &mut serde_json::Value| {
                e["channel_type"] = "im".into();
                e["bot_id"] = "B111".into();
            },
            |e: &mut serde_json::Value| {
                e["channel_type"] = "im".into();
                e["subtype"] = "bot_message".into();
            },
        ] {
            let EventsRequest::Callback(callback) = edited("message.channels", edit) else {
                panic!("not a callback")
            };
            assert_eq!(callback.event, CallbackEvent::Other("message".into()));
        }
    }

    #[test]
    fn edits_are_not_mentions() {
        for name in ["message_changed", "message_changed_by_bot"] {
            let EventsRequest::Callback(callback) = parse(name) else {
                panic!("not a callback")
            };
            assert_eq!(callback.event, CallbackEvent::Other("message".into()));
            assert_eq!(callback.event_id, "EXXXXXXXXXXX");
        }
        let im = edited("message_changed", |e| e["channel_type"] = "im".into());
        let EventsRequest::Callback(callback) = im else {
            panic!("not a callback")
        };
        assert_eq!(callback.event, CallbackEvent::Other("message".into()));
    }

    #[test]
    fn other_requests_and_events_pass_through_by_type() {
        assert_eq!(
            parse_events(br#"{"type":"app_rate_limited","minute_rate_limited":1}"#).unwrap(),
            EventsRequest::Other("app_rate_limited".into())
        );
        let EventsRequest::Callback(callback) =
            edited("app_mention", |e| e["type"] = "reaction_added".into())
        else {
            panic!("not a callback")
        };
        assert_eq!(
            callback.event,
            CallbackEvent::Other("reaction_added".into())
        );
    }

    #[test]
    fn malformed_bodies_say_what_is_wrong() {
        let not_json = parse_events(b"token=x").unwrap_err().to_string();
        assert!(not_json.contains("not JSON"), "{not_json}");

        let mut value: serde_json::Value = serde_json::from_str(fixture("app_mention")).unwrap();
        value["event"].as_object_mut().unwrap().remove("user");
        let missing = parse_events(value.to_string().as_bytes())
            .unwrap_err()
            .to_string();
        assert!(missing.contains("`user`"), "{missing}");

        let no_challenge = parse_events(br#"{"type":"url_verification"}"#)
            .unwrap_err()
            .to_string();
        assert!(no_challenge.contains("`challenge`"), "{no_challenge}");

        let no_type = parse_events(b"{}").unwrap_err().to_string();
        assert!(no_type.contains("`type`"), "{no_type}");
    }
}
