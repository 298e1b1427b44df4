//! Requests through the gateway to a fake provider: the key swap, streaming without
//! buffering, the token, model and budget checks, and the provider's faults.

mod scene;

use std::sync::Arc;
use std::time::{Duration, Instant};

use gatehouse_fake_providers::{Fault, Turn, sse};
use http_body_util::BodyExt;
use secrecy::ExposeSecret;
use serde_json::json;

use gatehouse_gateway::Ticket;
use scene::{Allowance, KEY, Scene, Sink, json, post, read, spec};

fn ask(stream: bool) -> serde_json::Value {
    json!({"model": "claude-test", "stream": stream, "max_tokens": 64,
        "messages": [{"role": "user", "content": "hi"}]})
}

#[tokio::test]
async fn events_arrive_as_the_provider_sends_them() {
    let scene = Scene::start(vec![Turn::text("a long enough answer to stream in pieces")]).await;
    let grant = scene.gateway.grant(spec("anthropic")).expect("grant");
    let token = grant.token().expose_secret().to_owned();
    scene.fake.push_fault(Fault::Pause {
        after: 1,
        pause: Duration::from_millis(300),
    });
    let started = Instant::now();
    let response = post(
        &format!("{}/anthropic/v1/messages", scene.url),
        &[("x-api-key", &token), ("anthropic-version", "2023-06-01")],
        &ask(true),
    )
    .await;
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut reader = sse::Reader::default();
    let mut events = Vec::new();
    while events.is_empty() {
        let frame = body.frame().await.expect("a frame").expect("data");
        events.extend(frame.data_ref().map(|d| reader.push(d)).unwrap_or_default());
    }
    let first = started.elapsed();
    assert_eq!(events[0].event.as_deref(), Some("message_start"));
    assert!(
        first < Duration::from_millis(200),
        "first event after {first:?}"
    );
    while let Some(frame) = body.frame().await {
        events.extend(
            frame
                .expect("data")
                .data_ref()
                .map(|d| reader.push(d))
                .unwrap_or_default(),
        );
    }
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(
        events.last().and_then(|e| e.event.as_deref()),
        Some("message_stop")
    );
}

