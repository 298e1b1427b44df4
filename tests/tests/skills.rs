//! Skills end to end: a skill in the project's repository (`.gatehouse/skills/<name>/`)
//! reaches the real Claude Code CLI in a Docker sandbox where it reads skills
//! (`~/.claude/skills/`), and is pinned with the run: the hash frozen at the first attempt
//! is the digest of the repository's files, and when that attempt changes the skill in the
//! workspace, the run's next agent gets the pinned files, not the changed ones.
//!
//! Needs Docker and the agents image (`deploy/sandbox/build-images.sh --with-agents`) and
//! the static relay (`deploy/sandbox/build-relay.sh`); without them it says so and passes,
//! unless `DOCKER_TESTS=required` (CI).

use std::collections::BTreeMap;
use std::sync::Arc;

use gatehouse_agent::{Executor, Role, SkillFiles};
use gatehouse_blobs::Digest;
use gatehouse_events::{
    Event, GateDecisionKind, RepositoryCheckout, RepositoryMode, RunRequested, RunWorkspace,
};
use gatehouse_fake_forge::git::seeded_repository;
use gatehouse_fake_providers::{FakeProvider, Turn};
use gatehouse_gateway::{Provider, ProviderKind};
use gatehouse_ingest::Scope;
use gatehouse_sandbox::{DockerSandbox, ProcessSandbox, Sandboxes};
use gatehouse_tests::agents_image::{agents_docker, agents_profile};
use gatehouse_tests::gatehouse::chat;
use gatehouse_tests::{Backend, Gatehouse, TestDb, actor, relay_binary};
use secrecy::SecretString;
use serde_json::{Value, json};
use uuid::Uuid;

const KEY: &str = "sk-test-skills-runner-held-key";
const REPO: &str = "acme/api";
const PROJECTS: &str = "[[projects]]\nname = \"api\"\nrepositories = [{ repo = \"acme/api\" }]\n";
/// The skill as the repository has it; the description is what Claude Code lists.
const SKILL_MD: &str = "---\nname: house-style\ndescription: Follow the house style (HOUSE-STYLE-DESCRIPTION) when writing code.\n---\n\nAlways write MARKER-ONE at the top of every file.\n";
/// Two agent nodes of one run: the first changes the skill in the workspace.
const SOP: &str = r#"
name: styled
nodes:
  first: { kind: agent, role: coder, prompt: "Read the house style." }
  second: { kind: agent, role: coder, needs: [first], prompt: "Read the house style again." }
"#;
/// What the agent runs in both nodes: prints the skill where Claude Code reads it, then
/// rewrites the repository's copy in the workspace.
const READ_AND_TAMPER: &str = "cat ~/.claude/skills/house-style/SKILL.md; sed -i s/MARKER-ONE/MARKER-TWO/ .gatehouse/skills/house-style/SKILL.md";

gatehouse_tests::on_both_backends!(
    a_repository_skill_reaches_claude_code_and_stays_pinned,
    a_configured_skill_is_pinned_when_its_folder_changes_mid_run,
    a_skill_that_links_out_fails_the_attempt_before_the_agent_runs,
    a_pinned_skill_missing_from_the_blob_store_fails_the_attempt_saying_so,
);

/// Two agents of one run with a gate between them, each keeping what it was handed: the
/// skill as the inputs hold it, and its system text.
const HELD: &str = r#"
name: held
nodes:
  first: { kind: agent, role: styled, prompt: "Style it.", artifacts: [seen.md, system.md] }
  hold: { kind: gate, needs: [first], approvers: [ana] }
  second: { kind: agent, role: styled, needs: [hold], prompt: "Style it.", artifacts: [seen.md] }
"#;

/// A `command` agent (no skills support of its own) keeping its skill and system text.
fn styled(skills: &[&str]) -> Role {
    Role {
        system_prompt: Some("Be brief.".into()),
        command: vec![
            "sh".into(),
            "-c".into(),
            "cat \"$GATEHOUSE_INPUTS/.agent/skills/rust-style/SKILL.md\" > \"$GATEHOUSE_ARTIFACTS/seen.md\"; cat \"$1\" > \"$GATEHOUSE_ARTIFACTS/system.md\"".into(),
            "agent".into(),
            "{system_file}".into(),
        ],
        skills: skills.iter().map(|s| (*s).to_owned()).collect(),
        ..Role::new(Executor::Command)
    }
}

fn rust_style(description: &str, body: &str) -> String {
    format!("---\nname: rust-style\ndescription: {description}\n---\n{body}\n")
}

