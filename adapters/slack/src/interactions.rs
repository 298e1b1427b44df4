//! Interactivity requests: button clicks and select choices on messages (`block_actions`)
//! and submitted modals (`view_submission`), as ingest receives them — a form with one
//! `payload` field holding JSON.

use std::collections::BTreeMap;

use crate::read::{Typed, read};
use serde::Deserialize;

use crate::error::PayloadError;

/// One interactivity request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interaction {
    /// A click or choice on a message.
    BlockAction(BlockAction),
    /// A modal was submitted.
    ViewSubmission(ViewSubmission),
    /// Another kind (`view_closed`, `shortcut`, ...), by its `type`: acknowledge it.
    Other(String),
}

/// A click on a button, or a choice in a menu, of a message (the first action of the
/// payload; Slack sends one per request for these).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockAction {
    /// Who clicked.
    pub user: String,
    /// The conversation of the message.
    pub channel: Option<String>,
    /// The message clicked on, to update it.
    pub message_ts: Option<String>,
    /// The thread the message is in, to reply there.
    pub thread_ts: Option<String>,
    /// The control's `action_id`: for Gatehouse's cards, an encoded `CardAction`.
    pub action_id: String,
    /// A button's `value`.
    pub value: Option<String>,
    /// A `static_select`'s chosen option value.
    pub selected: Option<String>,
    /// Opens a modal in answer to this click, for three seconds.
    pub trigger_id: String,
    /// Where to answer the click outside the Web API.
    pub response_url: Option<String>,
}

/// A submitted modal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewSubmission {
    /// Who submitted it.
    pub user: String,
    /// The view's id.
    pub view_id: String,
    /// The `callback_id` the modal was opened with: for Gatehouse's, an encoded `CardAction`.
    pub callback_id: String,
    /// The `private_metadata` the modal was opened with.
    pub private_metadata: String,
    /// The inputs by `action_id`: a text input's value or a select's chosen option value.
    /// Inputs left empty are absent.
    pub values: BTreeMap<String, String>,
}

/// Reads an interactivity request body (already signature-checked).
pub fn parse_interaction(form_body: &[u8]) -> Result<Interaction, PayloadError> {
    let fields: Vec<(String, String)> =
        serde_urlencoded::from_bytes(form_body).map_err(|_| PayloadError::NoPayload)?;
    let payload = fields
        .into_iter()
        .find_map(|(name, value)| (name == "payload").then_some(value))
        .ok_or(PayloadError::NoPayload)?;
    let value: serde_json::Value =
        serde_json::from_str(&payload).map_err(|source| PayloadError::NotJson {
            what: "interaction payload",
            source,
        })?;
    let head: Typed = read(value.clone(), "interaction payload")?;
    Ok(match head.kind.as_str() {
        "block_actions" => {
            Interaction::BlockAction(block_action(read(value, "block_actions payload")?)?)
        }
        "view_submission" => {
            Interaction::ViewSubmission(view_submission(read(value, "view_submission payload")?))
        }
        _ => Interaction::Other(head.kind),
    })
}

fn block_action(raw: RawBlockActions) -> Result<BlockAction, PayloadError> {
    let action = raw
        .actions
        .into_iter()
        .next()
        .ok_or(PayloadError::NoAction)?;
    let container = raw.container.unwrap_or_default();
    let message = raw.message.unwrap_or_default();
    Ok(BlockAction {
        user: raw.user.id,
        channel: raw.channel.map(|c| c.id).or(container.channel_id),
        message_ts: container.message_ts.or(message.ts),
        thread_ts: message.thread_ts.or(container.thread_ts),
        action_id: action.action_id,
        value: action.value,
        selected: action.selected_option.map(|o| o.value),
        trigger_id: raw.trigger_id,
        response_url: raw.response_url,
    })
}

fn view_submission(raw: RawViewSubmission) -> ViewSubmission {
    let values = raw
        .view
        .state
        .values
        .into_values()
        .flat_map(BTreeMap::into_iter)
        .filter_map(|(action_id, input)| {
            input
                .value
                .or(input.selected_option.map(|o| o.value))
                .map(|v| (action_id, v))
        })
        .collect();
    ViewSubmission {
        user: raw.user.id,
        view_id: raw.view.id,
        callback_id: raw.view.callback_id,
        private_metadata: raw.view.private_metadata,
        values,
    }
}

