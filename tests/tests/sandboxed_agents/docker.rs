//! The same in a Docker sandbox with no route out (`network = "none"`), in the agents
//! image built by `deploy/sandbox/build-images.sh --with-agents`: the CLI reaches the
//! gateway only through the relay, and a script in the same profile finds nothing else
//! reachable — not the internet, not the metadata address, not the runner's NATS — except
//! the one host its egress lists, through the proxy, whatever it does with `HTTPS_PROXY`.

use std::collections::BTreeMap;
use std::sync::Arc;

use gatehouse_agent::{Executor, Role};
use gatehouse_fake_providers::{FakeProvider, Turn};
use gatehouse_gateway::ProviderKind;
use gatehouse_sandbox::{DockerSandbox, ProcessSandbox, Profile, SandboxKind, Sandboxes};
use gatehouse_store::ConnectionVerdict;
use gatehouse_tests::{Backend, Gatehouse, TestDb, relay_binary};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{
    ANSWER, CONTENT, REAL_KEY, assert_key_nowhere_under, contains, model_provider, request, tokens,
};

pub(crate) const AGENTS_IMAGE: &str = "gatehouse-sandbox:agents";

gatehouse_tests::on_both_backends!(claude_code_in_docker_reaches_only_the_gateway_and_its_egress);

/// The agent writes the file and its environment; a script keeps both; another probes
/// the network from the same profile (`REGISTRY` is filled in by the test).
const LOCKED: &str = r#"
name: locked
sandbox: locked
nodes:
  code: { kind: agent, role: coder, prompt: "Create hello.txt with a greeting." }
  keep:
    kind: script
    needs: [code]
    run: "cp hello.txt agent-env.txt $GATEHOUSE_ARTIFACTS/"
    artifacts: [hello.txt, agent-env.txt]
  probe:
    kind: script
    needs: [keep]
    env: { REGISTRY: "REGISTRY" }
    run: "node /probe/probe.js > $GATEHOUSE_ARTIFACTS/probe.txt"
    artifacts: [probe.txt]
"#;

