//! No log line carries the key, whatever happens to a request.

mod scene;

use std::sync::Arc;

use gatehouse_fake_providers::{Fault, Turn};
use secrecy::ExposeSecret;
use serde_json::json;

use scene::{KEY, Scene, post, read, spec};

/// A writer the log lines of one test go to.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn no_log_line_carries_the_key() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    // Global, in a test binary of its own: a scoped subscriber misses events whose
    // callsites other test threads registered first.
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");

    // A metered request, a provider refusing the key, a hang, an unreachable provider.
    let scene = Scene::start_with(vec![Turn::text("done")], KEY, |config| {
        config.first_byte_timeout = std::time::Duration::from_millis(200);
    })
    .await;
    let wrong = scene::serve(
        scene::providers(scene.fake.url(), "sk-ant-wrong-key-77"),
        |_| {},
    )
    .await;
    let closed = scene::serve(scene::providers("http://127.0.0.1:9", KEY), |_| {}).await;
    scene.fake.push_fault(Fault::Status(503));
    let body = json!({"model": "m", "messages": []});
    for (gateway, url) in [
        (&scene.gateway, &scene.url),
        (&scene.gateway, &scene.url),
        (&wrong.0, &wrong.1),
        (&closed.0, &closed.1),
    ] {
        let grant = gateway.grant(spec("anthropic")).expect("grant");
        let token = grant.token().expose_secret().to_owned();
        let target = format!("{url}/anthropic/v1/messages");
        read(post(&target, &[("x-api-key", &token)], &body).await).await;
    }
    scene.fake.push_fault(Fault::Hang);
    let grant = scene.gateway.grant(spec("anthropic")).expect("grant");
    let token = grant.token().expose_secret().to_owned();
    let target = format!("{}/anthropic/v1/messages", scene.url);
    let (status, _, _) = read(post(&target, &[("x-api-key", &token)], &body).await).await;
    assert_eq!(status, 504);

    let logs = String::from_utf8_lossy(&captured.0.lock().expect("log")).into_owned();
    for expected in [
        "model request metered",
        "refused the gateway's key",
        "unreachable",
        "timed out",
    ] {
        assert!(logs.contains(expected), "no `{expected}` in {logs}");
    }
    assert!(
        !logs.contains(KEY) && !logs.contains("sk-ant-wrong-key-77"),
        "{logs}"
    );
}