#[derive(Deserialize)]
struct Id {
    id: String,
}

#[derive(Deserialize)]
struct RawBlockActions {
    user: Id,
    channel: Option<Id>,
    container: Option<Container>,
    message: Option<RawMessage>,
    trigger_id: String,
    response_url: Option<String>,
    #[serde(default)]
    actions: Vec<RawAction>,
}

#[derive(Deserialize, Default)]
struct Container {
    channel_id: Option<String>,
    message_ts: Option<String>,
    thread_ts: Option<String>,
}

#[derive(Deserialize, Default)]
struct RawMessage {
    ts: Option<String>,
    thread_ts: Option<String>,
}

#[derive(Deserialize)]
struct RawAction {
    action_id: String,
    value: Option<String>,
    selected_option: Option<SelectedOption>,
}

#[derive(Deserialize)]
struct SelectedOption {
    value: String,
}

#[derive(Deserialize)]
struct RawViewSubmission {
    user: Id,
    view: RawView,
}

#[derive(Deserialize)]
struct RawView {
    id: String,
    #[serde(default)]
    callback_id: String,
    #[serde(default)]
    private_metadata: String,
    #[serde(default)]
    state: RawState,
}

#[derive(Deserialize, Default)]
struct RawState {
    /// block_id → action_id → input.
    #[serde(default)]
    values: BTreeMap<String, BTreeMap<String, RawInput>>,
}

#[derive(Deserialize)]
struct RawInput {
    value: Option<String>,
    selected_option: Option<SelectedOption>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUTTON: &str = include_str!("../../../tests/fixtures/slack/block_actions.button.json");
    const BUTTON_FORM: &str =
        include_str!("../../../tests/fixtures/slack/block_actions.button.form-urlencoded.txt");
    const BUTTON_WITH_MESSAGE: &str =
        include_str!("../../../tests/fixtures/slack/block_actions.button_with_message.json");

    fn form(payload: &str) -> Vec<u8> {
        serde_urlencoded::to_string([("payload", payload)])
            .unwrap()
            .into_bytes()
    }

    fn block_action(body: &[u8]) -> BlockAction {
        match parse_interaction(body).unwrap() {
            Interaction::BlockAction(action) => action,
            other => panic!("not a block action: {other:?}"),
        }
    }

    #[test]
    fn reads_a_button_click_as_slack_sends_it() {
        let expected = BlockAction {
            user: "W111".into(),
            channel: Some("C111".into()),
            message_ts: Some("111.222".into()),
            thread_ts: None,
            action_id: "a".into(),
            value: Some("click_me_123".into()),
            selected: None,
            trigger_id: "111.222.valid".into(),
            response_url: Some("https://hooks.slack.com/actions/T111/111/random-value".into()),
        };
        assert_eq!(block_action(BUTTON_FORM.trim_end().as_bytes()), expected);
        assert_eq!(block_action(&form(BUTTON)), expected);
    }

    #[test]
    fn reads_the_message_a_button_was_on() {
        let action = block_action(&form(BUTTON_WITH_MESSAGE));
        assert_eq!(action.user, "U111");
        assert_eq!(action.channel.as_deref(), Some("C111"));
        assert_eq!(action.message_ts.as_deref(), Some("1678252213.679169"));
        assert_eq!(action.action_id, "button");
        assert_eq!(action.value.as_deref(), Some("clicked"));
        assert_eq!(action.trigger_id, "4916855695380.xxx.yyy");
        assert_eq!(
            action.response_url.as_deref(),
            Some("http://localhost:8888/webhook")
        );
    }

    #[test]
    fn reads_threads_and_select_choices() {
        let mut value: serde_json::Value = serde_json::from_str(BUTTON_WITH_MESSAGE).unwrap();
        value["message"]["thread_ts"] = "1678252000.000100".into();
        value["actions"][0] = serde_json::json!({
            "type": "static_select",
            "action_id": "pick",
            "block_id": "b",
            "selected_option": {"text": {"type": "plain_text", "text": "build"}, "value": "build"},
            "action_ts": "1678252216.469172"
        });
        let action = block_action(&form(&value.to_string()));
        assert_eq!(action.thread_ts.as_deref(), Some("1678252000.000100"));
        assert_eq!(action.action_id, "pick");
        assert_eq!(
            (action.value, action.selected.as_deref()),
            (None, Some("build"))
        );
    }

