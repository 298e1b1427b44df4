//! Issue 38 item 6: `gatehouse doctor`'s checks ([`Runner::doctor`]) on the real sandboxes
//! and the runner's real gateway and egress proxy. A role that can work passes every
//! check; each broken one fails with one line naming the role, the profile and what to
//! change; the provider's key is in no line.

use std::collections::BTreeMap;
use std::sync::Arc;

use gatehouse_agent::{Executor, Role};
use gatehouse_fake_providers::{FakeProvider, Turn};
use gatehouse_gateway::{Provider, ProviderKind};
use gatehouse_runner::{Check, Checkup, Finding, Outcome, Runner, RunnerOptions};
use gatehouse_sandbox::{DockerSandbox, ProcessSandbox, Profile, SandboxKind, Sandboxes};
use gatehouse_tests::{Backend, TestDb, relay_binary};
use secrecy::SecretString;
use tokio_util::sync::CancellationToken;

use super::docker::{AGENTS_IMAGE, docker};
use super::{REAL_KEY, installed};

fn provider(name: &str, kind: ProviderKind, url: &str, key: &str) -> Provider {
    Provider {
        name: name.into(),
        kind,
        base_url: url::Url::parse(url).unwrap(),
        key: SecretString::from(key),
    }
}

/// The finding of `check` for `role`; the line it prints.
fn line(checkup: &Checkup, role: &str, check: Check) -> String {
    let found: Vec<&Finding> = checkup
        .findings
        .iter()
        .filter(|f| f.role == role && f.check == check)
        .collect();
    assert!(
        !found.is_empty(),
        "no {check:?} finding for {role}: {checkup:#?}"
    );
    found
        .iter()
        .map(|f| f.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A Docker profile on the agents image, run as an unprivileged user.
fn agents_profile() -> Profile {
    Profile {
        kind: SandboxKind::Docker,
        image: Some(AGENTS_IMAGE.into()),
        user: Some("1000:1000".into()),
        ..Profile::default()
    }
}

/// The runner's options for `roles` in `profiles`, on the fake provider `model`.
fn docker_options(
    data: &tempfile::TempDir,
    fake: &FakeProvider,
    roles: BTreeMap<String, Role>,
    profiles: BTreeMap<String, Profile>,
) -> RunnerOptions {
    RunnerOptions {
        roles,
        profiles,
        providers: vec![provider(
            "model",
            ProviderKind::Anthropic,
            fake.url(),
            REAL_KEY,
        )],
        relay: Some(relay_binary()),
        id: "doctor".into(),
        ..RunnerOptions::new(data.path().to_owned())
    }
}

/// The doctor's checkup under `options`, Docker profiles in `docker`; each finding printed.
async fn docker_checkup(docker: DockerSandbox, options: RunnerOptions) -> Checkup {
    let db = TestDb::new(Backend::Sqlite).await;
    let sandboxes = Sandboxes::new(ProcessSandbox::default(), Ok(docker));
    let runner = Runner::new(db.store.clone(), Arc::new(sandboxes), options);
    let checkup = runner.doctor(CancellationToken::new()).await;
    for finding in &checkup.findings {
        eprintln!("{finding}");
    }
    checkup
}

#[tokio::test]
async fn each_role_is_checked_and_each_failure_says_what_to_change() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let fake = FakeProvider::start(REAL_KEY, vec![Turn::text("unused")]).await;
    let data = tempfile::tempdir().unwrap();
    let bin = clis.claude.parent().unwrap().display().to_string();
    let path = BTreeMap::from([("PATH".to_owned(), format!("{bin}:/usr/bin:/bin"))]);
    let roles = BTreeMap::from([
        (
            "coder".to_owned(),
            Role {
                provider: Some("model".into()),
                env: path.clone(),
                ..Role::new(Executor::ClaudeCode)
            },
        ),
        (
            "reviewer".to_owned(),
            Role {
                provider: Some("wrong-key".into()),
                env: path.clone(),
                ..Role::new(Executor::Codex)
            },
        ),
        (
            "offline".to_owned(),
            Role {
                provider: Some("dead".into()),
                env: path.clone(),
                ..Role::new(Executor::ClaudeCode)
            },
        ),
        (
            "lost".to_owned(),
            Role {
                provider: Some("nowhere".into()),
                env: path,
                ..Role::new(Executor::ClaudeCode)
            },
        ),
        (
            "scripted".to_owned(),
            Role {
                command: vec!["no-such-agent-3c9e".into(), "{prompt_file}".into()],
                ..Role::new(Executor::Command)
            },
        ),
        (
            "elsewhere".to_owned(),
            Role {
                sandbox: Some("missing".into()),
                ..Role::new(Executor::ClaudeCode)
            },
        ),
    ]);
    // A port nothing listens on: the provider cannot be reached.
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let options = RunnerOptions {
        roles,
        providers: vec![
            provider("model", ProviderKind::Anthropic, fake.url(), REAL_KEY),
            provider(
                "wrong-key",
                ProviderKind::OpenAi,
                fake.url(),
                "sk-not-the-key",
            ),
            provider("dead", ProviderKind::Anthropic, &dead, REAL_KEY),
        ],
        relay: Some(relay_binary()),
        id: "doctor".into(),
        ..RunnerOptions::new(data.path().to_owned())
    };
    let db = TestDb::new(Backend::Sqlite).await;
    let runner = Runner::new(
        db.store.clone(),
        Arc::new(ProcessSandbox::default()),
        options,
    );
    let checkup = runner.doctor(CancellationToken::new()).await;
    let all: Vec<String> = checkup.findings.iter().map(|f| f.to_string()).collect();
    eprintln!("{}", all.join("\n"));
    assert!(checkup.failed(), "{all:#?}");
    assert!(
        !all.iter().any(|l| l.contains(REAL_KEY)),
        "the key is printed: {all:#?}"
    );

    // The working role: its CLI found, its provider answering with the real key, an
    // unlisted host refused.
    let ok = |role: &str, check| {
        let line = line(&checkup, role, check);
        assert!(line.starts_with("ok   role "), "{line}");
        line
    };
    assert!(ok("coder", Check::Cli).contains("`claude` is in the sandbox"));
    assert!(ok("coder", Check::Provider).contains("answered through the gateway"));
    let egress = line(&checkup, "coder", Check::Egress);
    assert!(
        egress.contains("example.com:443, not in the allow-list, is refused"),
        "{egress}"
    );
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.path == "/v1/models" && r.status == 200),
        "the provider was asked, with its key"
    );

    // Each broken role: one line naming it, its profile and what to change.
    let failed = |role: &str, check, says: &str| {
        let line = line(&checkup, role, check);
        assert!(
            line.lines()
                .any(|l| l.starts_with(&format!("FAIL role {role}, profile ")) && l.contains(says)),
            "{role}: {line}"
        );
    };
    failed("reviewer", Check::Provider, "refused the key");
    failed("reviewer", Check::Provider, "[providers.wrong-key] key");
    failed("offline", Check::Provider, "cannot be reached");
    failed("offline", Check::Provider, "[providers.dead] base_url");
    failed("lost", Check::Provider, "add [providers.nowhere]");
    // Its egress is checked without the provider, not failed a second time for it.
    ok("lost", Check::Egress);
    failed(
        "scripted",
        Check::Cli,
        "`no-such-agent-3c9e` is not in the sandbox",
    );
    failed("elsewhere", Check::Cli, "add [sandbox.profiles.missing]");
    assert!(ok("reviewer", Check::Cli).contains("`codex` is in the sandbox"));
    assert!(
        checkup
            .findings
            .iter()
            .filter(|f| f.role == "scripted" && f.check == Check::Provider)
            .count()
            == 0,
        "a command role without a provider needs none"
    );
    assert!(
        !data.path().join("sockets").join("doctor").exists(),
        "the check's sockets are gone"
    );
    assert!(
        std::fs::read_dir(data.path().join("doctor"))
            .map(|d| d.count())
            .unwrap_or(0)
            == 0,
        "the check's scratch directories are gone"
    );
}