/// Tries every way out and prints one line per try: `name: ok ...` or `name: error ...`.
/// `REGISTRY` is the one allowed host (`127.0.0.1:PORT` on the runner's machine).
const PROBE: &str = r#"
const net = require('net');
const dns = require('dns');
const registry = process.env.REGISTRY;
const proxy = new URL(process.env.HTTPS_PROXY);
const auth = 'Basic ' + Buffer.from(decodeURIComponent(proxy.username) + ':' + decodeURIComponent(proxy.password)).toString('base64');
function direct(name, host, port) {
  return new Promise(done => {
    const s = net.connect({ host, port, timeout: 3000 });
    s.on('connect', () => { console.log(`${name}: ok connected`); s.destroy(); done(); });
    s.on('timeout', () => { console.log(`${name}: error timeout`); s.destroy(); done(); });
    s.on('error', e => { console.log(`${name}: error ${e.code}`); done(); });
  });
}
function viaProxy(name, target, withToken) {
  return new Promise(done => {
    const s = net.connect({ host: proxy.hostname, port: Number(proxy.port), timeout: 5000 });
    let got = '';
    s.on('connect', () => s.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n` + (withToken ? `Proxy-Authorization: ${auth}\r\n` : '') + '\r\n'));
    s.on('data', d => {
      got += d.toString();
      if (got.startsWith('HTTP/1.1 200') && got.includes('\r\n\r\n') && !got.includes('registry-ok')) {
        if (!s.sent) { s.sent = true; s.write('GET / HTTP/1.0\r\n\r\n'); }
      }
      if (got.includes('registry-ok')) { console.log(`${name}: ok registry-ok`); s.destroy(); done(); }
      else if (!got.startsWith('HTTP/1.1 200') && got.includes('\r\n\r\n')) { console.log(`${name}: status ${got.split('\r\n')[0]}`); s.destroy(); done(); }
    });
    s.on('end', () => { console.log(`${name}: status ${got.split('\r\n')[0]}`); done(); });
    s.on('timeout', () => { console.log(`${name}: error timeout`); s.destroy(); done(); });
    s.on('error', e => { console.log(`${name}: error ${e.code}`); done(); });
  });
}
(async () => {
  await new Promise(done => dns.lookup('example.com', e => { console.log(`dns: ${e ? 'error ' + e.code : 'ok'}`); done(); }));
  await direct('internet', '93.184.215.14', 443);
  await direct('metadata', '169.254.169.254', 80);
  await direct('nats', '127.0.0.1', 4222);
  await direct('registry-direct', registry.split(':')[0], Number(registry.split(':')[1]));
  await viaProxy('example', 'example.com:443', true);
  await viaProxy('registry-without-token', registry, false);
  await viaProxy('registry', registry, true);
})();
"#;

/// The Docker sandbox, or `None` (skipped) where Docker or the agents image is missing
/// and CI does not require them.
pub(crate) async fn docker(owner: &str) -> Option<DockerSandbox> {
    let why = match DockerSandbox::connect(owner).await {
        Ok(docker) => match docker.check_image(AGENTS_IMAGE).await {
            Ok(()) => return Some(docker),
            Err(e) => format!("{e} (deploy/sandbox/build-images.sh --with-agents)"),
        },
        Err(e) => e.to_string(),
    };
    assert!(
        std::env::var("DOCKER_TESTS").as_deref() != Ok("required"),
        "DOCKER_TESTS=required but the agents image cannot run: {why}"
    );
    eprintln!("skipped: {why}");
    None
}

/// A one-answer HTTP server on the runner's loopback: the "registry" the profile allows.
async fn registry() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = stream.read(&mut buf).await;
                let _ = stream
                    .write_all(b"HTTP/1.0 200 OK\r\ncontent-length: 11\r\n\r\nregistry-ok")
                    .await;
            });
        }
    });
    address
}

async fn claude_code_in_docker_reaches_only_the_gateway_and_its_egress(backend: Backend) {
    let data = tempfile::tempdir().unwrap();
    let Some(docker) = docker(&data.path().display().to_string()).await else {
        return;
    };
    let command = format!("printf '{CONTENT}' > hello.txt; env > agent-env.txt");
    let fake = FakeProvider::start(
        REAL_KEY,
        vec![
            Turn::tool(
                "Bash",
                json!({"command": command, "description": "Write hello.txt"}),
            )
            .tokens(tokens(700, 30, 0, 0)),
            Turn::text(ANSWER).tokens(tokens(40, 9, 0, 0)),
        ],
    )
    .await;
    let registry = registry().await;
    std::fs::write(data.path().join("probe.js"), PROBE).unwrap();
    let profile = Profile {
        kind: SandboxKind::Docker,
        image: Some(AGENTS_IMAGE.into()),
        // The image's `agent`; a root runner would otherwise pick `nobody`.
        user: Some("1000:1000".into()),
        memory: Some("1GiB".parse().unwrap()),
        egress: vec![format!("ip:{registry}")],
        egress_private_networks: vec!["127.0.0.1/32".into()],
        mounts: vec![gatehouse_sandbox::Mount {
            source: data.path().join("probe.js"),
            target: "/probe/probe.js".into(),
        }],
        ..Profile::default()
    };
    let role = Role {
        provider: Some("model".into()),
        model: Some("claude-sonnet-4-5".into()),
        ..Role::new(Executor::ClaudeCode)
    };
    let provider = model_provider(&fake, ProviderKind::Anthropic);
    let sandboxes = Sandboxes::new(ProcessSandbox::default(), Ok(docker));
    let sop = LOCKED.replace(
        "REGISTRY: \"REGISTRY\"",
        &format!("REGISTRY: \"{registry}\""),
    );
    let stack = Gatehouse::builder_on(TestDb::new(backend).await, data)
        .sop("locked", &sop)
        .sandbox(Arc::new(sandboxes))
        .runner(move |options| {
            options.roles = BTreeMap::from([("coder".to_owned(), role)]);
            options.profiles.insert("locked".into(), profile);
            options.providers = vec![provider];
            options.relay = Some(relay_binary());
        })
        .start()
        .await;

    let run = request(&stack, "locked").await;
    let finished = stack.wait_run(run, "succeeded").await;
    assert_eq!(
        stack.artifact(run, "keep", 1, "hello.txt"),
        CONTENT,
        "{finished:#}"
    );

    // The CLI saw the gateway through the relay and a token, never the key.
    let env = stack.artifact(run, "keep", 1, "agent-env.txt");
    assert!(
        env.contains("ANTHROPIC_BASE_URL=http://127.0.0.1:8718/model"),
        "{env}"
    );
    assert!(env.contains("ANTHROPIC_API_KEY=gh-"), "{env}");
    assert!(env.contains("HOME=/gatehouse/home"), "{env}");
    assert!(!env.contains(REAL_KEY));

    let probe = stack.artifact(run, "probe", 1, "probe.txt");
    let line = |name: &str| {
        probe
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no {name} line in:\n{probe}"))
            .to_owned()
    };
    for refused in ["dns", "internet", "metadata", "nats", "registry-direct"] {
        assert!(
            line(refused).starts_with("error"),
            "{refused} was reachable:\n{probe}"
        );
    }
    assert!(line("example").contains("403"), "{probe}");
    assert!(line("registry-without-token").contains("407"), "{probe}");
    assert_eq!(line("registry"), "ok registry-ok", "{probe}");

    // Every connection through the proxy is recorded against its attempt.
    let connections = stack.db.store.run_connections(run).await.unwrap();
    let probe_connections: Vec<_> = connections
        .iter()
        .filter(|c| {
            matches!(&c.owner, gatehouse_store::ConnectionOwner::Node { node, .. } if node == "probe")
        })
        .collect();
    assert!(
        probe_connections.iter().any(|c| c.host == "example.com"
            && c.port == 443
            && c.verdict == ConnectionVerdict::Refused
            && c.reason
                .as_deref()
                .is_some_and(|r| r.contains("allow-list"))),
        "{connections:#?}"
    );
    assert!(
        probe_connections
            .iter()
            .any(|c| c.verdict == ConnectionVerdict::Allowed && c.bytes_down > 0),
        "{connections:#?}"
    );

    let usage = stack.db.store.usage_of_run(run).await.unwrap();
    assert_eq!(
        (usage[0].input_tokens, usage[0].output_tokens),
        (740, 39),
        "the gateway's figures: {usage:?}"
    );
    assert!(!contains(&stack.db.dump().await, REAL_KEY.as_bytes()));
    assert_key_nowhere_under(stack.data.path());
    stack.stop().await;
}
