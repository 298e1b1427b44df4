//! Script nodes in Docker sandboxes, through the real runner and a real Docker engine: a
//! shared workspace volume, no network, a non-root user, a read-only root; memory, process
//! and time limits and a missing image each failing their node with a reason; floods of
//! output stored only up to the limit; the real agent CLIs in `gatehouse-sandbox:agents`.
//! Needs the images from deploy/sandbox/build-images.sh (`--with-agents` for the last).
//! Without a Docker engine these tests say so and pass, unless `DOCKER_TESTS=required` (CI).

use std::collections::BTreeMap;
use std::sync::Arc;

use gatehouse_sandbox::{DockerSandbox, ProcessSandbox, Profile, SandboxKind, Sandboxes};
use gatehouse_tests::{Backend, Gatehouse, TestDb, on_both_backends};

const IMAGE: &str = "gatehouse-sandbox:busybox";

/// The image with the real agent CLIs (`build-images.sh --with-agents`).
const AGENTS_IMAGE: &str = "gatehouse-sandbox:agents";

/// The CLI versions the agents image is built with: `NAME=VALUE` lines.
const AGENT_CLIS: &str = include_str!("../../deploy/sandbox/agent-clis.env");

/// What the agents image holds, seen by a script node with no network: the CLIs' versions,
/// who it runs as, and the names (not values) of its environment.
const CLIS: &str = r#"
name: clis
sandbox: agents
nodes:
  look:
    kind: script
    run: |
      { claude --version; codex --version; } > "$GATEHOUSE_ARTIFACTS/versions"
      { id -un; getent passwd agent; } > "$GATEHOUSE_ARTIFACTS/user"
      env | cut -d= -f1 | sort > "$GATEHOUSE_ARTIFACTS/env-names"
      grep -c : /proc/net/dev > "$GATEHOUSE_ARTIFACTS/interfaces"
    artifacts: [versions, user, env-names, interfaces]
"#;

const BOXED: &str = r#"
name: boxed
sandbox: box
nodes:
  write:
    kind: script
    run: |
      echo hello > shared.txt
      id -u > "$GATEHOUSE_ARTIFACTS/uid"
      grep -c : /proc/net/dev > "$GATEHOUSE_ARTIFACTS/interfaces"
      touch /etc/x 2>/dev/null && echo root-writable || echo root-read-only
    artifacts: [uid, interfaces]
  read: { kind: script, needs: [write], run: "cat shared.txt; cat $GATEHOUSE_INPUTS/write/uid" }
"#;

const GREEDY: &str = r#"
name: greedy
sandbox: small
nodes:
  hog: { kind: script, run: "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ${#x}" }
"#;

const FORKS: &str = r#"
name: forks
sandbox: forky
nodes:
  bomb: { kind: script, timeout: 20s, run: "sleep 4 & s=$!; (b() { b | b & }; b) 2>/dev/null; wait $s; exit 1" }
"#;

const GHOST: &str = r#"
name: ghost
sandbox: ghost
nodes:
  boo: { kind: script, run: "true" }
"#;

const ENDLESS: &str = r#"
name: endless
sandbox: box
nodes:
  spin: { kind: script, timeout: 2s, run: "sleep 600" }
"#;

const FLOOD: &str = r#"
name: flood
sandbox: box
nodes:
  talk: { kind: script, run: "yes 0123456789abcdef | head -c 20000000; echo done" }
"#;

const AGENTIC: &str = r#"
name: agentic
sandbox: box
nodes:
  plan: { kind: script, run: "echo 'use a map' > $GATEHOUSE_ARTIFACTS/plan.md", artifacts: [plan.md] }
  code: { kind: agent, needs: [plan], role: boxed, prompt: "Plan: {{ inputs.plan['plan.md'] }}" }
"#;

/// Claude Code's result line, from a stand-in CLI mounted into the container.
const FAKE_CLAUDE: &str = r#"#!/bin/sh
cat > prompt-seen.md
id -u > agent-uid
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","usage":{"input_tokens":7,"output_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"modelUsage":{"claude-haiku-4-5":{"inputTokens":7,"outputTokens":3,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.0}}}'
"#;

