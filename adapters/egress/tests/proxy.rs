//! The proxy over real sockets: tunnels to a local upstream (loopback explicitly allowed),
//! refusals of hosts not listed, of private addresses however they are named, of methods
//! other than CONNECT and of unknown tokens; the bounds; a Unix-socket listener; shutdown.

mod common;

use std::time::Duration;

use base64::Engine as _;
use std::sync::atomic::Ordering;

use common::{GREETING, Proxy, Scripted, ask, connect, read_n, read_to_end, upstream};
use gatehouse_egress::{
    Admission, Connection, Egress, Grants, Limits, Pattern, Policy, Refusal, Verdict,
};
use tokio::io::AsyncWriteExt;

fn policy(entries: &[&str]) -> Policy {
    Policy::new(
        entries
            .iter()
            .map(|e| Pattern::parse(e).expect("a pattern")),
    )
}

fn with_loopback(policy: Policy) -> Policy {
    policy
        .with_private_networks([Policy::parse_network("127.0.0.1/32").expect("a network")])
        .expect("loopback is private")
}

fn refusal(record: &Connection) -> &Refusal {
    match &record.verdict {
        Verdict::Refused(refusal) => refusal,
        Verdict::Allowed => panic!("expected a refusal, got {record:?}"),
    }
}

#[tokio::test]
async fn an_allowed_tunnel_carries_bytes_both_ways_and_is_recorded() {
    let up = upstream().await;
    let target = format!("127.0.0.1:{}", up.port());
    let policy = with_loopback(policy(&[&format!("ip:{target}")]));
    let mut proxy = Proxy::start(Admission::new("attempt-1", policy), Limits::default()).await;

    let mut client = proxy.dial().await;
    let answer = ask(&mut client, &connect(&target, "")).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(read_n(&mut client, GREETING.len()).await, GREETING);
    let message = b"ping through the tunnel";
    client.write_all(message).await.expect("write");
    assert_eq!(read_n(&mut client, message.len()).await, message);
    client.shutdown().await.expect("close the sandbox's side");
    assert!(read_to_end(&mut client).await.is_empty());

    let record = proxy.record().await;
    assert_eq!(record.verdict, Verdict::Allowed);
    assert_eq!(record.label.as_deref(), Some("attempt-1"));
    assert_eq!(record.host, "127.0.0.1");
    assert_eq!(record.port, up.port());
    assert_eq!(record.bytes_up, message.len() as u64);
    assert_eq!(record.bytes_down, (GREETING.len() + message.len()) as u64);
    assert!(record.duration > Duration::ZERO);
    assert_eq!(record.blocked_notice(), None);
}

#[tokio::test]
async fn a_host_not_listed_is_refused_saying_what_to_add_and_recorded() {
    let mut proxy = Proxy::start(
        Admission::new("attempt-2", policy(&["crates.io", "*.npmjs.org"])),
        Limits::default(),
    )
    .await;
    for (target, entry) in [
        ("pypi.org:443", "pypi.org"),
        ("npmjs.org:443", "npmjs.org"),
        ("crates.io:8443", "crates.io:8443"),
        ("8.8.8.8:443", "ip:8.8.8.8"),
    ] {
        let mut client = proxy.dial().await;
        let answer = ask(&mut client, &connect(target, "")).await;
        assert_eq!(answer.status, 403, "{target}: {answer:?}");
        assert!(answer.body.contains(target), "{answer:?}");
        assert!(
            answer.body.contains(&format!(
                "add it to the profile's egress (egress = [\"{entry}\"])"
            )),
            "{answer:?}"
        );
        let record = proxy.record().await;
        assert_eq!(refusal(&record), &Refusal::NotAllowed);
        assert_eq!(format!("{}:{}", record.host, record.port), target);
        assert_eq!((record.bytes_up, record.bytes_down), (0, 0));
        assert_eq!(
            record.blocked_notice().as_deref(),
            Some(&*format!(
                "blocked {target} — add it to the profile's egress"
            ))
        );
    }
}

