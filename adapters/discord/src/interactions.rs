//! Interactions: what Discord sends when someone clicks a card's button, picks from its
//! menu or submits a modal, and the bodies that answer them. The same JSON arrives over HTTP
//! (signed) and over the gateway, and the same answer bodies go back either as the HTTP
//! response or through the create-interaction-response call.

use std::collections::BTreeMap;

use gatehouse_chat::{CardAction, QuestionAction};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::PayloadError;
use crate::text::truncate;

/// An interaction, reduced to what Gatehouse acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interaction {
    /// Discord checking the endpoint (type 1): answer [`pong`].
    Ping,
    /// A click on a button or a pick in a select menu (type 3).
    Component(Component),
    /// A submitted modal (type 5).
    ModalSubmit(ModalSubmit),
    /// Anything else (slash commands, autocomplete): Gatehouse registers none, so these are
    /// answered with a short reply or ignored.
    Other {
        /// The interaction type.
        kind: u8,
        /// The interaction id.
        id: String,
        /// The token to answer with.
        token: String,
    },
}

/// A click on a message component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    /// The interaction id, for the gateway's response call.
    pub id: String,
    /// The application, for follow-ups.
    pub application_id: String,
    /// Answers and follow-ups for 15 minutes.
    pub token: String,
    /// The control's id: a [`CardAction`] on Gatehouse's cards.
    pub custom_id: String,
    /// 2 for a button, 3 for a string select, ...
    pub component_type: u8,
    /// What was picked in a select menu; empty for buttons.
    pub values: Vec<String>,
    /// Who clicked (a Discord user id).
    pub user: String,
    /// Where.
    pub channel_id: Option<String>,
    /// The message carrying the control (the card to update).
    pub message_id: Option<String>,
    /// The server, absent in direct messages.
    pub guild_id: Option<String>,
}

/// A submitted modal: the send-back or reject dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModalSubmit {
    /// The interaction id, for the gateway's response call.
    pub id: String,
    /// The application, for follow-ups.
    pub application_id: String,
    /// Answers and follow-ups for 15 minutes.
    pub token: String,
    /// The modal's id: the [`CardAction`] that opened it.
    pub custom_id: String,
    /// Who submitted it (a Discord user id).
    pub user: String,
    /// Where.
    pub channel_id: Option<String>,
    /// The message whose component opened the modal (the card to update).
    pub message_id: Option<String>,
    /// Text input custom id → what was typed (empty when left blank).
    pub fields: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct Raw {
    #[serde(rename = "type")]
    kind: u8,
    id: String,
    token: String,
    application_id: Option<String>,
    data: Option<RawData>,
    member: Option<RawMember>,
    user: Option<RawUser>,
    channel_id: Option<String>,
    guild_id: Option<String>,
    message: Option<RawMessage>,
}

#[derive(Deserialize)]
struct RawData {
    custom_id: Option<String>,
    component_type: Option<u8>,
    // `Option` because serializers (serenity's among them) write `null` for a button.
    values: Option<Vec<String>>,
    components: Option<Vec<RawRow>>,
}

/// A top-level modal component: an action row of text inputs, or (Components v2) a label
/// holding one.
#[derive(Deserialize)]
struct RawRow {
    components: Option<Vec<RawInput>>,
    component: Option<RawInput>,
}

#[derive(Deserialize)]
struct RawInput {
    custom_id: Option<String>,
    value: Option<String>,
}

#[derive(Deserialize)]
struct RawMember {
    user: Option<RawUser>,
}

#[derive(Deserialize)]
struct RawUser {
    id: String,
}

#[derive(Deserialize)]
struct RawMessage {
    id: String,
}