/// In a Docker profile with no route out, the CLI is looked for in the image, and the
/// profile isolates: no warning that the allow-list can be walked around.
#[tokio::test]
async fn a_docker_profile_is_checked_in_its_image() {
    let data = tempfile::tempdir().unwrap();
    let Some(docker) = docker(&data.path().display().to_string()).await else {
        return;
    };
    let fake = FakeProvider::start(REAL_KEY, vec![Turn::text("unused")]).await;
    let locked = agents_profile();
    let bare = Profile {
        image: Some("gatehouse-sandbox:busybox".into()),
        ..locked.clone()
    };
    let roles = BTreeMap::from([
        (
            "coder".to_owned(),
            Role {
                provider: Some("model".into()),
                sandbox: Some("locked".into()),
                ..Role::new(Executor::ClaudeCode)
            },
        ),
        (
            "bare".to_owned(),
            Role {
                provider: Some("model".into()),
                sandbox: Some("bare".into()),
                ..Role::new(Executor::Codex)
            },
        ),
    ]);
    let profiles = BTreeMap::from([("locked".to_owned(), locked), ("bare".to_owned(), bare)]);
    let options = docker_options(&data, &fake, roles, profiles);
    let checkup = docker_checkup(docker, options).await;
    let cli = line(&checkup, "coder", Check::Cli);
    assert!(
        cli.starts_with("ok   role coder, profile locked, cli: `claude` is in the sandbox (image gatehouse-sandbox:agents)"),
        "{cli}"
    );
    let egress = line(&checkup, "coder", Check::Egress);
    assert!(egress.starts_with("ok   "), "{egress}");
    assert!(
        !checkup
            .findings
            .iter()
            .any(|f| f.role == "coder" && matches!(f.outcome, Outcome::Warning(_))),
        "{checkup:#?}"
    );
    let bare = line(&checkup, "bare", Check::Cli);
    assert!(
        bare.starts_with("FAIL role bare, profile bare, cli: `codex` is not in the sandbox (image gatehouse-sandbox:busybox)")
            && bare.contains("build-images.sh --with-agents"),
        "{bare}"
    );
}