async fn a_configured_skill_is_pinned_when_its_folder_changes_mid_run(backend: Backend) {
    let data = tempfile::tempdir().expect("data");
    let folder = data.path().join("skills/rust-style");
    std::fs::create_dir_all(folder.join("scripts")).expect("folder");
    let first = rust_style("Write Rust the house way.", "Run cargo fmt.");
    std::fs::write(folder.join("SKILL.md"), &first).expect("SKILL.md");
    std::fs::write(folder.join("scripts/check.sh"), "cargo clippy\n").expect("script");
    let source = gatehouse_agent::SkillSource::Path {
        path: folder.to_string_lossy().into_owned(),
    };
    let stack = styled_gatehouse(backend, data, HELD, source).await;

    let run = stack.request("held").await;
    stack.node(run, "hold", "waiting_approval", 1).await;
    assert_eq!(stack.artifact(run, "first", 1, "seen.md"), first);
    // A CLI that reads no skills is told of them in its system text.
    let system = stack.artifact(run, "first", 1, "system.md");
    assert!(system.starts_with("Be brief.\n\nSkills:"), "{system}");
    assert!(
        system.contains("/.agent/skills/rust-style/SKILL.md — Write Rust the house way."),
        "{system}"
    );

    // The folder changes while the run waits; its next agent gets what the first had.
    std::fs::write(
        folder.join("SKILL.md"),
        rust_style("Changed.", "Never run cargo fmt."),
    )
    .expect("changed");
    stack
        .decide(run, "hold", 1, GateDecisionKind::Approve, None)
        .await;
    let finished = stack.wait_run(run, "succeeded").await;
    assert_eq!(
        stack.artifact(run, "second", 1, "seen.md"),
        first,
        "{finished:#}"
    );

    let mut expected = SkillFiles::new("rust-style").expect("a name");
    expected
        .add("SKILL.md", first.into_bytes())
        .expect("SKILL.md");
    expected
        .add("scripts/check.sh", b"cargo clippy\n".to_vec())
        .expect("script");
    let pin = frozen_pin(&stack, run).await;
    assert_eq!(
        pin["digest"],
        Digest::of(&expected.encode()).as_str(),
        "{pin}"
    );
    assert_eq!(pin["source"]["kind"], "path", "{pin}");
    stack.stop().await;
}

/// A later attempt whose pinned bundle is gone (a runner with blobs of its own) fails
/// saying where the files should have been, rather than reading the folder again.
async fn a_pinned_skill_missing_from_the_blob_store_fails_the_attempt_saying_so(backend: Backend) {
    let data = tempfile::tempdir().expect("data");
    let folder = data.path().join("skills/rust-style");
    std::fs::create_dir_all(&folder).expect("folder");
    std::fs::write(folder.join("SKILL.md"), rust_style("d", "b")).expect("SKILL.md");
    let source = gatehouse_agent::SkillSource::Path {
        path: folder.to_string_lossy().into_owned(),
    };
    let stack = styled_gatehouse(backend, data, HELD, source).await;
    let run = stack.request("held").await;
    stack.node(run, "hold", "waiting_approval", 1).await;
    let pin = frozen_pin(&stack, run).await;
    let digest = pin["digest"].as_str().expect("a digest");
    let blob = stack
        .data
        .path()
        .join(format!("blobs/sha256/{}/{digest}", &digest[..2]));
    std::fs::remove_file(&blob).expect("the bundle is in the local blob store");
    stack
        .decide(run, "hold", 1, GateDecisionKind::Approve, None)
        .await;
    let finished = stack.wait_run(run, "failed").await;
    let attempts = stack.db.store.attempts(run).await.expect("attempts");
    let second = attempts
        .iter()
        .find(|a| a.node == "second")
        .and_then(|a| a.error.clone())
        .unwrap_or_default();
    assert!(
        second.contains(&format!(
            "skill `rust-style`: its pinned files ({}) are not in the blob store",
            &digest[..12]
        )),
        "{second}\n{finished:#}"
    );
    stack.stop().await;
}