#[tokio::test]
async fn the_provider_sees_the_key_and_the_client_only_the_token() {
    let scene = Scene::start(vec![Turn::text("done")]).await;
    let anthropic = scene.gateway.grant(spec("anthropic")).expect("grant");
    let openai = scene.gateway.grant(spec("openai")).expect("grant");
    let env = anthropic.environment();
    let base = &env
        .iter()
        .find(|(k, _)| k == "ANTHROPIC_BASE_URL")
        .expect("base")
        .1;
    let token = &env
        .iter()
        .find(|(k, _)| k == "ANTHROPIC_API_KEY")
        .expect("key")
        .1;
    assert_eq!(base, &format!("{}/anthropic", scene.url));
    assert!(token.starts_with("gh-gw-"));
    let env = openai.environment();
    let openai_base = &env
        .iter()
        .find(|(k, _)| k == "OPENAI_BASE_URL")
        .expect("base")
        .1;
    let openai_token = &env
        .iter()
        .find(|(k, _)| k == "OPENAI_API_KEY")
        .expect("key")
        .1;
    assert_eq!(openai_base, &format!("{}/openai/v1", scene.url));

    let (status, headers, body) = read(
        post(
            &format!("{base}/v1/messages?beta=true"),
            &[("x-api-key", token)],
            &ask(true),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200);
    let bearer = format!("Bearer {openai_token}");
    let (status2, headers2, body2) = read(
        post(
            &format!("{openai_base}/responses"),
            &[("authorization", &bearer)],
            &json!({"model": "gpt-test", "input": "hi"}),
        )
        .await,
    )
    .await;
    assert_eq!(status2, 200);

    let requests = scene.fake.requests();
    assert_eq!(requests[0].path, "/v1/messages?beta=true");
    assert_eq!(requests[0].header("x-api-key"), Some(KEY));
    assert_eq!(requests[0].header("authorization"), None);
    assert_eq!(requests[1].path, "/v1/responses");
    assert_eq!(
        requests[1].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(requests[1].header("x-api-key"), None);
    for request in &requests {
        let seen = format!("{:?} {}", request.headers, request.body);
        assert!(
            !seen.contains("gh-gw-"),
            "a token reached the provider: {seen}"
        );
    }
    for seen in [
        headers,
        headers2,
        String::from_utf8_lossy(&body).into_owned(),
        String::from_utf8_lossy(&body2).into_owned(),
    ] {
        assert!(!seen.contains(KEY));
    }
}

#[tokio::test]
async fn unknown_revoked_dropped_and_other_tokens_are_refused() {
    let scene = Scene::start(vec![Turn::text("done")]).await;
    let url = format!("{}/anthropic/v1/messages", scene.url);
    let refused = |token: String| {
        let url = url.clone();
        async move {
            let (status, _, body) =
                read(post(&url, &[("x-api-key", &token)], &ask(false)).await).await;
            (status, json(&body))
        }
    };

    let (status, body) = refused(format!("gh-gw-{}", "0".repeat(64))).await;
    assert_eq!(status, 401);
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "authentication_error");

    let revoked = scene.gateway.grant(spec("anthropic")).expect("grant");
    let token = revoked.token().expose_secret().to_owned();
    assert_eq!(refused(token.clone()).await.0, 200);
    revoked.revoke();
    assert_eq!(refused(token).await.0, 401);

    let dropped = scene.gateway.grant(spec("anthropic")).expect("grant");
    let token = dropped.token().expose_secret().to_owned();
    drop(dropped);
    assert_eq!(refused(token).await.0, 401);

    let other = scene.gateway.grant(spec("openai")).expect("grant");
    let (status, _) = refused(other.token().expose_secret().to_owned()).await;
    assert_eq!(status, 401);

    // A missing token, and OpenAI's shape on OpenAI's path.
    let (status, _, body) = read(
        post(
            &format!("{}/openai/v1/responses", scene.url),
            &[],
            &json!({}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(json(&body)["error"]["code"], "invalid_api_key");
    assert_eq!(
        scene.fake.requests().len(),
        1,
        "only the granted request went through"
    );
}

#[tokio::test]
async fn paths_naming_no_provider_are_404_in_the_providers_shape() {
    let scene = Scene::start(vec![Turn::text("done")]).await;
    let grant = scene.gateway.grant(spec("anthropic")).expect("grant");
    let token = grant.token().expose_secret().to_owned();
    let (status, _, body) = read(
        post(
            &format!("{}/v1/messages", scene.url),
            &[("x-api-key", &token)],
            &ask(false),
        )
        .await,
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(json(&body)["error"]["type"], "not_found_error");
    let (status, _, body) = read(
        post(
            &format!("{}/nobody/v1/responses", scene.url),
            &[],
            &json!({}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 404);
    assert!(json(&body)["error"]["message"].as_str().is_some());
    let climbing = format!("{}/anthropic/v1/%2e%2E/admin", scene.url);
    let (status, _, _) = read(post(&climbing, &[("x-api-key", &token)], &ask(false)).await).await;
    assert_eq!(status, 404);
    assert!(scene.fake.requests().is_empty());
}

#[tokio::test]
async fn models_outside_the_grants_list_are_refused() {
    let scene = Scene::start(vec![Turn::text("done")]).await;
    let mut allowed = spec("anthropic");
    allowed.models = Some(vec!["claude-test".to_owned(), "claude-small".to_owned()]);
    let grant = scene.gateway.grant(allowed).expect("grant");
    let token = grant.token().expose_secret().to_owned();
    let url = format!("{}/anthropic/v1/messages", scene.url);
    let mut other = ask(false);
    other["model"] = json!("claude-huge");
    let (status, _, body) = read(post(&url, &[("x-api-key", &token)], &other).await).await;
    assert_eq!(status, 403);
    let message = json(&body)["error"]["message"]
        .as_str()
        .expect("message")
        .to_owned();
    assert!(
        message.contains("claude-huge") && message.contains("claude-test, claude-small"),
        "{message}"
    );
    assert!(scene.fake.requests().is_empty());
    let (status, _, _) = read(post(&url, &[("x-api-key", &token)], &ask(false)).await).await;
    assert_eq!(status, 200);
}

/// Gemini names its model in the path: the allow-list reads it there, and refusals come in
/// Google's error shape.
#[tokio::test]
async fn geminis_model_is_read_from_its_path_and_refused_in_googles_shape() {
    let scene = Scene::start(vec![Turn::text("done")]).await;
    let mut allowed = spec("gemini");
    allowed.models = Some(vec!["gemini-small".to_owned()]);
    let grant = scene.gateway.grant(allowed).expect("grant");
    let token = grant.token().expose_secret().to_owned();
    let url = |model: &str| format!("{}/gemini/v1beta/models/{model}:generateContent", scene.url);
    let body = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]});
    let (status, _, answer) =
        read(post(&url("gemini-huge"), &[("x-goog-api-key", &token)], &body).await).await;
    assert_eq!(status, 403);
    let error = &json(&answer)["error"];
    assert_eq!(error["status"], "PERMISSION_DENIED");
    assert_eq!(error["code"], 403);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("gemini-huge"))
    );
    let (status, _, answer) = read(
        post(
            &url("gemini-small"),
            &[("x-goog-api-key", "gh-gw-forged")],
            &body,
        )
        .await,
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(json(&answer)["error"]["status"], "UNAUTHENTICATED");
    assert!(scene.fake.requests().is_empty());
    let (status, _, _) =
        read(post(&url("gemini-small"), &[("x-goog-api-key", &token)], &body).await).await;
    assert_eq!(status, 200);
    let seen = scene.fake.requests();
    assert_eq!(seen[0].header("x-goog-api-key"), Some(scene::KEY));
}

#[tokio::test]
async fn a_budget_refuses_with_its_message_and_is_charged_what_passed() {
    let scene = Scene::start(vec![Turn::text("done")]).await;
    let budget = Allowance::new(1);
    let mut granted = spec("openai");
    granted.budget = Some(budget.clone());
    let grant = scene.gateway.grant(granted).expect("grant");
    let bearer = format!("Bearer {}", grant.token().expose_secret());
    let url = format!("{}/openai/v1/responses", scene.url);
    let body = json!({"model": "gpt-test", "input": "hi"});
    let (status, _, _) = read(post(&url, &[("authorization", &bearer)], &body).await).await;
    assert_eq!(status, 200);
    let (status, _, answer) = read(post(&url, &[("authorization", &bearer)], &body).await).await;
    assert_eq!(status, 403);
    let answer = json(&answer);
    assert_eq!(
        answer["error"]["message"],
        "budget of project api reached: $20.00 today"
    );
    assert_eq!(answer["error"]["code"], "insufficient_quota");
    assert_eq!(scene.fake.requests().len(), 1);
    let charged = budget.charged.lock().expect("charged").clone();
    assert_eq!(charged.len(), 1);
    assert_eq!((charged[0].input, charged[0].output), (10, 5));
    let asked = budget.asked.lock().expect("asked").clone();
    assert_eq!(
        asked,
        [Some("gpt-test".to_owned()), Some("gpt-test".to_owned())]
    );
    assert_eq!(*budget.tickets.lock().expect("tickets"), [Ticket(0)]);
}

#[tokio::test]
async fn an_admitted_request_that_fails_upstream_is_charged_nothing_once() {
    let scene = Scene::start_with(vec![Turn::text("done")], KEY, |config| {
        config.first_byte_timeout = Duration::from_millis(300);
    })
    .await;
    let budget = Allowance::new(3);
    let mut granted = spec("openai");
    granted.budget = Some(budget.clone());
    let grant = scene.gateway.grant(granted).expect("grant");
    let bearer = format!("Bearer {}", grant.token().expose_secret());
    scene.fake.push_fault(Fault::Hang);
    let (status, _, _) = read(
        post(
            &format!("{}/openai/v1/responses", scene.url),
            &[("authorization", &bearer)],
            &json!({"model": "m", "input": "hi"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 504);
    // The ticket is given back, with no usage, exactly once.
    assert_eq!(*budget.tickets.lock().expect("tickets"), [Ticket(2)]);
    assert_eq!(
        *budget.charged.lock().expect("charged"),
        [gatehouse_gateway::Usage::default()]
    );
}

#[tokio::test]
async fn provider_errors_pass_through_as_they_are() {
    let scene = Scene::start(vec![Turn::text("done")]).await;
    let grant = scene.gateway.grant(spec("anthropic")).expect("grant");
    let token = grant.token().expose_secret().to_owned();
    let url = format!("{}/anthropic/v1/messages", scene.url);
    scene.fake.push_fault(Fault::Status(529));
    scene
        .fake
        .push_fault(Fault::RateLimited { retry_after: 17 });
    let response = post(&url, &[("x-api-key", &token)], &ask(true)).await;
    assert_eq!(response.status(), 529);
    let (_, _, body) = read(response).await;
    assert_eq!(json(&body)["error"]["type"], "overloaded_error");
    let response = post(&url, &[("x-api-key", &token)], &ask(true)).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "17");
    let (_, _, body) = read(response).await;
    assert_eq!(json(&body)["error"]["type"], "rate_limit_error");
}

#[tokio::test]
async fn a_provider_that_never_answers_gives_504() {
    let scene = Scene::start_with(vec![Turn::text("done")], KEY, |config| {
        config.first_byte_timeout = Duration::from_millis(300);
    })
    .await;
    let grant = scene.gateway.grant(spec("openai")).expect("grant");
    let bearer = format!("Bearer {}", grant.token().expose_secret());
    scene.fake.push_fault(Fault::Hang);
    let started = Instant::now();
    let (status, _, body) = read(
        post(
            &format!("{}/openai/v1/responses", scene.url),
            &[("authorization", &bearer)],
            &json!({"model": "m", "input": "hi"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 504);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(json(&body)["error"]["type"], "server_error");
}

#[tokio::test]
async fn a_provider_refusing_the_key_is_reported_without_it() {
    let wrong = "sk-ant-wrong-key-that-must-not-leak-42";
    let scene = Scene::start_with(vec![Turn::text("done")], wrong, |_| {}).await;
    let grant = scene.gateway.grant(spec("anthropic")).expect("grant");
    let token = grant.token().expose_secret().to_owned();
    let (status, headers, body) = read(
        post(
            &format!("{}/anthropic/v1/messages", scene.url),
            &[("x-api-key", &token)],
            &ask(false),
        )
        .await,
    )
    .await;
    assert_eq!(status, 401);
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains("refused Gatehouse's key"), "{text}");
    assert!(!text.contains(wrong) && !headers.contains(wrong));
}

#[tokio::test]
async fn request_bodies_are_bounded() {
    let scene = Scene::start_with(vec![Turn::text("done")], KEY, |config| {
        config.max_request_body = 1024;
    })
    .await;
    let grant = scene.gateway.grant(spec("anthropic")).expect("grant");
    let token = grant.token().expose_secret().to_owned();
    let mut big = ask(false);
    big["messages"][0]["content"] = json!("x".repeat(4096));
    let (status, _, body) = read(
        post(
            &format!("{}/anthropic/v1/messages", scene.url),
            &[("x-api-key", &token)],
            &big,
        )
        .await,
    )
    .await;
    assert_eq!(status, 413);
    assert_eq!(json(&body)["error"]["type"], "request_too_large");
    assert!(scene.fake.requests().is_empty());
}

#[tokio::test]
async fn a_cut_stream_reaches_the_client_cut_and_records_what_was_seen() {
    let scene = Scene::start(vec![Turn::text("done").tokens(
        gatehouse_fake_providers::Tokens {
            input: 42,
            output: 9,
            cache_read: 3,
            cache_write: 4,
            reasoning: 0,
        },
    )])
    .await;
    let sink = Arc::new(Sink::default());
    let mut granted = spec("anthropic");
    granted.sink = Some(sink.clone());
    let grant = scene.gateway.grant(granted).expect("grant");
    let token = grant.token().expose_secret().to_owned();
    scene.fake.push_fault(Fault::Cut { after: 2 });
    let response = post(
        &format!("{}/anthropic/v1/messages", scene.url),
        &[("x-api-key", &token)],
        &ask(true),
    )
    .await;
    let ended = response.into_body().collect().await;
    assert!(ended.is_err(), "the client sees the cut");
    let records = sink.wait_for(1).await;
    assert_eq!(records.len(), 1);
    assert!(!records[0].complete);
    let usage = &records[0].usage;
    assert_eq!(
        (usage.input, usage.cache_read, usage.cache_write),
        (42, 3, 4)
    );
    assert_eq!(
        usage.output, 1,
        "message_start's count; message_delta never came"
    );
    assert_eq!(grant.usage().requests, 1);
}
