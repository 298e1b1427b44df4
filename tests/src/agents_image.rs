//! One role as the chat assistant of a project, run in the agents image
//! (`deploy/sandbox/build-images.sh --with-agents`) with its model reached through the
//! runner's gateway: what the real-CLI conversation suite (tests/tests/executors.rs) and the
//! executors benchmark (tests/benches/executors.rs) both start from.

use std::collections::BTreeMap;
use std::sync::Arc;

use gatehouse_agent::Role;
use gatehouse_gateway::Provider;
use gatehouse_ingest::Scope;
use gatehouse_sandbox::{DockerSandbox, ProcessSandbox, Profile, SandboxKind, Sandboxes};
use gatehouse_scheduler::AssistantSettings;
use serde_json::Value;

use crate::gatehouse::chat;
use crate::{Backend, Gatehouse, TestDb, relay_binary};

/// The image with the real agent CLIs.
pub const AGENTS_IMAGE: &str = "gatehouse-sandbox:agents";

/// The project's Slack channel, where ana talks to the assistant.
pub const CHANNEL: &str = "C0API";

/// An OpenCode configuration (`OPENCODE_CONFIG_CONTENT`) whose one provider is the
/// gateway in Anthropic's API, read from the sandbox's variables (`{env:…}`).
pub const OPENCODE_CONFIG: &str = r#"{"autoupdate":false,"share":"disabled","model":"gatehouse/claude-sonnet-4-5","provider":{"gatehouse":{"npm":"@ai-sdk/anthropic","options":{"baseURL":"{env:ANTHROPIC_BASE_URL}/v1","apiKey":"{env:ANTHROPIC_API_KEY}"},"models":{"claude-sonnet-4-5":{}}}}}"#;

const PROJECTS: &str = r#"
[[projects]]
name = "api"
repositories = [{ repo = "acme/api" }]
channels = ["slack:C0API"]
converse = ["ana"]
"#;

/// The sandbox profile agents run in: the agents image, as its user `agent` (a root runner
/// would otherwise pick `nobody`), with 2 GiB.
pub fn agents_profile() -> Profile {
    Profile {
        kind: SandboxKind::Docker,
        image: Some(AGENTS_IMAGE.into()),
        user: Some("1000:1000".into()),
        memory: Some("2GiB".parse().expect("a size")),
        ..Profile::default()
    }
}

/// The Docker engine with the agents image, or why not.
pub async fn agents_docker(owner: &str) -> Result<DockerSandbox, String> {
    let docker = DockerSandbox::connect(owner)
        .await
        .map_err(|e| e.to_string())?;
    docker
        .check_image(AGENTS_IMAGE)
        .await
        .map_err(|e| format!("{e} (deploy/sandbox/build-images.sh --with-agents)"))?;
    Ok(docker)
}

/// Gatehouse on SQLite whose assistant is `role`, in the agents image as its user `agent`,
/// its model the provider `provider` (which the role must name), with the runner's static
/// relay and ACP shim.
pub async fn assistant_in_agents_image(
    data: tempfile::TempDir,
    docker: DockerSandbox,
    role: Role,
    provider: Provider,
) -> Gatehouse {
    assistant_in_agents_image_with(data, docker, role, provider, |_| {}).await
}

/// [`assistant_in_agents_image`], with more of the runner's options set by `configure`
/// (its `[mcp]` servers, say).
pub async fn assistant_in_agents_image_with(
    data: tempfile::TempDir,
    docker: DockerSandbox,
    role: Role,
    provider: Provider,
    configure: impl FnOnce(&mut gatehouse_runner::RunnerOptions) + 'static,
) -> Gatehouse {
    let profile = agents_profile();
    let role = Role {
        sandbox: Some("agents".into()),
        ..role
    };
    let sandboxes = Sandboxes::new(ProcessSandbox::default(), Ok(docker));
    Gatehouse::builder_on(TestDb::new(Backend::Sqlite).await, data)
        .people(chat::people())
        .chat()
        .projects(PROJECTS)
        .sandbox(Arc::new(sandboxes))
        .runner(move |options| {
            options.roles = BTreeMap::from([("assistant".to_owned(), role)]);
            options.profiles.insert("agents".into(), profile);
            options.providers = vec![provider];
            options.relay = Some(relay_binary());
            options.acp = Some(relay_binary().with_file_name("gatehouse-acp"));
            configure(options);
        })
        .assistant(AssistantSettings::new("assistant"))
        .start()
        .await
}

/// Every conversation, in detail, as ana sees them through the API.
pub async fn conversations(gh: &Gatehouse) -> Vec<Value> {
    let token = gh.stored_token("ana", &Scope::ALL, None).await;
    let list = gh.api_as(&token).get("/conversations").await.is(200);
    let mut details = Vec::new();
    for conversation in list.as_array().into_iter().flatten() {
        let id = conversation["id"].as_str().expect("an id");
        details.push(
            gh.api_as(&token)
                .get(&format!("/conversations/{id}"))
                .await
                .is(200),
        );
    }
    details
}

/// The Docker engine with the agents image, or `None` after saying why the test is
/// skipped; with `DOCKER_TESTS=required` (CI) a missing engine or image fails instead.
pub async fn agents_docker_or_skip(owner: &str) -> Option<DockerSandbox> {
    let why = match agents_docker(owner).await {
        Ok(docker) => return Some(docker),
        Err(why) => why,
    };
    assert!(
        std::env::var("DOCKER_TESTS").as_deref() != Ok("required"),
        "DOCKER_TESTS=required but the agents image cannot run: {why}"
    );
    eprintln!("skipped: {why}");
    None
}

/// Waits (up to four minutes: some CLIs start slowly) until the bot said `text` in
/// `thread` of the project's channel; `name` says whose test it is when it never does.
pub async fn said_in_thread(gh: &Gatehouse, thread: &str, text: &str, name: &str) {
    let messages = || -> Vec<String> {
        gh.slack
            .messages(CHANNEL)
            .into_iter()
            .filter(|m| {
                m.user == crate::fake_slack::BOT_USER && m.thread_ts.as_deref() == Some(thread)
            })
            .map(|m| m.text)
            .collect()
    };
    for _ in 0..2400 {
        if messages().iter().any(|m| m.contains(text)) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let detail = conversations(gh).await;
    panic!(
        "{name}: the bot never said {text:?}: {:#?}\n{detail:#?}",
        messages()
    );
}