async fn a_skill_that_links_out_fails_the_attempt_before_the_agent_runs(backend: Backend) {
    let data = tempfile::tempdir().expect("data");
    let folder = data.path().join("skills/rust-style");
    std::fs::create_dir_all(folder.join("scripts")).expect("folder");
    std::fs::write(folder.join("SKILL.md"), rust_style("d", "b")).expect("SKILL.md");
    std::os::unix::fs::symlink("/etc/passwd", folder.join("scripts/x")).expect("link");
    let source = gatehouse_agent::SkillSource::Path {
        path: folder.to_string_lossy().into_owned(),
    };
    let sop = "name: held\nnodes:\n  first: { kind: agent, role: styled, prompt: \"x\", artifacts: [seen.md] }\n";
    let stack = styled_gatehouse(backend, data, sop, source).await;
    let run = stack.request("held").await;
    let finished = stack.wait_run(run, "failed").await;
    let attempts = stack.db.store.attempts(run).await.expect("attempts");
    let error = attempts[0].error.clone().unwrap_or_default();
    assert!(
        error.contains(
            "skill rust-style: scripts/x is a symbolic link; skills may hold only files and folders"
        ),
        "{error}\n{finished:#}"
    );
    // The agent never ran: it kept nothing, and nothing was pinned.
    let kept = stack
        .data
        .path()
        .join(format!("runs/{run}/artifacts/first/1/seen.md"));
    assert!(!kept.exists());
    let frozen = stack
        .db
        .store
        .frozen_settings(run, gatehouse_agent::PINNED_KIND)
        .await
        .expect("frozen");
    assert!(frozen.is_empty(), "{frozen:?}");
    stack.stop().await;
}

async fn a_repository_skill_reaches_claude_code_and_stays_pinned(backend: Backend) {
    let data = tempfile::tempdir().expect("data");
    let Some(docker) = docker(&data.path().display().to_string()).await else {
        return;
    };
    // The project's repository on the fake forge, with its skill.
    let bare = data.path().join(format!("git/{REPO}.git"));
    seeded_repository(&bare, &data.path().join("seed"), "skills", |seed| {
        let skill = seed.join(".gatehouse/skills/house-style");
        std::fs::create_dir_all(&skill).expect("skill folder");
        std::fs::write(skill.join("SKILL.md"), SKILL_MD).expect("SKILL.md");
    });
    let fake = FakeProvider::start(
        KEY,
        vec![
            Turn::tool(
                "Bash",
                json!({"command": READ_AND_TAMPER, "description": "Read the skill"}),
            ),
            Turn::text("Done."),
        ],
    )
    .await;
    fake.answer_side_requests_with_text();
    let profile = agents_profile();
    let role = Role {
        provider: Some("model".into()),
        model: Some("claude-sonnet-4-5".into()),
        sandbox: Some("agents".into()),
        ..Role::new(Executor::ClaudeCode)
    };
    let provider = Provider {
        name: "model".into(),
        kind: ProviderKind::Anthropic,
        base_url: url::Url::parse(fake.url()).expect("url"),
        key: SecretString::from(KEY),
    };
    let stack = Gatehouse::builder_on(TestDb::new(backend).await, data)
        .people(chat::people())
        .projects(PROJECTS)
        .sop("styled", SOP)
        .sandbox(Arc::new(Sandboxes::new(
            ProcessSandbox::default(),
            Ok(docker),
        )))
        .runner(move |options| {
            options.roles = BTreeMap::from([("coder".to_owned(), role)]);
            options.profiles.insert("agents".into(), profile);
            options.providers = vec![provider];
            options.relay = Some(relay_binary());
        })
        .start()
        .await;

    let run = Uuid::now_v7();
    stack
        .emit(Event::RunRequested(RunRequested {
            run_id: run,
            sop: "styled".into(),
            params: BTreeMap::new(),
            requirement_id: None,
            requested_by: actor("ana"),
            schedule: None,
            parent: None,
            workspace: Some(RunWorkspace {
                project: "api".into(),
                repositories: vec![RepositoryCheckout {
                    repo: REPO.into(),
                    branch: None,
                    mode: RepositoryMode::ReadOnly,
                    branch_name: None,
                    url: None,
                    forge: None,
                    path: None,
                    history: Default::default(),
                }],
                settings: BTreeMap::new(),
            }),
        }))
        .await;
    let finished = stack.wait_run(run, "succeeded").await;

    // The first agent did change the skill in the workspace...
    let workspace = stack.data.path().join(format!(
        "runs/{run}/workspace/.gatehouse/skills/house-style/SKILL.md"
    ));
    let changed = std::fs::read_to_string(&workspace).expect("the workspace's skill");
    assert!(changed.contains("MARKER-TWO"), "{finished:#}\n{changed}");

    // ...yet both agents read the pinned skill where Claude Code reads skills, and the
    // tool's output carried it to their next model request.
    let requests = fake.requests();
    let results: Vec<String> = requests
        .iter()
        .flat_map(|r| tool_results(&r.body))
        .collect();
    let pinned = results
        .iter()
        .filter(|r| r.contains("Always write MARKER-ONE"))
        .count();
    assert_eq!(pinned, 2, "tool results: {results:#?}");
    assert!(
        !results.iter().any(|r| r.contains("MARKER-TWO")),
        "a later agent got the changed skill: {results:#?}"
    );
    // Claude Code found it on its own: it offers the skill to the model by description.
    assert!(
        requests
            .iter()
            .any(|r| r.body.to_string().contains("HOUSE-STYLE-DESCRIPTION")),
        "no request lists the skill"
    );

    // The run froze the digest of the repository's files, which `run show` lists.
    let mut expected = SkillFiles::new("house-style").expect("a name");
    expected
        .add("SKILL.md", SKILL_MD.as_bytes().to_vec())
        .expect("SKILL.md");
    let digest = Digest::of(&expected.encode());
    let frozen = stack
        .db
        .store
        .frozen_settings(run, gatehouse_agent::PINNED_KIND)
        .await
        .expect("frozen");
    assert_eq!(frozen.len(), 1, "{frozen:?}");
    let pin: Value = serde_json::from_str(&frozen[0].1).expect("json");
    assert_eq!(pin["digest"], digest.as_str(), "{pin}");
    let token = stack.stored_token("ana", &Scope::ALL, None).await;
    let detail = stack
        .api_as(&token)
        .get(&format!("/runs/{run}"))
        .await
        .is(200);
    assert_eq!(
        detail["skills"],
        json!([{
            "name": "house-style",
            "source": "repository acme/api (.gatehouse/skills)",
            "digest": digest.as_str(),
            "description": "Follow the house style (HOUSE-STYLE-DESCRIPTION) when writing code.",
        }]),
        "{detail:#}"
    );
    // The run page lists it with its source and short hash.
    let mut browser = stack.signed_in("ana").await;
    let page = browser
        .get(&format!("/runs/{run}"))
        .await
        .expect_status(200);
    for shown in [
        "<dt>Skills</dt>",
        "<code>house-style</code> from repository acme/api (.gatehouse/skills)",
        &digest.as_str()[..12],
    ] {
        assert!(
            page.contains(shown),
            "{shown} is not on the page:\n{}",
            page.html
        );
    }
    stack.stop().await;
}

