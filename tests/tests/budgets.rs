//! Budgets at the gateway with the real Claude Code CLI (from `tests/agent-clis/install.sh`;
//! skipped without it unless `AGENT_CLI_TESTS=required`): a role's budget reached in the
//! middle of a node refuses the next model request, which the CLI shows, and the node
//! fails with the budget's message, its 80 % warning in the output; two runs at once share
//! a project's daily budget and pass it by at most one request; a conversation's turn
//! past its project's day fails with the message too.

#[path = "agent_clis/installed.rs"]
#[allow(dead_code)]
mod installed;

use std::collections::BTreeMap;
use std::sync::Arc;

use gatehouse_agent::{Executor, Role};
use gatehouse_events::{ChatThread, Event, RunRequested, RunWorkspace, TurnDispatch, TurnTask};
use gatehouse_fake_providers::{FakeProvider, Tokens, Turn};
use gatehouse_gateway::{Provider, ProviderKind};
use gatehouse_sandbox::ProcessSandbox;
use gatehouse_store::{TurnKey, TurnStatus};
use gatehouse_tests::{Backend, Gatehouse, TestDb, actor, on_both_backends};
use secrecy::SecretString;
use serde_json::json;
use uuid::Uuid;

const KEY: &str = "sk-test-budget-runner-held-key-77a1";
const MODEL: &str = "claude-sonnet-4-5";

/// One agent node that keeps asking its model.
const WORK: &str = r#"
name: work
nodes:
  code: { kind: agent, role: coder, prompt: "Write the files." }
"#;

/// The same node, asking anyone who may decide gates to raise its budget once.
const ASK: &str = r#"
name: ask
nodes:
  code: { kind: agent, role: coder, prompt: "Write the files.", on_budget: ask }
"#;

on_both_backends!(
    a_budget_reached_mid_node_fails_the_node_with_its_message,
    an_approved_budget_ask_runs_the_node_again_with_the_budget_raised_once,
    concurrent_runs_share_the_daily_budget_without_overshoot,
    a_turn_past_its_projects_day_fails_with_the_budgets_message,
);

/// Each request costs 1000 tokens.
fn tokens() -> Tokens {
    Tokens {
        input: 600,
        output: 100,
        cache_read: 200,
        cache_write: 100,
        reasoning: 0,
    }
}

/// `tools` tool calls that each write a file, then an answer.
fn script(tools: usize) -> Vec<Turn> {
    let mut turns: Vec<Turn> = (0..tools)
        .map(|n| {
            let command = format!("printf x > f{n}.txt");
            Turn::tool(
                "Bash",
                json!({"command": command, "description": "Write a file"}),
            )
            .tokens(tokens())
        })
        .collect();
    turns.push(Turn::text("Done.").tokens(tokens()));
    turns
}

/// A stack whose runner runs Claude Code against `fake` as role `coder`.
async fn stack(
    backend: Backend,
    fake: &FakeProvider,
    budget: Option<&str>,
    daily: Option<&str>,
) -> Option<Gatehouse> {
    let clis = installed::clis()?;
    let data = tempfile::tempdir().unwrap();
    let home = data.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let bin = clis.claude.parent().unwrap().to_owned();
    let role = Role {
        provider: Some("model".into()),
        model: Some(MODEL.into()),
        budget: budget.map(|b| b.parse().unwrap()),
        env: BTreeMap::from([
            ("PATH".into(), format!("{}:/usr/bin:/bin", bin.display())),
            ("HOME".into(), home.display().to_string()),
        ]),
        ..Role::new(Executor::ClaudeCode)
    };
    let provider = Provider {
        name: "model".into(),
        kind: ProviderKind::Anthropic,
        base_url: url::Url::parse(fake.url()).unwrap(),
        key: SecretString::from(KEY),
    };
    let daily = daily.map(|d| d.parse().unwrap());
    // Where the sandbox has a network of its own, the relay is its way to the gateway.
    let relay = gatehouse_tests::relay_binary();
    Some(
        Gatehouse::builder_on(TestDb::new(backend).await, data)
            .sop("work", WORK)
            .sop("ask", ASK)
            .sandbox(Arc::new(ProcessSandbox::default()))
            .runner(move |options| {
                options.roles = BTreeMap::from([("coder".to_owned(), role)]);
                options.providers = vec![provider];
                options.budgets.daily = daily;
                options.relay = Some(relay);
            })
            .start()
            .await,
    )
}