#[tokio::test]
async fn private_addresses_are_refused_even_when_a_pattern_allows_the_name() {
    let up = upstream().await;
    let port = up.port();
    let cases = [
        (
            format!("localhost:{port}"),
            format!("localhost:{port}"),
            "loopback",
        ),
        (
            format!("127.0.0.1:{port}"),
            format!("ip:127.0.0.1:{port}"),
            "loopback",
        ),
        (
            "10.0.0.1:443".to_owned(),
            "ip:10.0.0.1".to_owned(),
            "private (RFC 1918)",
        ),
        (
            "169.254.169.254:443".to_owned(),
            "ip:169.254.169.254".to_owned(),
            "link-local (cloud metadata)",
        ),
        (
            format!("[::1]:{port}"),
            format!("ip:[::1]:{port}"),
            "loopback",
        ),
        (
            format!("[::ffff:127.0.0.1]:{port}"),
            format!("ip:[::ffff:127.0.0.1]:{port}"),
            "loopback",
        ),
        (
            "[fd00::1]:443".to_owned(),
            "ip:[fd00::1]".to_owned(),
            "unique local (private)",
        ),
    ];
    for (target, entry, kind) in cases {
        let mut proxy = Proxy::start(
            Admission::new("attempt-3", policy(&[&entry])),
            Limits::default(),
        )
        .await;
        let mut client = proxy.dial().await;
        let answer = ask(&mut client, &connect(&target, "")).await;
        assert_eq!(answer.status, 403, "{target}: {answer:?}");
        assert!(answer.body.contains(kind), "{target}: {answer:?}");
        let record = proxy.record().await;
        match refusal(&record) {
            Refusal::PrivateAddress { range, .. } => assert_eq!(range.kind, kind, "{target}"),
            other => panic!("{target}: expected a private address, got {other:?}"),
        }
        assert!(
            record
                .blocked_notice()
                .is_some_and(|notice| notice.contains(kind)),
            "{record:?}"
        );
        proxy.shut_down().await;
    }
}

#[tokio::test]
async fn an_allowed_private_network_lets_a_name_resolving_into_it_through() {
    let up = upstream().await;
    let target = format!("localhost:{}", up.port());
    let policy = with_loopback(policy(&[&target]));
    let mut proxy = Proxy::start(Admission::new("attempt-4", policy), Limits::default()).await;
    let mut client = proxy.dial().await;
    let answer = ask(&mut client, &connect(&target, "")).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(read_n(&mut client, GREETING.len()).await, GREETING);
    drop(client);
    let record = proxy.record().await;
    assert_eq!(record.verdict, Verdict::Allowed);
    assert_eq!(record.host, "localhost");
}

#[tokio::test]
async fn methods_other_than_connect_are_refused_with_an_explanation() {
    let mut proxy = Proxy::start(
        Admission::new("attempt-5", policy(&["example.com:80", "example.com"])),
        Limits::default(),
    )
    .await;
    for (request, host, port) in [
        (
            "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n",
            "example.com",
            80,
        ),
        (
            "POST http://example.com:8080/upload HTTP/1.1\r\nHost: example.com:8080\r\nContent-Length: 0\r\n\r\n",
            "example.com",
            8080,
        ),
        (
            "DELETE / HTTP/1.1\r\nHost: example.com\r\n\r\n",
            "example.com",
            80,
        ),
    ] {
        let mut client = proxy.dial().await;
        let answer = ask(&mut client, request).await;
        assert_eq!(answer.status, 405, "{request}: {answer:?}");
        assert!(
            answer.body.contains("only tunnels HTTPS through CONNECT"),
            "{answer:?}"
        );
        let record = proxy.record().await;
        let method = request.split(' ').next().expect("a method");
        assert_eq!(
            refusal(&record),
            &Refusal::NotConnect {
                method: method.to_owned()
            }
        );
        assert_eq!((record.host.as_str(), record.port), (host, port));
    }
}

