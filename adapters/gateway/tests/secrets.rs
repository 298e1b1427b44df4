//! The key never shows: not in `Debug` output of the public types, not in errors, not in
//! anything the client receives.

mod scene;

use std::sync::Arc;

use gatehouse_fake_providers::{Fault, Turn};
use gatehouse_gateway::{Gateway, GatewayConfig, GatewayError, Provider, ProviderKind};
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use url::Url;

use scene::{Allowance, KEY, Scene, Sink, post, read, spec};

#[tokio::test]
async fn debug_output_and_errors_hold_no_key() {
    let scene = Scene::start(vec![Turn::text("done")]).await;
    let mut granted = spec("anthropic");
    granted.models = Some(vec!["claude-test".to_owned()]);
    granted.budget = Some(Allowance::new(5));
    granted.sink = Some(Arc::new(Sink::default()));
    let grant = scene.gateway.grant(granted.clone()).expect("grant");
    let provider = scene::providers("http://127.0.0.1:1", KEY).remove(0);
    let config = GatewayConfig::new(Url::parse("http://gw").expect("url"));
    let bad_url = Provider {
        base_url: Url::parse("ftp://x").expect("url"),
        ..provider.clone()
    };
    let errors = [
        Gateway::new(config.clone(), vec![bad_url]).expect_err("bad url"),
        Gateway::new(config.clone(), vec![provider.clone(), provider.clone()])
            .expect_err("duplicate"),
        scene
            .gateway
            .grant(spec("nobody"))
            .expect_err("unknown provider"),
    ];
    let mut shown = vec![
        format!("{:?}", scene.gateway),
        format!("{provider:?}"),
        format!("{:?}", provider.kind),
        format!("{grant:?}"),
        format!("{granted:?}"),
        format!("{config:?}"),
        format!("{:?}", grant.usage()),
    ];
    for error in &errors {
        shown.push(format!("{error:?}"));
        shown.push(error.to_string());
    }
    for text in &shown {
        assert!(!text.contains(KEY), "key in {text}");
        assert!(
            !text.contains(grant.token().expose_secret()),
            "token in {text}"
        );
    }
    assert!(matches!(errors[2], GatewayError::UnknownProvider(_)));
}

#[test]
fn a_key_that_cannot_be_a_header_is_refused_without_showing_it() {
    let key = "sk-line\nbreak";
    let provider = Provider {
        name: "p".to_owned(),
        kind: ProviderKind::OpenAi,
        base_url: Url::parse("https://api.openai.com").expect("url"),
        key: SecretString::from(key),
    };
    let config = GatewayConfig::new(Url::parse("http://gw").expect("url"));
    let error = Gateway::new(config, vec![provider]).expect_err("bad key");
    assert!(matches!(error, GatewayError::BadKey(_)));
    assert!(!format!("{error} {error:?}").contains("sk-line"));
}

#[tokio::test]
async fn no_answer_carries_the_key() {
    let scene = Scene::start(vec![Turn::text("done")]).await;
    let grant = scene.gateway.grant(spec("anthropic")).expect("grant");
    let token = grant.token().expose_secret().to_owned();
    let url = format!("{}/anthropic/v1/messages", scene.url);
    let ask = |stream: bool| json!({"model": "m", "stream": stream, "messages": []});
    scene.fake.push_fault(Fault::Status(500));
    scene.fake.push_fault(Fault::RateLimited { retry_after: 1 });
    let mut answers = Vec::new();
    for (headers, body) in [
        (vec![("x-api-key", token.as_str())], ask(true)),
        (vec![("x-api-key", token.as_str())], ask(true)),
        (vec![("x-api-key", token.as_str())], ask(true)),
        (vec![("x-api-key", token.as_str())], ask(false)),
        (vec![("x-api-key", "gh-gw-unknown")], ask(false)),
        (vec![], ask(false)),
    ] {
        answers.push(read(post(&url, &headers, &body).await).await);
    }
    answers.push(read(post(&format!("{}/nowhere", scene.url), &[], &ask(false)).await).await);
    for (status, headers, body) in &answers {
        let text = format!("{status} {headers} {}", String::from_utf8_lossy(body));
        assert!(!text.contains(KEY), "key in {text}");
    }
}