/// A token of the bootstrap admin, who may read everything and decide any gate.
async fn admin(stack: &Gatehouse) -> String {
    stack
        .stored_token(
            gatehouse_ingest::BOOTSTRAP_ADMIN,
            &gatehouse_ingest::Scope::ALL,
            None,
        )
        .await
}

/// `GET /api/v1{path}` as JSON.
async fn get(stack: &Gatehouse, token: &str, path: &str) -> serde_json::Value {
    stack
        .http
        .get(format!("{}/api/v1{path}", stack.url))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn request(stack: &Gatehouse) -> Uuid {
    request_of(stack, "work").await
}

async fn request_of(stack: &Gatehouse, sop: &str) -> Uuid {
    let run = Uuid::now_v7();
    stack
        .emit(Event::RunRequested(RunRequested {
            run_id: run,
            sop: sop.into(),
            params: BTreeMap::new(),
            requirement_id: None,
            requested_by: actor("bob"),
            schedule: None,
            parent: None,
            workspace: None,
        }))
        .await;
    run
}

async fn a_budget_reached_mid_node_fails_the_node_with_its_message(backend: Backend) {
    let fake = FakeProvider::start(KEY, script(4)).await;
    let Some(stack) = stack(backend, &fake, Some("1500 tokens"), None).await else {
        return;
    };
    let run = request(&stack).await;
    let finished = stack.wait_run(run, "failed").await;
    let attempts = stack.db.store.attempts(run).await.unwrap();
    assert_eq!(
        attempts[0].error.as_deref(),
        Some("budget of role coder reached: 1.5k tokens for this attempt"),
        "{finished:#}"
    );
    // Two requests passed (0, then 1000 tokens spent: under the limit); the third was
    // refused at the gateway and never reached the provider.
    assert_eq!(fake.requests().len(), 2);
    let scope = format!("attempt:{run}:code:1");
    let spent = stack.db.store.spend(&[scope]).await.unwrap();
    assert_eq!((spent[0].tokens, spent[0].requests), (2000, 2));
    let logs = stack.db.store.logs(run, 0, 1000).await.unwrap();
    let notes: Vec<&str> = logs
        .iter()
        .map(|l| l.line.as_str())
        .filter(|l| l.starts_with("[gatehouse] 80%"))
        .collect();
    assert_eq!(
        notes,
        [
            "[gatehouse] 80% of the budget of role coder used for this attempt: 2k tokens of 1.5k tokens"
        ],
        "once"
    );
    // The run's view shows the budget spent beside its limit.
    let token = admin(&stack).await;
    let detail = get(&stack, &token, &format!("/runs/{run}")).await;
    let budgets = &detail["budgets"];
    assert_eq!(budgets.as_array().map(Vec::len), Some(1), "{detail:#}");
    assert_eq!(budgets[0]["label"], "role coder");
    assert_eq!(budgets[0]["node"], "code");
    assert_eq!(budgets[0]["tokens"], 2000);
    assert_eq!(budgets[0]["limit_tokens"], 1500);
    // The CLI was told why, in its provider's error shape, and said so.
    assert!(
        logs.iter().any(|l| !l.line.starts_with("[gatehouse]")
            && l.line.contains("budget of role coder reached")),
        "the CLI's output shows the refusal: {:#?}",
        logs.iter().map(|l| &l.line).collect::<Vec<_>>()
    );
    stack.stop().await;
}

async fn concurrent_runs_share_the_daily_budget_without_overshoot(backend: Backend) {
    // Each run alone would need 6 requests (6000 tokens): neither can finish.
    let fake = FakeProvider::start(KEY, script(5)).await;
    let Some(stack) = stack(backend, &fake, None, Some("3500 tokens")).await else {
        return;
    };
    let (a, b) = (request(&stack).await, request(&stack).await);
    stack.wait_run(a, "failed").await;
    stack.wait_run(b, "failed").await;
    let message = "budget of project default reached: 3.5k tokens today";
    for run in [a, b] {
        let attempts = stack.db.store.attempts(run).await.unwrap();
        assert_eq!(attempts[0].error.as_deref(), Some(message), "run {run}");
    }
    let day = format!("project:default:{}", chrono::Utc::now().format("%Y-%m-%d"));
    let spent = stack.db.store.spend(&[day]).await.unwrap();
    let tokens = spent[0].tokens;
    assert!(tokens >= 3500, "the limit was reached: {tokens}");
    assert!(
        tokens <= 3500 + 1000,
        "more than one request past the limit: {tokens}"
    );
    assert_eq!(
        fake.requests().len() as u64,
        spent[0].requests,
        "every request that passed was charged once"
    );
    stack.stop().await;
}

/// A conversation's turn counts against its project's day like a run: the turn that
/// finds it spent fails with the budget's message, and the one before says 80 %.
async fn a_turn_past_its_projects_day_fails_with_the_budgets_message(backend: Backend) {
    let fake = FakeProvider::start(KEY, script(4)).await;
    let Some(stack) = stack(backend, &fake, None, Some("2500 tokens")).await else {
        return;
    };
    let conversation = Uuid::now_v7();
    stack
        .emit(Event::TurnDispatch(TurnDispatch {
            conversation_id: conversation,
            requirement_id: Uuid::now_v7(),
            thread: ChatThread {
                platform: "slack".into(),
                channel: "C1".into(),
                thread: "1.2".into(),
            },
            workspace: RunWorkspace {
                project: "api".into(),
                repositories: Vec::new(),
                settings: BTreeMap::new(),
            },
            adopt_run: None,
            task: TurnTask::Turn {
                seq: 1,
                attempt: 1,
                role: "coder".into(),
                text: "Write the files.".into(),
                resume_session: None,
                ask: false,
                timeout_secs: None,
                feedback: None,
            },
        }))
        .await;
    let key = TurnKey {
        conversation_id: conversation,
        seq: 1,
        attempt: 1,
    };
    let mut ended = None;
    for _ in 0..3000 {
        if let Some(row) = stack.db.store.turn_attempt(key).await.unwrap()
            && row.status != TurnStatus::Running
        {
            ended = Some(row);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let ended = ended.expect("the turn ended");
    assert_eq!(ended.status, TurnStatus::Failed, "{ended:?}");
    let failure = ended.failure.as_deref().unwrap_or_default();
    assert!(
        failure.starts_with("budget of project api reached: 2.5k tokens today"),
        "{ended:?}"
    );
    assert!(
        failure.contains("80% of the budget of project api used today: 2k tokens of 2.5k tokens"),
        "the 80 % note joins the turn's end: {ended:?}"
    );
    assert_eq!(fake.requests().len(), 3, "the fourth request was refused");
    stack.stop().await;
}

/// `on_budget: ask`: the node that reached its role's budget waits for a person instead of
/// failing; the gate says why; approving it once (a second click changes nothing) raises
/// the budget by its own amount and the node's next attempt finishes within it.
async fn an_approved_budget_ask_runs_the_node_again_with_the_budget_raised_once(backend: Backend) {
    // Three requests (3000 tokens) do the work: past 1500 tokens, within 3000.
    let fake = FakeProvider::start(KEY, script(2)).await;
    let Some(stack) = stack(backend, &fake, Some("1500 tokens"), None).await else {
        return;
    };
    let run = request_of(&stack, "ask").await;
    let waiting = stack.wait_run(run, "waiting").await;
    let refusal = "budget of role coder reached: 1.5k tokens for this attempt";
    let attempts = stack.db.store.attempts(run).await.unwrap();
    assert_eq!(attempts[0].error.as_deref(), Some(refusal), "{waiting:#}");
    assert_eq!(fake.requests().len(), 2, "the third request was refused");

    let token = admin(&stack).await;
    let gates = get(&stack, &token, "/gates").await;
    assert_eq!(gates[0]["id"], format!("{run}/code"), "{gates:#}");
    assert_eq!(gates[0]["attempt"], 1);
    assert_eq!(gates[0]["raise"], refusal);

    let approve = || async {
        stack
            .http
            .post(format!(
                "{}/api/v1/runs/{run}/gates/code/decision",
                stack.url
            ))
            .bearer_auth(&token)
            .json(&json!({"decision": "approve", "attempt": 1}))
            .send()
            .await
            .unwrap()
            .status()
    };
    assert!(approve().await.is_success());
    let done = stack.wait_run(run, "succeeded").await;
    let second = approve().await;
    assert_eq!(
        second.as_u16(),
        409,
        "a second click on a decided ask: {done:#}"
    );

    let attempts = stack.db.store.attempts(run).await.unwrap();
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[1].error, None);
    assert_eq!(fake.requests().len(), 2 + 3);
    let raises = stack.db.store.budget_raises(run).await.unwrap();
    assert_eq!(
        raises,
        BTreeMap::from([("role coder for this attempt".to_owned(), 1)])
    );
    // The second attempt was allowed twice the role's budget, and spent within it.
    let spent = stack
        .db
        .store
        .spend(&[format!("attempt:{run}:code:2")])
        .await
        .unwrap();
    assert_eq!((spent[0].tokens, spent[0].limit_tokens), (3000, Some(3000)));
    stack.stop().await;
}