on_both_backends!(
    docker_nodes_share_a_workspace_without_network_or_root,
    limits_and_a_missing_image_fail_the_node_with_a_reason,
    an_agent_runs_its_cli_inside_the_container,
);

/// The Docker sandbox for a test, or `None` (test skipped) when no engine answers and CI
/// does not require one.
async fn docker(owner: &str) -> Option<DockerSandbox> {
    match DockerSandbox::connect(owner).await {
        Ok(docker) if docker.check_image(IMAGE).await.is_ok() => Some(docker),
        outcome => {
            let why = match outcome {
                Ok(_) => format!("the image {IMAGE} is missing (deploy/sandbox/build-images.sh)"),
                Err(e) => e.to_string(),
            };
            assert!(
                std::env::var("DOCKER_TESTS").as_deref() != Ok("required"),
                "DOCKER_TESTS=required but Docker cannot run sandboxes: {why}"
            );
            eprintln!("skipped: Docker cannot run sandboxes here: {why}");
            None
        }
    }
}

fn profile(image: &str, memory: Option<&str>, pids: Option<u32>) -> Profile {
    Profile {
        kind: SandboxKind::Docker,
        image: Some(image.into()),
        memory: memory.map(|m| m.parse().unwrap()),
        pids,
        ..Profile::default()
    }
}

/// The services with a runner on process and Docker sandboxes, or `None` without Docker.
async fn stack(backend: Backend, sops: &[(&str, &str)], log_limit: usize) -> Option<Gatehouse> {
    stack_with(backend, sops, move |options| options.log_limit = log_limit).await
}

/// As [`stack`], with the runner's options adjusted by `configure` after the profiles.
async fn stack_with(
    backend: Backend,
    sops: &[(&str, &str)],
    configure: impl FnOnce(&mut gatehouse_runner::RunnerOptions) + 'static,
) -> Option<Gatehouse> {
    let data = tempfile::tempdir().unwrap();
    let docker = docker(&data.path().display().to_string()).await?;
    let sandboxes = Sandboxes::new(ProcessSandbox::default(), Ok(docker));
    let profiles = BTreeMap::from([
        ("box".to_owned(), profile(IMAGE, Some("256MiB"), Some(64))),
        ("small".to_owned(), profile(IMAGE, Some("32MiB"), Some(32))),
        // Room in memory for the shells a fork bomb starts, so the process limit is what
        // stops it, however much each shell takes on this host.
        ("forky".to_owned(), profile(IMAGE, Some("256MiB"), Some(32))),
        (
            "ghost".to_owned(),
            profile("gatehouse-sandbox:no-such-tag", None, None),
        ),
    ]);
    Some(
        Gatehouse::builder_on(TestDb::new(backend).await, data)
            .sops(sops)
            .sandbox(Arc::new(sandboxes))
            .runner(move |options| {
                options.profiles = profiles;
                configure(options);
            })
            .start()
            .await,
    )
}

/// Containers and volumes Docker still has for the stack's runner.
fn leftovers(stack: &Gatehouse) -> Vec<String> {
    let owner = format!("label=gatehouse.owner={}", stack.data.path().display());
    let mut left = Vec::new();
    for args in [
        vec!["ps", "-aq", "--filter", owner.as_str()],
        vec!["volume", "ls", "-q", "--filter", owner.as_str()],
    ] {
        let out = std::process::Command::new("docker")
            .args(&args)
            .output()
            .unwrap();
        left.extend(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_owned),
        );
    }
    left
}