#[tokio::test]
async fn a_target_that_is_not_host_and_port_is_a_bad_request() {
    let mut proxy = Proxy::start(
        Admission::new("attempt-6", policy(&["crates.io"])),
        Limits::default(),
    )
    .await;
    let mut client = proxy.dial().await;
    let answer = ask(&mut client, &connect("crates.io", "")).await;
    assert_eq!(answer.status, 400, "{answer:?}");
    assert!(answer.body.contains("not host:port"), "{answer:?}");
    let record = proxy.record().await;
    assert!(matches!(refusal(&record), Refusal::BadTarget { .. }));
}

fn basic(user: &str, password: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Proxy-Authorization: Basic {encoded}\r\n")
}

#[tokio::test]
async fn a_token_names_the_attempt_and_an_unknown_one_is_refused() {
    let up = upstream().await;
    let target = format!("127.0.0.1:{}", up.port());
    let grants = Grants::new();
    let mut proxy = Proxy::start(grants.clone(), Limits::default()).await;
    let grant = grants.grant(
        "attempt-7",
        with_loopback(policy(&[&format!("ip:{target}")])),
    );
    let other = grants.grant("attempt-8", Policy::default());

    let mut client = proxy.dial().await;
    let answer = ask(&mut client, &connect(&target, "")).await;
    assert_eq!(answer.status, 407, "{answer:?}");
    assert!(
        answer
            .head
            .contains("proxy-authenticate: Basic realm=\"gatehouse egress\""),
        "{answer:?}"
    );
    let record = proxy.record().await;
    assert_eq!(refusal(&record), &Refusal::NoCredential);
    assert_eq!(record.label, None);

    let answer = ask(
        &mut client,
        &connect(&target, &basic("gatehouse", "gh-eg-nope")),
    )
    .await;
    assert_eq!(answer.status, 407, "{answer:?}");
    assert!(answer.body.contains("not valid"), "{answer:?}");
    assert_eq!(refusal(&proxy.record().await), &Refusal::UnknownToken);

    // Another attempt's token is its own: its empty policy allows nothing.
    let answer = ask(
        &mut client,
        &connect(&target, &basic("gatehouse", other.token())),
    )
    .await;
    assert_eq!(answer.status, 403, "{answer:?}");
    let record = proxy.record().await;
    assert_eq!(record.label.as_deref(), Some("attempt-8"));
    assert_eq!(refusal(&record), &Refusal::NotAllowed);

    let answer = ask(
        &mut client,
        &connect(&target, &basic("gatehouse", grant.token())),
    )
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(read_n(&mut client, GREETING.len()).await, GREETING);
    drop(client);
    let record = proxy.record().await;
    assert_eq!(record.verdict, Verdict::Allowed);
    assert_eq!(record.label.as_deref(), Some("attempt-7"));

    let bearer = format!("Proxy-Authorization: Bearer {}\r\n", grant.token());
    let token = grant.token().to_owned();
    drop(grant);
    let mut client = proxy.dial().await;
    let answer = ask(&mut client, &connect(&target, &bearer)).await;
    assert_eq!(answer.status, 407, "a revoked token: {answer:?}");
    assert!(!answer.body.contains(&token));
    assert_eq!(refusal(&proxy.record().await), &Refusal::UnknownToken);
}