/// Reads an interaction body (after [`crate::verify_interaction`] for HTTP).
pub fn parse_interaction(body: &[u8]) -> Result<Interaction, PayloadError> {
    let raw: Raw = serde_json::from_slice(body)?;
    match raw.kind {
        1 => Ok(Interaction::Ping),
        3 => {
            let user = user_of(&raw)?;
            let application_id = raw
                .application_id
                .ok_or(PayloadError::Missing("application_id"))?;
            let data = raw.data.ok_or(PayloadError::Missing("data"))?;
            Ok(Interaction::Component(Component {
                id: raw.id,
                application_id,
                token: raw.token,
                custom_id: data
                    .custom_id
                    .ok_or(PayloadError::Missing("data.custom_id"))?,
                component_type: data
                    .component_type
                    .ok_or(PayloadError::Missing("data.component_type"))?,
                values: data.values.unwrap_or_default(),
                user,
                channel_id: raw.channel_id,
                message_id: raw.message.map(|m| m.id),
                guild_id: raw.guild_id,
            }))
        }
        5 => {
            let user = user_of(&raw)?;
            let application_id = raw
                .application_id
                .ok_or(PayloadError::Missing("application_id"))?;
            let data = raw.data.ok_or(PayloadError::Missing("data"))?;
            let fields = data
                .components
                .unwrap_or_default()
                .into_iter()
                .flat_map(|row| {
                    row.components
                        .unwrap_or_default()
                        .into_iter()
                        .chain(row.component)
                })
                .filter_map(|input| Some((input.custom_id?, input.value.unwrap_or_default())))
                .collect();
            Ok(Interaction::ModalSubmit(ModalSubmit {
                id: raw.id,
                application_id,
                token: raw.token,
                custom_id: data
                    .custom_id
                    .ok_or(PayloadError::Missing("data.custom_id"))?,
                user,
                channel_id: raw.channel_id,
                message_id: raw.message.map(|m| m.id),
                fields,
            }))
        }
        kind => Ok(Interaction::Other {
            kind,
            id: raw.id,
            token: raw.token,
        }),
    }
}

/// In a server the clicker is `member.user`; in a direct message, `user`.
fn user_of(raw: &Raw) -> Result<String, PayloadError> {
    raw.member
        .as_ref()
        .and_then(|m| m.user.as_ref())
        .or(raw.user.as_ref())
        .map(|u| u.id.clone())
        .ok_or(PayloadError::Missing("member.user or user"))
}

/// The answer to a [`Interaction::Ping`].
pub fn pong() -> Value {
    json!({"type": 1})
}

/// "Got it, the message will be edited": answers a click within Discord's three seconds
/// while the decision is made and the card updated afterwards.
pub fn deferred_update() -> Value {
    json!({"type": 6})
}

/// A reply only the clicker sees: refusals ("you may not decide this gate") and
/// confirmations that should not clutter the channel.
pub fn ephemeral_reply(text: &str) -> Value {
    json!({
        "type": 4,
        "data": {
            "content": truncate(text, CONTENT_LIMIT),
            "flags": EPHEMERAL,
            "allowed_mentions": {"parse": []},
        }
    })
}

/// The dialog a send-back pick opens: the comment the rework will carry. Its id is the aimed
/// action, so the submission alone says what to do.
pub fn send_back_modal(action: &CardAction) -> Value {
    let title = match &action.target {
        Some(target) => format!("Send back to {target}"),
        None => "Send back".to_owned(),
    };
    // The engine refuses a send-back without a comment: whoever redoes the work needs it.
    comment_modal(&action.encode(), &title, "What should change?", true)
}

/// The dialog the Reject button opens: submitting it is the confirmation, so a slipped
/// click costs nothing.
pub fn reject_modal(action: &CardAction) -> Value {
    comment_modal(
        &action.encode(),
        "Reject this work?",
        "Why? (optional)",
        false,
    )
}

/// The dialog a question card's Deny button opens: the reason the agent is told, which
/// may be left empty; submitting it is the answer.
pub fn deny_modal(action: &QuestionAction) -> Value {
    comment_modal(
        &action.encode(),
        "Deny the agent?",
        "Why? The agent is told (optional)",
        false,
    )
}

/// Discord's limits on messages and modals.
pub(crate) const CONTENT_LIMIT: usize = 2000;
const MODAL_TITLE_LIMIT: usize = 45;
const COMMENT_LIMIT: usize = 4000;
pub(crate) const EPHEMERAL: u64 = 1 << 6;

fn comment_modal(custom_id: &str, title: &str, label: &str, required: bool) -> Value {
    json!({
        "type": 9,
        "data": {
            "custom_id": custom_id,
            "title": truncate(title, MODAL_TITLE_LIMIT),
            "components": [{
                "type": 1,
                "components": [{
                    "type": 4,
                    "custom_id": "comment",
                    "label": label,
                    "style": 2,
                    "required": required,
                    "max_length": COMMENT_LIMIT,
                }]
            }]
        }
    })
}

#[cfg(test)]
mod tests {
    use gatehouse_chat::Verb;

    use super::*;