async fn docker_nodes_share_a_workspace_without_network_or_root(backend: Backend) {
    let sops = [("boxed", BOXED), ("flood", FLOOD)];
    let Some(stack) = stack(backend, &sops, 64 * 1024).await else {
        return;
    };
    let run = stack.request("boxed").await;
    stack.wait_run(run, "succeeded").await;
    assert_eq!(stack.artifact(run, "write", 1, "uid").trim(), "65534");
    // Only the loopback interface: `network = "none"`.
    assert_eq!(stack.artifact(run, "write", 1, "interfaces").trim(), "1");
    let logs = stack.db.store.logs(run, 0, 100).await.unwrap();
    let lines: Vec<(&str, &str)> = logs
        .iter()
        .filter(|l| !l.line.starts_with("[gatehouse]"))
        .map(|l| (l.node.as_str(), l.line.as_str()))
        .collect();
    assert_eq!(
        lines,
        [
            ("write", "root-read-only"),
            ("read", "hello"),
            ("read", "65534")
        ]
    );
    let shared = stack
        .data
        .path()
        .join(format!("runs/{run}/workspace/shared.txt"));
    assert_eq!(std::fs::read_to_string(shared).unwrap(), "hello\n");

    // 20 MB of output: the node succeeds, 64 KiB of it is stored, the rest is counted.
    let run = stack.request("flood").await;
    stack.wait_run(run, "succeeded").await;
    let logs = stack.db.store.logs(run, 0, 100_000).await.unwrap();
    let stored: usize = logs.iter().map(|l| l.line.len() + 1).sum();
    assert!(stored < 70 * 1024, "{stored} bytes stored");
    let last = &logs.last().unwrap().line;
    assert!(
        last.starts_with("[gatehouse] output cut: ") && last.contains("more lines"),
        "{last}"
    );

    // Volumes go when their runs end.
    for _ in 0..100 {
        if leftovers(&stack).is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        leftovers(&stack),
        Vec::<String>::new(),
        "containers or volumes left"
    );
    stack.stop().await;
}

async fn limits_and_a_missing_image_fail_the_node_with_a_reason(backend: Backend) {
    let sops = [
        ("greedy", GREEDY),
        ("forks", FORKS),
        ("ghost", GHOST),
        ("endless", ENDLESS),
    ];
    let Some(stack) = stack(backend, &sops, 1024 * 1024).await else {
        return;
    };
    let runs: Vec<(&str, uuid::Uuid)> = {
        let mut runs = Vec::new();
        for (sop, _) in sops {
            runs.push((sop, stack.request(sop).await));
        }
        runs
    };
    let mut errors = BTreeMap::new();
    for (sop, run) in runs {
        stack.wait_run(run, "failed").await;
        let attempts = stack.db.store.attempts(run).await.unwrap();
        errors.insert(sop, attempts[0].error.clone().unwrap_or_default());
    }
    assert_eq!(
        errors["greedy"],
        "out of memory: killed at the sandbox's memory limit (32.0 MiB)"
    );
    assert!(
        errors["forks"].contains("it reached the sandbox's process limit (32 processes)"),
        "{}",
        errors["forks"]
    );
    assert!(
        errors["ghost"]
            .contains("image `gatehouse-sandbox:no-such-tag` is not on this Docker host"),
        "{}",
        errors["ghost"]
    );
    assert_eq!(errors["endless"], "timed out");
    for _ in 0..100 {
        if leftovers(&stack).is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        leftovers(&stack),
        Vec::<String>::new(),
        "containers or volumes left"
    );
    stack.stop().await;
}

async fn an_agent_runs_its_cli_inside_the_container(backend: Backend) {
    use std::os::unix::fs::PermissionsExt;
    let tools = tempfile::tempdir().unwrap();
    let claude = tools.path().join("claude");
    std::fs::write(&claude, FAKE_CLAUDE).unwrap();
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mount = gatehouse_sandbox::Mount {
        source: tools.path().to_owned(),
        target: "/opt/agent".into(),
    };
    let Some(stack) = stack_with(backend, &[("agentic", AGENTIC)], |options| {
        let mut profile = profile(IMAGE, Some("256MiB"), Some(64));
        profile.mounts = vec![mount];
        options.profiles.insert("agent-box".into(), profile);
        options.roles.insert(
            "boxed".into(),
            gatehouse_agent::Role {
                model: Some("claude-haiku-4-5".into()),
                env: BTreeMap::from([("PATH".into(), "/opt/agent:/bin".into())]),
                sandbox: Some("agent-box".into()),
                ..gatehouse_agent::Role::new(gatehouse_agent::Executor::ClaudeCode)
            },
        );
    })
    .await
    else {
        return;
    };
    let run = stack.request("agentic").await;
    stack.wait_run(run, "succeeded").await;
    let workspace = stack.data.path().join(format!("runs/{run}/workspace"));
    assert_eq!(
        std::fs::read_to_string(workspace.join("prompt-seen.md")).unwrap(),
        "Plan: use a map\n"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("agent-uid")).unwrap(),
        "65534\n"
    );
    let usage = stack.db.store.usage_of_run(run).await.unwrap();
    assert_eq!(
        (
            usage[0].model.as_str(),
            usage[0].input_tokens,
            usage[0].output_tokens
        ),
        ("claude-haiku-4-5", 7, 3)
    );
    stack.stop().await;
}