/// The text of every `tool_result` block in an Anthropic Messages request.
fn tool_results(body: &Value) -> Vec<String> {
    let mut texts = Vec::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] != "tool_result" {
                continue;
            }
            match &block["content"] {
                Value::String(text) => texts.push(text.clone()),
                Value::Array(parts) => texts.extend(
                    parts
                        .iter()
                        .filter_map(|p| p["text"].as_str().map(str::to_owned)),
                ),
                _ => {}
            }
        }
    }
    texts
}

/// Docker with the agents image, or `None` (skipped) where it is missing and CI does not
/// require it.
/// Gatehouse on `backend` running `sop` as `held` in the process sandbox, its role
/// `styled` given the configured skill `rust-style` from `source`.
async fn styled_gatehouse(
    backend: Backend,
    data: tempfile::TempDir,
    sop: &str,
    source: gatehouse_agent::SkillSource,
) -> Gatehouse {
    Gatehouse::builder_on(TestDb::new(backend).await, data)
        .sop("held", sop)
        .sandbox(Arc::new(ProcessSandbox::default()))
        .runner(move |options| {
            options.roles = BTreeMap::from([("styled".to_owned(), styled(&["rust-style"]))]);
            options.skills = BTreeMap::from([("rust-style".to_owned(), source)]);
        })
        .start()
        .await
}

/// The first skill pin frozen with `run`.
async fn frozen_pin(stack: &Gatehouse, run: Uuid) -> Value {
    let frozen = stack
        .db
        .store
        .frozen_settings(run, gatehouse_agent::PINNED_KIND)
        .await
        .expect("frozen");
    serde_json::from_str(&frozen[0].1).expect("json")
}

async fn docker(owner: &str) -> Option<DockerSandbox> {
    match agents_docker(owner).await {
        Ok(docker) => Some(docker),
        Err(why) => {
            assert!(
                std::env::var("DOCKER_TESTS").as_deref() != Ok("required"),
                "DOCKER_TESTS=required but the agents image cannot run: {why}"
            );
            eprintln!("skipped: {why}");
            None
        }
    }
}