    const PING: &str = include_str!(
        "../../../tests/fixtures/discord/interaction.ping.discord-interactions-js.json"
    );
    const COMMAND_JS: &str = include_str!(
        "../../../tests/fixtures/discord/interaction.application_command.discord-interactions-js.json"
    );
    const COMMAND_DOCS: &str = include_str!(
        "../../../tests/fixtures/discord/interaction.application_command.discord-docs.json"
    );
    const AUTOCOMPLETE: &str = include_str!(
        "../../../tests/fixtures/discord/interaction.autocomplete.discord-interactions-js.json"
    );
    const COMPONENT_DOCS: &str = include_str!(
        "../../../tests/fixtures/discord/interaction.message_component.discord-docs.json"
    );
    const COMPONENT_JS: &str = include_str!(
        "../../../tests/fixtures/discord/interaction.message_component.discord-interactions-js.json"
    );

    fn action(verb: Verb) -> CardAction {
        let run = "0192f0c1-7a2b-7c3d-8e4f-001122334455".parse().unwrap();
        CardAction::new(verb, run, "review", 2)
    }

    #[test]
    fn ping() {
        assert_eq!(
            parse_interaction(PING.as_bytes()).unwrap(),
            Interaction::Ping
        );
        assert_eq!(pong(), json!({"type": 1}));
    }

    #[test]
    fn commands_and_autocomplete_are_other() {
        assert_eq!(
            parse_interaction(COMMAND_JS.as_bytes()).unwrap(),
            Interaction::Other {
                kind: 2,
                id: "787053080478613556".into(),
                token: "ThisIsATokenFromDiscordThatIsVeryLong".into()
            }
        );
        assert!(matches!(
            parse_interaction(COMMAND_DOCS.as_bytes()).unwrap(),
            Interaction::Other { kind: 2, ref token, .. } if token == "A_UNIQUE_TOKEN"
        ));
        assert!(matches!(
            parse_interaction(AUTOCOMPLETE.as_bytes()).unwrap(),
            Interaction::Other { kind: 4, .. }
        ));
    }

    #[test]
    fn a_button_click_in_a_server() {
        assert_eq!(
            parse_interaction(COMPONENT_DOCS.as_bytes()).unwrap(),
            Interaction::Component(Component {
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
            })
        );
    }

    #[test]
    fn a_select_pick_in_a_direct_message() {
        let mut body: Value = serde_json::from_str(COMPONENT_DOCS).unwrap();
        let member = body.as_object_mut().unwrap().remove("member").unwrap();
        body["user"] = member["user"].clone();
        body.as_object_mut().unwrap().remove("guild_id");
        body["data"] =
            json!({"custom_id": "gh:send-back:x", "component_type": 3, "values": ["build"]});
        let Interaction::Component(c) =
            parse_interaction(&serde_json::to_vec(&body).unwrap()).unwrap()
        else {
            panic!("not a component");
        };
        assert_eq!(c.user, "53908232506183680");
        assert_eq!(c.values, ["build"]);
        assert_eq!(c.component_type, 3);
        assert_eq!(c.guild_id, None);
    }

    #[test]
    fn a_component_without_a_user_is_refused() {
        // The discord-interactions-js sample is a signing test vector, not a full interaction.
        assert!(matches!(
            parse_interaction(COMPONENT_JS.as_bytes()),
            Err(PayloadError::Missing("member.user or user"))
        ));
    }

    /// A modal submit as Discord documents it: the rows of the modal come back with each
    /// text input's `custom_id` and `value`.
    fn modal_submit(rows: Value) -> Value {
        json!({
            "type": 5,
            "id": "1100000000000000001",
            "application_id": "290926444748734465",
            "token": "modal_token",
            "version": 1,
            "channel_id": "345626669114982999",
            "guild_id": "290926798626357999",
            "member": {"user": {"id": "53908232506183680", "username": "Mason"}, "roles": []},
            "message": {"id": "844397162624450620", "channel_id": "345626669114982999"},
            "data": {"custom_id": action(Verb::Reject).encode(), "components": rows},
        })
    }