#[tokio::test]
async fn a_unix_socket_listener_serves_the_same_proxy() {
    let up = upstream().await;
    let target = format!("127.0.0.1:{}", up.port());
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("egress.sock");
    let listener = tokio::net::UnixListener::bind(&path).expect("bind the socket");
    let admission = Admission::new(
        "attempt-9",
        with_loopback(policy(&[&format!("ip:{target}")])),
    );
    let (records_tx, mut records) = tokio::sync::mpsc::unbounded_channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        Egress::default()
            .serve(
                listener,
                admission,
                move |c: Connection| {
                    let _ = records_tx.send(c);
                },
                async move {
                    let _ = stopped.await;
                },
            )
            .await;
    });

    let mut client = tokio::net::UnixStream::connect(&path)
        .await
        .expect("dial the socket");
    let answer = ask(&mut client, &connect(&target, "")).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(read_n(&mut client, GREETING.len()).await, GREETING);
    client.write_all(b"over unix").await.expect("write");
    assert_eq!(read_n(&mut client, 9).await, b"over unix");
    client.shutdown().await.expect("close");
    assert!(read_to_end(&mut client).await.is_empty());
    let record = tokio::time::timeout(Duration::from_secs(5), records.recv())
        .await
        .expect("a record")
        .expect("running");
    assert_eq!(
        (record.bytes_up, record.bytes_down),
        (9, GREETING.len() as u64 + 9)
    );

    let mut client = tokio::net::UnixStream::connect(&path)
        .await
        .expect("dial the socket");
    let answer = ask(&mut client, &connect("pypi.org:443", "")).await;
    assert_eq!(answer.status, 403, "{answer:?}");

    stop.send(()).expect("the server listens");
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("serve returns")
        .expect("no panic");
}

#[tokio::test]
async fn tunnels_beyond_the_policys_limit_are_refused_until_one_closes() {
    let up = upstream().await;
    let target = format!("127.0.0.1:{}", up.port());
    let policy = with_loopback(policy(&[&format!("ip:{target}")])).with_max_tunnels(1);
    let mut proxy = Proxy::start(Admission::new("attempt-10", policy), Limits::default()).await;

    let mut first = proxy.dial().await;
    assert_eq!(ask(&mut first, &connect(&target, "")).await.status, 200);
    let mut second = proxy.dial().await;
    let answer = ask(&mut second, &connect(&target, "")).await;
    assert_eq!(answer.status, 503, "{answer:?}");
    assert!(answer.body.contains("1 open tunnels"), "{answer:?}");
    assert_eq!(
        refusal(&proxy.record().await),
        &Refusal::TooManyTunnels { limit: 1 }
    );

    drop(first);
    assert_eq!(proxy.record().await.verdict, Verdict::Allowed);
    let mut third = proxy.dial().await;
    assert_eq!(ask(&mut third, &connect(&target, "")).await.status, 200);
}

