//! The scene of the gateway's tests: a fake provider behind a gateway on loopback, both with
//! real HTTP, and a plain client.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use gatehouse_fake_providers::{FakeProvider, Turn};
use gatehouse_gateway::{
    Admission, Budget, Gateway, GatewayConfig, GrantSpec, Metered, Provider, ProviderKind, Ticket,
    Usage, UsageSink,
};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use secrecy::SecretString;
use serde_json::Value;
use url::Url;

/// The real key: it must reach the fake and nothing else.
pub const KEY: &str = "sk-ant-real-provider-key-0123456789abcdef";

pub struct Scene {
    pub fake: FakeProvider,
    pub gateway: Gateway,
    pub url: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

pub fn providers(fake_url: &str, key: &str) -> Vec<Provider> {
    let provider = |name: &str, kind, base: String| Provider {
        name: name.to_owned(),
        kind,
        base_url: Url::parse(&base).expect("url"),
        key: SecretString::from(key.to_owned()),
    };
    vec![
        provider("anthropic", ProviderKind::Anthropic, fake_url.to_owned()),
        provider("openai", ProviderKind::OpenAi, format!("{fake_url}/v1")),
        provider("local", ProviderKind::OpenAiCompatible, fake_url.to_owned()),
        provider("gemini", ProviderKind::Gemini, fake_url.to_owned()),
    ]
}

impl Scene {
    pub async fn start(turns: Vec<Turn>) -> Self {
        Self::start_with(turns, KEY, |_| {}).await
    }

    /// A scene whose gateway holds `gateway_key` and whose config `tune` changes.
    pub async fn start_with(
        turns: Vec<Turn>,
        gateway_key: &str,
        tune: impl FnOnce(&mut GatewayConfig),
    ) -> Self {
        let fake = FakeProvider::start(KEY, turns).await;
        let (gateway, url, stop) = serve(providers(fake.url(), gateway_key), tune).await;
        Self {
            fake,
            gateway,
            url,
            _stop: stop,
        }
    }
}

/// Serves a gateway for `providers` on a free loopback port until `stop` is dropped.
pub async fn serve(
    providers: Vec<Provider>,
    tune: impl FnOnce(&mut GatewayConfig),
) -> (Gateway, String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let mut config = GatewayConfig::new(Url::parse(&url).expect("url"));
    tune(&mut config);
    let gateway = Gateway::new(config, providers).expect("gateway");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = gateway.clone();
    tokio::spawn(async move {
        serving
            .serve(listener, async {
                let _ = stopped.await;
            })
            .await
    });
    (gateway, url, stop)
}

pub fn spec(provider: &str) -> GrantSpec {
    GrantSpec {
        label: "attempt-1".to_owned(),
        provider: provider.to_owned(),
        models: None,
        budget: None,
        sink: None,
    }
}

pub fn client() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

/// Sends a JSON POST with these headers.
pub async fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> hyper::Response<Incoming> {
    let mut request = hyper::Request::post(url).header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request");
    client().request(request).await.expect("answer")
}

/// The whole answer: status, headers as text, body.
pub async fn read(response: hyper::Response<Incoming>) -> (u16, String, Bytes) {
    let status = response.status().as_u16();
    let headers = format!("{:?}", response.headers());
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (status, headers, body)
}

pub fn json(body: &[u8]) -> Value {
    serde_json::from_slice(body).expect("json body")
}

/// Records each metered request.
#[derive(Default)]
pub struct Sink(pub Mutex<Vec<Metered>>);

impl UsageSink for Sink {
    fn record(&self, metered: &Metered) {
        self.0.lock().expect("sink").push(metered.clone());
    }
}

impl Sink {
    pub fn records(&self) -> Vec<Metered> {
        self.0.lock().expect("sink").clone()
    }

    /// Waits until `n` requests were recorded (a body's end is recorded as the client
    /// reads it, which may be just after the client has it).
    pub async fn wait_for(&self, n: usize) -> Vec<Metered> {
        for _ in 0..200 {
            let records = self.records();
            if records.len() >= n {
                return records;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.records()
    }
}

/// A budget that admits while `left` requests remain and records the models asked for and
/// the charges, by ticket.
pub struct Allowance {
    pub left: Mutex<u32>,
    pub asked: Mutex<Vec<Option<String>>>,
    pub charged: Mutex<Vec<Usage>>,
    pub tickets: Mutex<Vec<Ticket>>,
}

impl Allowance {
    pub fn new(left: u32) -> Arc<Self> {
        Arc::new(Self {
            left: Mutex::new(left),
            asked: Mutex::new(Vec::new()),
            charged: Mutex::new(Vec::new()),
            tickets: Mutex::new(Vec::new()),
        })
    }
}

impl Budget for Allowance {
    fn admit<'a>(&'a self, model: Option<&'a str>) -> Admission<'a> {
        Box::pin(async move {
            self.asked
                .lock()
                .expect("budget")
                .push(model.map(str::to_owned));
            let mut left = self.left.lock().expect("budget");
            if *left == 0 {
                return Err("budget of project api reached: $20.00 today".to_owned());
            }
            *left -= 1;
            Ok(Ticket(u128::from(*left)))
        })
    }

    fn charge(&self, ticket: Ticket, usage: &Usage) {
        self.tickets.lock().expect("budget").push(ticket);
        self.charged.lock().expect("budget").push(usage.clone());
    }
}