/// `gatehouse role check`: the real Claude Code answers the check's prompt through the
/// gateway, and the line says its version, its answer and what the gateway metered; a role
/// whose provider refuses the key fails, saying so; an unknown role is named.
#[tokio::test]
async fn a_role_check_runs_the_real_cli_once() {
    let Some(clis) = installed::clis() else {
        return;
    };
    let fake = FakeProvider::start(
        REAL_KEY,
        vec![Turn::text("OK").tokens(super::tokens(120, 3, 0, 0))],
    )
    .await;
    let data = tempfile::tempdir().unwrap();
    let bin = clis.claude.parent().unwrap().display().to_string();
    let path = BTreeMap::from([("PATH".to_owned(), format!("{bin}:/usr/bin:/bin"))]);
    let role = |provider: &str| Role {
        provider: Some(provider.into()),
        model: Some("claude-sonnet-4-5".into()),
        env: path.clone(),
        ..Role::new(Executor::ClaudeCode)
    };
    let runner = || {
        let options = RunnerOptions {
            roles: BTreeMap::from([
                ("coder".to_owned(), role("model")),
                ("refused".to_owned(), role("wrong-key")),
            ]),
            providers: vec![
                provider("model", ProviderKind::Anthropic, fake.url(), REAL_KEY),
                provider(
                    "wrong-key",
                    ProviderKind::Anthropic,
                    fake.url(),
                    "sk-not-it",
                ),
            ],
            relay: Some(relay_binary()),
            id: "role-check".into(),
            ..RunnerOptions::new(data.path().to_owned())
        };
        async {
            let db = TestDb::new(Backend::Sqlite).await;
            Runner::new(
                db.store.clone(),
                Arc::new(ProcessSandbox::default()),
                options,
            )
        }
    };

    let checkup = runner()
        .await
        .check_role_for_real("coder", CancellationToken::new())
        .await
        .unwrap();
    let run = line(&checkup, "coder", Check::Run);
    eprintln!("{run}");
    assert!(!checkup.failed(), "{checkup:#?}");
    assert!(
        run.starts_with("ok   role coder, profile default, run: `claude-code` answered \"OK\""),
        "{run}"
    );
    assert!(run.contains("(Claude Code)"), "the version: {run}");
    assert!(
        run.contains("the gateway metered 120 tokens in, 3 out"),
        "{run}"
    );
    assert!(!run.contains(REAL_KEY));

    // The provider refuses the key: the doctor's provider check says so, and the CLI is
    // not run to fail the same way.
    let checkup = runner()
        .await
        .check_role_for_real("refused", CancellationToken::new())
        .await
        .unwrap();
    assert!(checkup.failed());
    assert!(
        line(&checkup, "refused", Check::Provider).contains("refused the key"),
        "{checkup:#?}"
    );
    assert!(checkup.findings.iter().all(|f| f.check != Check::Run));

    let unknown = runner()
        .await
        .check_role_for_real("nobody", CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(
        unknown,
        "no role is named `nobody`; the configured roles are: coder, refused"
    );
}

/// A role's stdio MCP servers are looked for in its image as an attempt's script looks
/// for them: one the image has passes, every one it lacks fails naming the server, the
/// program and the image; a role without stdio servers gets no such finding.
#[tokio::test]
async fn a_roles_stdio_mcp_servers_are_looked_for_in_its_image() {
    let data = tempfile::tempdir().unwrap();
    let Some(docker) = docker(&data.path().display().to_string()).await else {
        return;
    };
    let fake = FakeProvider::start(REAL_KEY, vec![Turn::text("unused")]).await;
    let locked = agents_profile();
    let stdio = |command: &[&str]| gatehouse_agent::McpDefinition::Stdio {
        command: command.iter().map(|w| (*w).to_owned()).collect(),
        env: BTreeMap::new(),
    };
    let role = |mcp: &[&str]| Role {
        provider: Some("model".into()),
        sandbox: Some("locked".into()),
        mcp: mcp.iter().map(|n| (*n).to_owned()).collect(),
        ..Role::new(Executor::ClaudeCode)
    };
    let roles = BTreeMap::from([
        ("equipped".to_owned(), role(&["everything"])),
        (
            "unequipped".to_owned(),
            role(&["everything", "docs", "search"]),
        ),
        ("plain".to_owned(), role(&[])),
    ]);
    let profiles = BTreeMap::from([("locked".to_owned(), locked)]);
    let mut options = docker_options(&data, &fake, roles, profiles);
    options.mcp.servers = BTreeMap::from([
        ("everything".to_owned(), stdio(&["mcp-server-everything"])),
        ("docs".to_owned(), stdio(&["docs-mcp", "--stdio"])),
        ("search".to_owned(), stdio(&["/opt/search/bin/search-mcp"])),
    ]);
    let checkup = docker_checkup(docker, options).await;
    let equipped = line(&checkup, "equipped", Check::Mcp);
    assert_eq!(
        equipped,
        "ok   role equipped, profile locked, mcp: its stdio MCP servers' programs are in the \
         sandbox: everything (`mcp-server-everything`)"
    );
    let unequipped = line(&checkup, "unequipped", Check::Mcp);
    assert_eq!(
        unequipped,
        format!(
            "FAIL role unequipped, profile locked, mcp: MCP server `docs` runs `docs-mcp`, which \
             this sandbox (image {AGENTS_IMAGE}) does not have; install it in the image or \
             remove `docs` from the role's or project's mcp; MCP server `search` runs \
             `/opt/search/bin/search-mcp`, which this sandbox (image {AGENTS_IMAGE}) does not \
             have; install it in the image or remove `search` from the role's or project's mcp"
        )
    );
    assert!(checkup.failed());
    assert!(
        !checkup
            .findings
            .iter()
            .any(|f| f.role == "plain" && f.check == Check::Mcp),
        "{checkup:#?}"
    );
}