    #[test]
    fn a_modal_submit() {
        let body = modal_submit(json!([{
            "type": 1,
            "components": [{"type": 4, "custom_id": "comment", "value": "needs tests"}]
        }]));
        let Interaction::ModalSubmit(m) =
            parse_interaction(&serde_json::to_vec(&body).unwrap()).unwrap()
        else {
            panic!("not a modal submit");
        };
        assert_eq!(
            m.custom_id.parse::<CardAction>().unwrap(),
            action(Verb::Reject)
        );
        assert_eq!(m.user, "53908232506183680");
        assert_eq!(m.message_id.as_deref(), Some("844397162624450620"));
        assert_eq!(
            m.fields.get("comment").map(String::as_str),
            Some("needs tests")
        );
        assert_eq!(m.id, "1100000000000000001");
        assert_eq!(m.token, "modal_token");
    }

    #[test]
    fn a_modal_submit_with_labels() {
        let body = modal_submit(json!([{
            "type": 18, "id": 1,
            "component": {"type": 4, "id": 2, "custom_id": "comment", "value": ""}
        }]));
        let Interaction::ModalSubmit(m) =
            parse_interaction(&serde_json::to_vec(&body).unwrap()).unwrap()
        else {
            panic!("not a modal submit");
        };
        assert_eq!(m.fields.get("comment").map(String::as_str), Some(""));
    }

    #[test]
    fn malformed_bodies() {
        for body in [
            &b""[..],
            b"{",
            b"[]",
            b"{\"type\":1}",
            b"{\"type\":\"1\",\"id\":\"1\",\"token\":\"t\"}",
        ] {
            assert!(
                matches!(parse_interaction(body), Err(PayloadError::Malformed(_))),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        let no_data = br#"{"type":3,"id":"1","token":"t","application_id":"2","user":{"id":"3"}}"#;
        assert!(matches!(
            parse_interaction(no_data),
            Err(PayloadError::Missing("data"))
        ));
        let no_custom_id =
            br#"{"type":5,"id":"1","token":"t","application_id":"2","user":{"id":"3"},"data":{}}"#;
        assert!(matches!(
            parse_interaction(no_custom_id),
            Err(PayloadError::Missing("data.custom_id"))
        ));
    }

    #[test]
    fn answers() {
        assert_eq!(deferred_update(), json!({"type": 6}));
        let reply = ephemeral_reply(&"x".repeat(3000));
        assert_eq!(reply["type"], 4);
        assert_eq!(reply["data"]["flags"], 64);
        assert_eq!(
            reply["data"]["content"].as_str().unwrap().chars().count(),
            2000
        );
        assert_eq!(reply["data"]["allowed_mentions"], json!({"parse": []}));
    }

    #[test]
    fn modals() {
        let aimed = action(Verb::SendBack).with_target("build");
        let modal = send_back_modal(&aimed);
        assert_eq!(modal["type"], 9);
        assert_eq!(modal["data"]["custom_id"], aimed.encode());
        assert_eq!(modal["data"]["title"], "Send back to build");
        let input = &modal["data"]["components"][0]["components"][0];
        assert_eq!(input["type"], 4);
        assert_eq!(input["style"], 2);
        assert_eq!(input["custom_id"], "comment");
        assert_eq!(input["required"], true, "a send-back needs a comment");
        let reject = reject_modal(&action(Verb::Reject));
        assert_eq!(
            reject["data"]["components"][0]["components"][0]["required"],
            false
        );

        let long = action(Verb::SendBack).with_target(&"t".repeat(60));
        assert_eq!(
            send_back_modal(&long)["data"]["title"]
                .as_str()
                .unwrap()
                .chars()
                .count(),
            45
        );

        let deny = QuestionAction::new(
            gatehouse_chat::QuestionVerb::Deny,
            "0192f0c1-7a2b-7c3d-8e4f-0011223344aa".parse().unwrap(),
        );
        let modal = deny_modal(&deny);
        assert_eq!(modal["type"], 9);
        assert_eq!(modal["data"]["custom_id"], deny.encode());
        let input = &modal["data"]["components"][0]["components"][0];
        assert_eq!(input["custom_id"], "comment");
        assert_eq!(input["required"], false, "an empty reason is allowed");
        assert!(modal["data"]["title"].as_str().unwrap().chars().count() <= 45);

        let reject = reject_modal(&action(Verb::Reject));
        assert_eq!(reject["type"], 9);
        assert_eq!(reject["data"]["title"], "Reject this work?");
        assert_eq!(reject["data"]["custom_id"], action(Verb::Reject).encode());
        assert_eq!(
            reject["data"]["components"][0]["components"][0]["custom_id"],
            "comment"
        );
    }
}