    /// The documented `view_submission` shape (docs.slack.dev, "Handling user interaction
    /// in modals"), filled in with Gatehouse's send-back modal.
    const VIEW_SUBMISSION: &str = r#"{
        "type": "view_submission",
        "team": {"id": "T0CAG", "domain": "acme-creamery"},
        "user": {"id": "U0CA5", "username": "Amy McGee", "name": "Amy McGee", "team_id": "T3MDE"},
        "api_app_id": "A0CA5",
        "token": "Shh_its_a_seekrit",
        "trigger_id": "12345.98765.abcd2358fdea",
        "view": {
            "id": "VNHU13V36",
            "type": "modal",
            "title": {"type": "plain_text", "text": "Send back"},
            "submit": {"type": "plain_text", "text": "Send back"},
            "blocks": [],
            "private_metadata": "gh:send-back:0192f0c1-7a2b-7c3d-8e4f-001122334455:2:review",
            "callback_id": "gh:send-back:0192f0c1-7a2b-7c3d-8e4f-001122334455:2:review",
            "state": {
                "values": {
                    "target": {"target": {"type": "static_select", "selected_option": {"text": {"type": "plain_text", "text": "build"}, "value": "build"}}},
                    "comment": {"comment": {"type": "plain_text_input", "value": "name the error budget"}},
                    "empty": {"note": {"type": "plain_text_input", "value": null}}
                }
            },
            "hash": "156663117.cd33ad1f",
            "clear_on_close": false,
            "notify_on_close": false,
            "root_view_id": "VNHU13V36",
            "app_id": "AAD3351BQ",
            "external_id": "",
            "app_installed_team_id": "T3MDE",
            "bot_id": "BA13894H"
        },
        "response_urls": [],
        "is_enterprise_install": false
    }"#;

    #[test]
    fn reads_a_submitted_modal_by_action_id() {
        let Interaction::ViewSubmission(submission) =
            parse_interaction(&form(VIEW_SUBMISSION)).unwrap()
        else {
            panic!("not a view submission")
        };
        assert_eq!(submission.user, "U0CA5");
        assert_eq!(submission.view_id, "VNHU13V36");
        assert_eq!(
            submission.callback_id,
            "gh:send-back:0192f0c1-7a2b-7c3d-8e4f-001122334455:2:review"
        );
        assert_eq!(submission.private_metadata, submission.callback_id);
        assert_eq!(
            submission.values,
            BTreeMap::from([
                ("comment".to_owned(), "name the error budget".to_owned()),
                ("target".to_owned(), "build".to_owned()),
            ])
        );
    }

    #[test]
    fn other_kinds_pass_through_by_type() {
        assert_eq!(
            parse_interaction(&form(r#"{"type":"view_closed","user":{"id":"U1"}}"#)).unwrap(),
            Interaction::Other("view_closed".into())
        );
    }

    #[test]
    fn malformed_bodies_say_what_is_wrong() {
        assert!(matches!(
            parse_interaction(b"token=abc&team_id=T1"),
            Err(PayloadError::NoPayload)
        ));
        assert!(matches!(
            parse_interaction(br#"{"type":"block_actions"}"#),
            Err(PayloadError::NoPayload)
        ));
        assert!(matches!(
            parse_interaction(b"payload=%7Bnot-json"),
            Err(PayloadError::NotJson { .. })
        ));
        let mut value: serde_json::Value = serde_json::from_str(BUTTON).unwrap();
        value.as_object_mut().unwrap().remove("user");
        let missing = parse_interaction(&form(&value.to_string())).unwrap_err();
        assert!(missing.to_string().contains("`user`"), "{missing}");
        value = serde_json::from_str(BUTTON).unwrap();
        value["actions"] = serde_json::json!([]);
        assert!(matches!(
            parse_interaction(&form(&value.to_string())),
            Err(PayloadError::NoAction)
        ));
    }
}