#[tokio::test]
async fn an_idle_tunnel_is_closed_and_recorded() {
    let up = upstream().await;
    let target = format!("127.0.0.1:{}", up.port());
    let policy = with_loopback(policy(&[&format!("ip:{target}")]));
    let limits = Limits {
        idle_timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let mut proxy = Proxy::start(Admission::new("attempt-11", policy), limits).await;
    let mut client = proxy.dial().await;
    assert_eq!(ask(&mut client, &connect(&target, "")).await.status, 200);
    // The greeting, then nothing: the proxy closes the tunnel.
    assert_eq!(read_to_end(&mut client).await, GREETING);
    let record = proxy.record().await;
    assert_eq!(record.verdict, Verdict::Allowed);
    assert_eq!(record.bytes_down, GREETING.len() as u64);
    assert!(record.duration >= Duration::from_millis(300), "{record:?}");
}

#[tokio::test]
async fn an_oversized_request_head_is_refused() {
    let limits = Limits {
        max_header_bytes: 8192,
        ..Limits::default()
    };
    let proxy = Proxy::start(Admission::new("attempt-12", policy(&["crates.io"])), limits).await;
    let mut client = proxy.dial().await;
    let padding = format!("X-Padding: {}\r\n", "a".repeat(10_000));
    let answer = ask(&mut client, &connect("crates.io:443", &padding)).await;
    assert_eq!(answer.status, 431, "{answer:?}");
}

#[tokio::test]
async fn shutdown_closes_open_tunnels_records_them_and_returns() {
    let up = upstream().await;
    let target = format!("127.0.0.1:{}", up.port());
    let policy = with_loopback(policy(&[&format!("ip:{target}")]));
    let proxy = Proxy::start(Admission::new("attempt-13", policy), Limits::default()).await;
    let mut client = proxy.dial().await;
    assert_eq!(ask(&mut client, &connect(&target, "")).await.status, 200);
    assert_eq!(read_n(&mut client, GREETING.len()).await, GREETING);

    let mut records = proxy.shut_down().await;
    let record = records.try_recv().expect("the tunnel was recorded");
    assert_eq!(record.verdict, Verdict::Allowed);
    assert_eq!(record.bytes_down, GREETING.len() as u64);
    assert!(read_to_end(&mut client).await.is_empty());
}

#[tokio::test]
async fn a_host_that_does_not_resolve_is_a_bad_gateway() {
    let mut proxy = Proxy::start(
        Admission::new("attempt-14", policy(&["nothing.invalid"])),
        Limits::default(),
    )
    .await;
    let mut client = proxy.dial().await;
    let answer = ask(&mut client, &connect("nothing.invalid:443", "")).await;
    assert_eq!(answer.status, 502, "{answer:?}");
    assert!(answer.body.contains("could not be resolved"), "{answer:?}");
    assert!(matches!(
        refusal(&proxy.record().await),
        Refusal::Unresolvable { .. }
    ));
}

#[tokio::test]
async fn one_private_address_among_public_ones_refuses_the_host() {
    let answer = vec![
        "93.184.215.14:443".parse().expect("an address"),
        "10.1.2.3:443".parse().expect("an address"),
    ];
    let egress = Egress::default().with_resolver(Scripted::new(vec![answer]));
    let mut proxy = Proxy::start_with(
        egress,
        Admission::new("attempt-15", policy(&["mixed.example"])),
    )
    .await;
    let mut client = proxy.dial().await;
    let answer = ask(&mut client, &connect("mixed.example:443", "")).await;
    assert_eq!(answer.status, 403, "{answer:?}");
    assert!(answer.body.contains("10.1.2.3"), "{answer:?}");
    match refusal(&proxy.record().await) {
        Refusal::PrivateAddress { address, .. } => {
            assert_eq!(address.to_string(), "10.1.2.3");
        }
        other => panic!("expected a private address, got {other:?}"),
    }
}

#[tokio::test]
async fn a_name_is_resolved_once_and_the_checked_answer_is_the_one_connected_to() {
    let up = upstream().await;
    // A rebinding name: the first answer passes the check, any later one is private.
    let resolver = Scripted::new(vec![
        vec![up],
        vec!["10.0.0.1:443".parse().expect("an address")],
    ]);
    let calls = resolver.calls.clone();
    let target = format!("rebind.example:{}", up.port());
    let mut proxy = Proxy::start_with(
        Egress::default().with_resolver(resolver),
        Admission::new("attempt-16", with_loopback(policy(&[&target]))),
    )
    .await;
    let mut client = proxy.dial().await;
    let answer = ask(&mut client, &connect(&target, "")).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(read_n(&mut client, GREETING.len()).await, GREETING);
    drop(client);
    assert_eq!(proxy.record().await.verdict, Verdict::Allowed);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_client_that_never_finishes_its_request_head_is_cut_off() {
    let limits = Limits {
        header_read_timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let proxy = Proxy::start(Admission::new("attempt-17", policy(&["crates.io"])), limits).await;
    let mut client = proxy.dial().await;
    client
        .write_all(b"CONNECT crates.io:443 HTTP/1.1\r\n")
        .await
        .expect("write");
    let started = std::time::Instant::now();
    let rest = read_to_end(&mut client).await;
    assert!(started.elapsed() >= Duration::from_millis(250), "{rest:?}");
    let rest = String::from_utf8_lossy(&rest);
    assert!(
        rest.is_empty() || rest.starts_with("HTTP/1.1 408"),
        "{rest}"
    );
}