/// The pinned version of `name` in deploy/sandbox/agent-clis.env.
fn pinned(name: &str) -> &'static str {
    AGENT_CLIS
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("{name} is not in agent-clis.env"))
        .trim()
}

/// Whether the agents image is here; without it the test is skipped, unless CI requires
/// Docker (which builds it).
async fn agents_image() -> bool {
    let why = match DockerSandbox::connect("agents-image-check").await {
        Ok(docker) => match docker.check_image(AGENTS_IMAGE).await {
            Ok(()) => return true,
            Err(e) => format!("{e}; this one needs --with-agents"),
        },
        Err(e) => e.to_string(),
    };
    assert!(
        std::env::var("DOCKER_TESTS").as_deref() != Ok("required"),
        "DOCKER_TESTS=required but the agents image cannot run: {why}"
    );
    eprintln!("skipped: {why}");
    false
}

/// The image's own configuration field `format` (`docker image inspect --format`).
fn inspect_image(format: &str) -> String {
    let out = std::process::Command::new("docker")
        .args(["image", "inspect", "--format", format, AGENTS_IMAGE])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_image_holds_the_pinned_clis_without_keys() {
    if !agents_image().await {
        return;
    }
    let Some(stack) = stack_with(Backend::Sqlite, &[("clis", CLIS)], |options| {
        let mut agents = profile(AGENTS_IMAGE, Some("512MiB"), Some(128));
        // The image's `agent`; a root runner would otherwise pick `nobody`.
        agents.user = Some("1000:1000".into());
        options.profiles.insert("agents".into(), agents);
    })
    .await
    else {
        return;
    };
    let run = stack.request("clis").await;
    stack.wait_run(run, "succeeded").await;

    let versions = stack.artifact(run, "look", 1, "versions");
    let versions: Vec<&str> = versions.lines().collect();
    assert_eq!(
        versions,
        [
            format!("{} (Claude Code)", pinned("CLAUDE_CODE_VERSION")),
            format!("codex-cli {}", pinned("CODEX_VERSION")),
        ],
    );
    assert_eq!(
        stack.artifact(run, "look", 1, "user"),
        "agent\nagent:x:1000:1000::/home/agent:/bin/bash\n"
    );
    assert_eq!(inspect_image("{{.Config.User}}"), "agent");
    // `network = "none"`: only the loopback interface.
    assert_eq!(stack.artifact(run, "look", 1, "interfaces").trim(), "1");

    // No key reaches the CLIs from the image: neither in its configuration nor in what the
    // node sees (which adds only Gatehouse's variables to the image's).
    let key_like = |name: &str| {
        let name = name.to_ascii_uppercase();
        [
            "KEY",
            "TOKEN",
            "SECRET",
            "PASSW",
            "AUTH",
            "ANTHROPIC",
            "OPENAI",
        ]
        .iter()
        .any(|word| name.contains(word))
    };
    let image_env = inspect_image("{{range .Config.Env}}{{println .}}{{end}}");
    let image_names: Vec<&str> = image_env
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .collect();
    assert_eq!(image_names, ["PATH"], "{image_env}");
    let seen = stack.artifact(run, "look", 1, "env-names");
    let keys: Vec<&str> = seen.lines().filter(|name| key_like(name)).collect();
    assert!(keys.is_empty(), "key-like variables {keys:?} in {seen}");
    stack.stop().await;
}
