//! The Web API client against a mock Slack: paths, token, request bodies, Slack's real
//! answer shapes, refusals, rate limits and server failures.

use std::time::{Duration, Instant};

use gatehouse_slack::{Message, SlackClient, SlackError, text_message};
use secrecy::SecretString;
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy";

async fn slack() -> (MockServer, SlackClient) {
    let server = MockServer::start().await;
    let client =
        SlackClient::new(&format!("{}/api", server.uri()), SecretString::from(TOKEN)).unwrap();
    (server, client)
}

fn ok(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

fn posted(ts: &str) -> ResponseTemplate {
    ok(json!({
        "ok": true,
        "channel": "C1",
        "ts": ts,
        "message": {
            "type": "message", "subtype": "bot_message", "text": "hello",
            "bot_id": "B1", "ts": ts,
            "metadata": {"event_type": "gatehouse", "event_payload": {"key": "k1"}}
        }
    }))
}

fn history(messages: Value, next_cursor: &str) -> ResponseTemplate {
    ok(json!({
        "ok": true,
        "messages": messages,
        "has_more": !next_cursor.is_empty(),
        "pin_count": 0,
        "response_metadata": {"next_cursor": next_cursor}
    }))
}

fn message() -> Message {
    text_message("hello")
}

#[tokio::test]
async fn post_message_sends_json_with_the_key_in_metadata() {
    let (server, client) = slack().await;
    Mock::given(method("POST"))
        .and(path("/api/chat.postMessage"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .and(header("content-type", "application/json; charset=utf-8"))
        .and(body_partial_json(json!({
            "channel": "C1",
            "thread_ts": "1700000000.000001",
            "text": "hello",
            "blocks": message().blocks,
            "metadata": {"event_type": "gatehouse", "event_payload": {"key": "k1"}}
        })))
        .respond_with(posted("1700000000.000100"))
        .expect(1)
        .mount(&server)
        .await;
    let ts = client
        .post_message("C1", Some("1700000000.000001"), &message(), "k1")
        .await
        .unwrap();
    assert_eq!(ts, "1700000000.000100");
}

#[tokio::test]
async fn refusals_are_api_errors() {
    let (server, client) = slack().await;
    Mock::given(path("/api/chat.postMessage"))
        .respond_with(ok(json!({"ok": false, "error": "channel_not_found"})))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(path("/api/auth.test"))
        .respond_with(ok(json!({"ok": false, "error": "invalid_auth"})))
        .expect(1)
        .mount(&server)
        .await;
    let refused = client.post_message("C404", None, &message(), "k1").await;
    assert_eq!(
        refused,
        Err(SlackError::Api {
            method: "chat.postMessage".into(),
            error: "channel_not_found".into()
        })
    );
    assert_eq!(
        refused.unwrap_err().to_string(),
        "Slack refused chat.postMessage: channel_not_found"
    );
    assert!(matches!(
        client.bot_user_id().await,
        Err(SlackError::Api { error, .. }) if error == "invalid_auth"
    ));
}

#[tokio::test]
async fn rate_limits_are_waited_out() {
    let (server, client) = slack().await;
    Mock::given(path("/api/chat.update"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_json(json!({"ok": false, "error": "ratelimited"})),
        )
        .up_to_n_times(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(path("/api/chat.update"))
        .respond_with(ok(
            json!({"ok": true, "channel": "C1", "ts": "1.2", "text": "hello"}),
        ))
        .expect(1)
        .mount(&server)
        .await;
    let begin = Instant::now();
    client
        .update_message("C1", "1.2", &message())
        .await
        .unwrap();
    assert!(
        begin.elapsed() >= Duration::from_secs(1),
        "{:?}",
        begin.elapsed()
    );
}

#[tokio::test]
async fn long_rate_limits_are_left_for_later() {
    let (server, client) = slack().await;
    Mock::given(path("/api/chat.postEphemeral"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "120")
                .set_body_json(json!({"ok": false, "error": "ratelimited"})),
        )
        .expect(1)
        .mount(&server)
        .await;
    let begin = Instant::now();
    let error = client
        .post_ephemeral("C1", "U1", None, "no")
        .await
        .unwrap_err();
    assert!(matches!(error, SlackError::Unavailable(_)), "{error}");
    assert!(error.to_string().contains("rate-limited"), "{error}");
    assert!(begin.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn server_errors_are_retried_then_reported_unavailable() {
    let (server, client) = slack().await;
    Mock::given(path("/api/chat.update"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(path("/api/chat.update"))
        .respond_with(ok(json!({"ok": true, "channel": "C1", "ts": "1.2"})))
        .mount(&server)
        .await;
    client
        .update_message("C1", "1.2", &message())
        .await
        .unwrap();

    Mock::given(path("/api/views.open"))
        .respond_with(ResponseTemplate::new(500))
        .expect(3)
        .mount(&server)
        .await;
    let error = client
        .open_view("t.1", &json!({"type": "modal"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, SlackError::Unavailable(why) if why.contains("500")),
        "{error}"
    );
}

#[tokio::test]
async fn a_post_slack_kept_despite_failing_is_not_repeated() {
    let (server, client) = slack().await;
    Mock::given(path("/api/chat.postMessage"))
        .respond_with(ResponseTemplate::new(500))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/api/conversations.history"))
        .and(query_param("channel", "C1"))
        .respond_with(history(
            json!([{
                "type": "message", "subtype": "bot_message", "text": "hello", "ts": "1700000000.000100",
                "bot_id": "B1",
                "metadata": {"event_type": "gatehouse", "event_payload": {"key": "k1"}}
            }]),
            "",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let ts = client
        .post_message("C1", None, &message(), "k1")
        .await
        .unwrap();
    assert_eq!(ts, "1700000000.000100");
}

#[tokio::test]
async fn a_failed_post_slack_did_not_keep_is_posted_again() {
    let (server, client) = slack().await;
    Mock::given(path("/api/chat.postMessage"))
        .respond_with(ResponseTemplate::new(502))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(path("/api/chat.postMessage"))
        .respond_with(posted("1700000000.000200"))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(path("/api/conversations.replies"))
        .and(query_param("ts", "1700000000.000001"))
        .respond_with(history(json!([]), ""))
        .expect(1)
        .mount(&server)
        .await;
    let ts = client
        .post_message("C1", Some("1700000000.000001"), &message(), "k1")
        .await
        .unwrap();
    assert_eq!(ts, "1700000000.000200");
}

#[tokio::test]
async fn find_message_follows_pages_to_the_key() {
    let (server, client) = slack().await;
    let common = |m: wiremock::MockBuilder| {
        m.and(method("GET"))
            .and(path("/api/conversations.history"))
            .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
            .and(query_param("channel", "C1"))
            .and(query_param("include_all_metadata", "true"))
            .and(query_param("oldest", "1700000000.000000"))
            .and(query_param("limit", "200"))
    };
    common(Mock::given(query_param(
        "cursor",
        "bmV4dF90czoxNTEyMDg1ODYxMDAwNTQz",
    )))
    .respond_with(history(
        json!([
            {"type": "message", "user": "U1", "text": "hi", "ts": "1700000001.000001"},
            {"type": "message", "bot_id": "B1", "text": "card", "ts": "1700000000.000100",
             "metadata": {"event_type": "gatehouse", "event_payload": {"key": "k2"}}}
        ]),
        "",
    ))
    .expect(2)
    .mount(&server)
    .await;
    common(Mock::given(wiremock::matchers::query_param_is_missing(
        "cursor",
    )))
    .respond_with(history(
        json!([
            {"type": "message", "user": "U1", "text": "hi", "ts": "1700000002.000001"},
            {"type": "message", "bot_id": "B9", "text": "other app", "ts": "1700000001.500000",
             "metadata": {"event_type": "task_created", "event_payload": {"key": "k2", "n": 3}}},
            {"type": "message", "bot_id": "B1", "text": "older card", "ts": "1700000001.000100",
             "metadata": {"event_type": "gatehouse", "event_payload": {"key": "k1"}}}
        ]),
        "bmV4dF90czoxNTEyMDg1ODYxMDAwNTQz",
    ))
    .expect(3)
    .mount(&server)
    .await;
    let found = client
        .find_message("C1", None, "k2", "1700000000.000000")
        .await
        .unwrap();
    assert_eq!(found.as_deref(), Some("1700000000.000100"));
    let on_first_page = client
        .find_message("C1", None, "k1", "1700000000.000000")
        .await
        .unwrap();
    assert_eq!(on_first_page.as_deref(), Some("1700000001.000100"));
    let missing = client
        .find_message("C1", None, "k3", "1700000000.000000")
        .await
        .unwrap();
    assert_eq!(missing, None);
}

#[tokio::test]
async fn find_message_in_a_thread_reads_the_replies() {
    let (server, client) = slack().await;
    Mock::given(method("GET"))
        .and(path("/api/conversations.replies"))
        .and(query_param("channel", "C1"))
        .and(query_param("ts", "1700000000.000001"))
        .and(query_param("include_all_metadata", "true"))
        .respond_with(history(
            json!([
                {"type": "message", "user": "U1", "text": "run it", "ts": "1700000000.000001",
                 "thread_ts": "1700000000.000001", "reply_count": 1},
                {"type": "message", "bot_id": "B1", "text": "progress", "ts": "1700000000.000300",
                 "thread_ts": "1700000000.000001",
                 "metadata": {"event_type": "gatehouse", "event_payload": {"key": "progress:1"}}}
            ]),
            "",
        ))
        .mount(&server)
        .await;
    let thread = Some("1700000000.000001");
    assert_eq!(
        client
            .find_message("C1", thread, "progress:1", "1700000000.000000")
            .await
            .unwrap()
            .as_deref(),
        Some("1700000000.000300")
    );
    assert_eq!(
        client
            .find_message("C1", thread, "progress:2", "1700000000.000000")
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn the_other_methods_hit_their_paths() {
    let (server, client) = slack().await;
    let bearer = format!("Bearer {TOKEN}");
    Mock::given(method("POST"))
        .and(path("/api/chat.update"))
        .and(header("authorization", bearer.as_str()))
        .and(body_partial_json(
            json!({"channel": "C1", "ts": "1.2", "text": "hello"}),
        ))
        .respond_with(ok(json!({
            "ok": true, "channel": "C1", "ts": "1.2", "text": "hello",
            "message": {"text": "hello", "user": "U34567890"}
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/chat.postEphemeral"))
        .and(header("authorization", bearer.as_str()))
        .and(body_partial_json(json!({
            "channel": "C1", "user": "U1", "thread_ts": "1.1", "text": "You may not approve your own work."
        })))
        .respond_with(ok(json!({"ok": true, "message_ts": "1502210682.580145"})))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/views.open"))
        .and(header("authorization", bearer.as_str()))
        .and(body_partial_json(
            json!({"trigger_id": "12345.98765.abcd2358fdea", "view": {"type": "modal"}}),
        ))
        .respond_with(ok(json!({
            "ok": true,
            "view": {"id": "VMHU10V25", "team_id": "T8N4K1JN", "type": "modal", "callback_id": "x"}
        })))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/auth.test"))
        .and(header("authorization", bearer.as_str()))
        .respond_with(ok(json!({
            "ok": true, "url": "https://subarachnoid.slack.com/", "team": "Subarachnoid Workspace",
            "user": "gatehouse", "team_id": "T12345678", "user_id": "W12345678", "bot_id": "B1"
        })))
        .expect(1)
        .mount(&server)
        .await;
    client
        .update_message("C1", "1.2", &message())
        .await
        .unwrap();
    client
        .post_ephemeral(
            "C1",
            "U1",
            Some("1.1"),
            "You may not approve your own work.",
        )
        .await
        .unwrap();
    client
        .open_view(
            "12345.98765.abcd2358fdea",
            &json!({"type": "modal", "callback_id": "x"}),
        )
        .await
        .unwrap();
    assert_eq!(client.bot_user_id().await.unwrap(), "W12345678");
}

#[tokio::test]
async fn posts_to_one_channel_are_spaced_a_second_apart() {
    let (server, client) = slack().await;
    Mock::given(path("/api/chat.postMessage"))
        .respond_with(posted("1.1"))
        .expect(3)
        .mount(&server)
        .await;
    let begin = Instant::now();
    client
        .post_message("C1", None, &message(), "a")
        .await
        .unwrap();
    client
        .post_message("C2", None, &message(), "b")
        .await
        .unwrap();
    assert!(begin.elapsed() < Duration::from_millis(900));
    client
        .post_message("C1", None, &message(), "c")
        .await
        .unwrap();
    assert!(begin.elapsed() >= Duration::from_secs(1));
}

#[test]
fn setup_problems_are_named() {
    for (url, token) in [
        ("not a url", TOKEN),
        ("ftp://slack.com/api", TOKEN),
        ("https://slack.com/api", " "),
    ] {
        let error = SlackClient::new(url, SecretString::from(token)).unwrap_err();
        assert!(matches!(error, SlackError::Setup(_)), "{error}");
    }
    assert!(SlackClient::new("https://slack.com/api/", SecretString::from(TOKEN)).is_ok());
    let debug = format!(
        "{:?}",
        SlackClient::new("https://slack.com/api", SecretString::from(TOKEN)).unwrap()
    );
    assert!(!debug.contains(TOKEN), "{debug}");
}
