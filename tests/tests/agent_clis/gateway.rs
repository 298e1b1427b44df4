//! A gateway on loopback in front of a fake provider, and one attempt's grant of it.

use gatehouse_gateway::{Gateway, GatewayConfig, Grant, GrantSpec, Provider, ProviderKind};
use secrecy::SecretString;
use url::Url;

/// The real provider key: the gateway holds it and the fake requires it; no CLI may see it.
pub const REAL_KEY: &str = "sk-test-REAL-provider-key-7d1f0c9a2b4e";

/// A grant of a served gateway's one provider; dropping it revokes the grant and stops the
/// gateway.
pub struct Fronted {
    pub grant: Grant,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// Serves a gateway on a free loopback port fronting the provider `name` of `kind` at
/// `base_url` with [`REAL_KEY`], and grants it to one attempt.
pub async fn front(name: &str, kind: ProviderKind, base_url: &str) -> Fronted {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let config = GatewayConfig::new(Url::parse(&url).expect("url"));
    let provider = Provider {
        name: name.to_owned(),
        kind,
        base_url: Url::parse(base_url).expect("url"),
        key: SecretString::from(REAL_KEY.to_owned()),
    };
    let gateway = Gateway::new(config, vec![provider]).expect("gateway");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = gateway.clone();
    tokio::spawn(async move {
        serving
            .serve(listener, async {
                let _ = stopped.await;
            })
            .await;
    });
    let grant = gateway
        .grant(GrantSpec {
            label: "attempt-1".to_owned(),
            provider: name.to_owned(),
            models: None,
            budget: None,
            sink: None,
        })
        .expect("grant");
    Fronted { grant, _stop: stop }
}

/// The value of `name` in an environment.
pub fn var<'a>(environment: &'a [(String, String)], name: &str) -> &'a str {
    environment
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("{name} is not in the environment"))
}
