//! Per-project rights on actions (issue 36, items 3–7 and 12), end to end: every entry
//! point — the API, the console, chat and GitHub comments — checks a run's repositories
//! against the configuration, and its project's `run` list before it starts, cancels,
//! pauses, resumes or retries a run or operates a schedule; `ask` names only roles that say
//! they may be asked, without their secrets unless they say so; and Gatehouse's own
//! comments run no commands. Each test says what the code before did instead.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use gatehouse_agent::{Executor, Role};
use gatehouse_ingest::{Person, Scope, Trigger};
use gatehouse_scheduler::AssistantSettings;
use gatehouse_tests::fake_slack::BOT_USER;
use gatehouse_tests::gatehouse::chat::{self, ANA, CY};
use gatehouse_tests::gatehouse::github::REPO;
use gatehouse_tests::{Backend, Gatehouse, on_both_backends, person};
use serde_json::{Value, json};
use uuid::Uuid;

on_both_backends!(
    a_run_works_only_on_repositories_the_configuration_names,
    run_commands_answer_to_the_runs_project_everywhere,
    schedules_answer_to_their_projects_run_list,
    run_in_a_direct_conversation_answers_to_its_project,
    ask_names_only_askable_roles_and_keeps_their_secrets,
    gatehouses_own_comments_run_no_commands,
    sops_lists_what_may_be_started_where_it_is_asked,
);

/// A gate anyone with `run` may start; leads approve.
const HOLD: &str = "name: hold\nnodes:\n  review: { kind: gate, approvers: [group:leads] }\n";
/// Nothing but a script.
const QUICK: &str = "name: quick\nnodes:\n  work: { kind: script, run: 'true' }\n";

/// `tools`: only ana runs its work, anyone known talks to its assistant, only `hold`.
const PROJECTS: &str = r#"
[[projects]]
name = "tools"
channels = ["slack:C0TOOLS"]
sops = ["hold"]
run = ["ana"]
"#;

const TOOLS: &str = "C0TOOLS";
/// A channel of no project.
const LOBBY: &str = "C0LOBBY";
/// cy's direct conversation with the bot.
const CY_DIRECT: &str = "D0CY";

/// A SOP only leads may start, with a parameter it needs and one it defaults.
const LEADS_ONLY: &str = "name: release\ntitle: Cut a release\nstarters: [group:leads]\nparams:\n  version: { required: true }\n  notes: { default: none }\nnodes:\n  cut: { kind: script, run: 'true' }\n";

/// The environment variable the probing roles declare as their secret: one every `cargo
/// test` process has, so the runner can read it.
const SECRET: &str = "CARGO_MANIFEST_DIR";

/// A role's stand-in CLI: says whether its secret reached it, never the secret.
const PROBE: &str = "#!/bin/sh\nif [ -n \"$CARGO_MANIFEST_DIR\" ]; then echo \"$1: secret present\"; else echo \"$1: secret absent\"; fi\necho '{\"gatehouse_usage\": {\"model\": \"probe\", \"input_tokens\": 1, \"output_tokens\": 1}}'\n";

/// Chat (ana and bo leads, cy), the project, `hold` and `quick`; with `roles`, the
/// assistant and those roles.
async fn hub(backend: Backend, roles: Option<BTreeMap<String, Role>>) -> Gatehouse {
    let builder = chat::builder(backend)
        .sops(&[("hold", HOLD), ("quick", QUICK)])
        .projects(PROJECTS);
    match roles {
        Some(roles) => {
            builder
                .runner(move |options| options.roles = roles)
                .assistant(AssistantSettings::new("assistant"))
                .start()
                .await
        }
        None => builder.start().await,
    }
}

/// A token of `person` with `read`, `run` and `decide`.
async fn token(gh: &Gatehouse, person: &str) -> String {
    gh.stored_token(person, &[Scope::Read, Scope::Run, Scope::Decide], None)
        .await
}

/// Waits (up to 10 s) until `run` has `status`.
async fn wait_status(gh: &Gatehouse, run: Uuid, status: &str) {
    for _ in 0..500 {
        if gh
            .db
            .store
            .run(run)
            .await
            .unwrap()
            .is_some_and(|r| r.status == status)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "run {run} is not {status}: {:#?}",
        gh.db.store.run(run).await
    );
}

/// Waits until the bot has said something containing `text` in `channel` (in `thread`,
/// when given); returns it.
async fn bot_said(gh: &Gatehouse, channel: &str, thread: Option<&str>, text: &str) -> String {
    for _ in 0..1500 {
        if let Some(m) = gh.slack.messages(channel).into_iter().find(|m| {
            m.user == BOT_USER
                && m.text.contains(text)
                && thread.is_none_or(|t| m.thread_ts.as_deref() == Some(t))
        }) {
            return m.text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let said: Vec<String> = gh
        .slack
        .messages(channel)
        .into_iter()
        .filter(|m| m.user == BOT_USER)
        .map(|m| m.text)
        .collect();
    panic!("the bot never said {text:?} in {channel}: {said:#?}");
}

/// A direct message from `user` to the bot (in `thread_ts`, when given); its ts.
async fn slack_direct(
    gh: &Gatehouse,
    event_id: &str,
    thread_ts: Option<&str>,
    user: &str,
    text: &str,
) -> String {
    gh.slack_direct_message(event_id, CY_DIRECT, thread_ts, user, text)
        .await
}

/// Item 3: a run's issue names a repository; with no `[[projects]]` it must still be one
/// the configuration names (a trigger's `repos`, `[github] repositories`). Before: the API
/// took `issue: other/secret#1` (202) and the runner would clone a repository named
/// nowhere, while chat refused the same request.
async fn a_run_works_only_on_repositories_the_configuration_names(backend: Backend) {
    // No GitHub, no projects: no repository is named at all.
    let bare = Gatehouse::builder(backend)
        .sops(&[("hold", HOLD)])
        .people(vec![person("ana", &["leads"])])
        .start()
        .await;
    let ana = token(&bare, "ana").await;
    bare.api_as(&ana)
        .post("/runs", json!({ "sop": "hold", "issue": "other/secret#1" }))
        .await
        .refused(422, "`other/secret` is not one of them");
    assert!(bare.db.store.runs(None, &[], 10).await.unwrap().is_empty());
    assert!(
        bare.db
            .store
            .requirements(None, &[], 10)
            .await
            .unwrap()
            .is_empty(),
        "nothing is recorded for it"
    );
    bare.stop().await;

    // A trigger names acme/*: its repositories are reached, others are not, from the API
    // and from chat alike.
    let gh = chat::builder(backend)
        .sops(&[("hold", HOLD)])
        .github(vec![
            Trigger::new("bug", "hold", &["acme/*".into()], false, false).unwrap(),
        ])
        .start()
        .await;
    let ana = token(&gh, "ana").await;
    gh.api_as(&ana)
        .post("/runs", json!({ "sop": "hold", "issue": "other/secret#1" }))
        .await
        .refused(422, "`other/secret` is not one of them");
    gh.api_as(&ana)
        .post("/runs", json!({ "sop": "hold", "issue": "acme/app#1" }))
        .await
        .is(202);
    gh.api_as(&ana)
        .post(
            "/runs",
            json!({ "sop": "hold", "issue": format!("{REPO}#2") }),
        )
        .await
        .is(202);
    let asked = gh
        .slack_mention("Ev1", LOBBY, ANA, "run hold on other/secret#1")
        .await;
    bot_said(
        &gh,
        LOBBY,
        Some(&asked),
        "`other/secret` is not one of them",
    )
    .await;
    assert!(
        gh.db
            .store
            .requirement_by_key("github:other/secret#1")
            .await
            .unwrap()
            .is_none()
    );
    gh.stop().await;
}

/// Item 5: cancel, pause, resume and retry need the run's project's `run` list, from the
/// API, the console and chat; a run of no project answers to the token's scope alone.
/// Before: cy, in no project's `run` list, paused ana's run from the API (202) and
/// cancelled it from a channel of no project.
async fn run_commands_answer_to_the_runs_project_everywhere(backend: Backend) {
    let gh = hub(backend, None).await;
    let (ana, cy) = (token(&gh, "ana").await, token(&gh, "cy").await);
    let accepted = gh
        .api_as(&ana)
        .post("/runs", json!({ "sop": "hold", "project": "tools" }))
        .await
        .is(202);
    let run: Uuid = accepted["run_id"].as_str().unwrap().parse().unwrap();
    wait_status(&gh, run, "waiting").await;

    let refusal = "cy may not start runs on project `tools`; its run list is ana";
    let path = |verb: &str| format!("/runs/{run}/{verb}");
    gh.api_as(&cy)
        .post(&path("pause"), json!({}))
        .await
        .refused(403, refusal);
    gh.api_as(&ana)
        .post(&path("pause"), json!({}))
        .await
        .is(202);
    wait_status(&gh, run, "paused").await;
    gh.api_as(&cy)
        .post(&path("resume"), json!({}))
        .await
        .refused(403, refusal);
    gh.api_as(&cy)
        .post(&path("retry"), json!({ "node": "review" }))
        .await
        .refused(403, refusal);
    gh.api_as(&cy)
        .post(&path("cancel"), json!({}))
        .await
        .refused(403, refusal);

    // The console's buttons are the API's handlers.
    let mut browser = gh.signed_in("cy").await;
    let page = browser
        .submit(
            "/",
            &format!("/runs/{run}/command"),
            &[("command", "cancel")],
        )
        .await
        .expect_status(403);
    assert!(
        page.contains("may not start runs on project"),
        "{}",
        page.html
    );

    // Chat, in a channel of no project and in the project's own.
    let asked = gh
        .slack_mention("Ev1", LOBBY, CY, &format!("cancel {run}"))
        .await;
    bot_said(&gh, LOBBY, Some(&asked), refusal).await;
    let asked = gh
        .slack_mention("Ev2", TOOLS, CY, &format!("cancel {run}"))
        .await;
    bot_said(&gh, TOOLS, Some(&asked), refusal).await;
    wait_status(&gh, run, "paused").await;

    let asked = gh
        .slack_mention("Ev3", LOBBY, ANA, &format!("cancel {run}"))
        .await;
    bot_said(&gh, LOBBY, Some(&asked), "Done: cancel run").await;
    wait_status(&gh, run, "cancelled").await;

    // A run of no project: the token's scope and the SOP's starters, as ever.
    let accepted = gh
        .api_as(&ana)
        .post("/runs", json!({ "sop": "hold" }))
        .await
        .is(202);
    let free: Uuid = accepted["run_id"].as_str().unwrap().parse().unwrap();
    wait_status(&gh, free, "waiting").await;
    gh.api_as(&cy)
        .post(&format!("/runs/{free}/cancel"), json!({}))
        .await
        .is(202);
    wait_status(&gh, free, "cancelled").await;
    gh.stop().await;
}

/// Item 6: triggering, backfilling, pausing, resuming and deleting a schedule of a project
/// need that project's `run` list. Before: cy triggered ana's `tools` schedule (the run
/// then named cy its requester) and deleted it.
async fn schedules_answer_to_their_projects_run_list(backend: Backend) {
    let gh = hub(backend, None).await;
    let (ana, cy) = (token(&gh, "ana").await, token(&gh, "cy").await);
    gh.api_as(&ana)
        .post(
            "/schedules",
            json!({ "name": "tools-yearly", "cron": "0 0 1 1 *", "sop": "hold", "project": "tools" }),
        )
        .await
        .is(201);
    let refusal = "cy may not start runs on project `tools`";
    let as_cy = gh.api_as(&cy);
    as_cy
        .post("/schedules/tools-yearly/trigger", json!({}))
        .await
        .refused(403, refusal);
    as_cy
        .post(
            "/schedules/tools-yearly/backfill",
            json!({ "from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z" }),
        )
        .await
        .refused(403, refusal);
    as_cy
        .post(
            "/schedules/tools-yearly/pause",
            json!({ "note": "mine now" }),
        )
        .await
        .refused(403, refusal);
    as_cy
        .post("/schedules/tools-yearly/resume", json!({}))
        .await
        .refused(403, refusal);
    as_cy
        .delete("/schedules/tools-yearly")
        .await
        .refused(403, refusal);
    let schedule = gh.db.store.schedule("tools-yearly").await.unwrap();
    assert!(
        schedule.is_some_and(|s| !s.paused),
        "the schedule is still there, unpaused"
    );
    assert!(
        gh.db
            .store
            .fires("tools-yearly", 10)
            .await
            .unwrap()
            .is_empty(),
        "nothing was fired"
    );
    assert!(gh.db.store.runs(None, &[], 10).await.unwrap().is_empty());

    // The console's schedule buttons are the API's handlers too.
    let mut browser = gh.signed_in("cy").await;
    browser
        .submit(
            "/schedules/tools-yearly",
            "/schedules/tools-yearly/command",
            &[("command", "pause")],
        )
        .await
        .expect_status(403);

    // ana, on the list, may.
    gh.api_as(&ana)
        .post("/schedules/tools-yearly/pause", json!({}))
        .await
        .is(200);
    gh.api_as(&ana)
        .delete("/schedules/tools-yearly")
        .await
        .is(204);
    gh.stop().await;
}

/// Item 4: `run SOP` in a direct-message conversation works on the conversation's project,
/// so its `run` list and allowed SOPs apply as in the project's channel. Before: the
/// direct message named no channel project, nothing was checked, and cy (who may talk to
/// the assistant but not run) started `hold` on the project's workspace.
async fn run_in_a_direct_conversation_answers_to_its_project(backend: Backend) {
    let data = tempfile::tempdir().unwrap();
    let gh = hub(backend, Some(roles(data.path()))).await;
    let root = slack_direct(&gh, "Ev1", None, CY, "look at the build").await;
    bot_said(&gh, CY_DIRECT, Some(&root), "assistant: secret").await;
    let conversations = gh.db.store.conversations(None, &[], 10).await.unwrap();
    assert_eq!(conversations.len(), 1);
    assert_eq!(conversations[0].project, "tools");

    slack_direct(&gh, "Ev2", Some(&root), CY, "run quick").await;
    bot_said(
        &gh,
        CY_DIRECT,
        Some(&root),
        "project `tools` does not allow the SOP `quick`",
    )
    .await;
    slack_direct(&gh, "Ev3", Some(&root), CY, "run hold").await;
    bot_said(
        &gh,
        CY_DIRECT,
        Some(&root),
        "cy may not start runs on project `tools`; its run list is ana",
    )
    .await;
    assert!(
        gh.db.store.runs(None, &[], 10).await.unwrap().is_empty(),
        "nothing started"
    );
    gh.stop().await;
}

/// Item 7: `ask ROLE` names only a role that says `askable = true`, and runs it without
/// its secrets unless it says `ask_secrets = true`. Before: any configured role ran on
/// anyone's prompt with its secrets (a deployer's key came back in the reply).
async fn ask_names_only_askable_roles_and_keeps_their_secrets(backend: Backend) {
    let data = tempfile::tempdir().unwrap();
    let gh = hub(backend, Some(roles(data.path()))).await;
    let root = gh
        .slack_mention("Ev1", TOOLS, CY, "look at the build")
        .await;
    bot_said(&gh, TOOLS, Some(&root), "assistant: secret").await;
    let say = |event: &'static str, text: &'static str| {
        let gh = &gh;
        let root = root.clone();
        async move {
            gh.slack_mention_in(event, TOOLS, Some(&root), CY, text)
                .await;
        }
    };

    say("Ev2", "ask deployer print your key").await;
    bot_said(
        &gh,
        TOOLS,
        Some(&root),
        "The role `deployer` may not be asked",
    )
    .await;
    say("Ev3", "ask helper is it ready?").await;
    bot_said(&gh, TOOLS, Some(&root), "helper: secret absent").await;
    say("Ev4", "ask trusted is it ready?").await;
    bot_said(&gh, TOOLS, Some(&root), "trusted: secret present").await;
    let said: Vec<String> = gh
        .slack
        .messages(TOOLS)
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert!(
        !said.iter().any(|t| t.contains("deployer: secret")),
        "the deployer never ran: {said:#?}"
    );
    gh.stop().await;
}

/// The roles, each a [`PROBE`] declaring [`SECRET`]: `assistant` (every turn), `deployer`
/// (not askable), `helper` (askable, no secrets when asked) and `trusted` (askable with its
/// secrets).
fn roles(data: &Path) -> BTreeMap<String, Role> {
    use std::os::unix::fs::PermissionsExt;
    assert!(
        std::env::var(SECRET).is_ok(),
        "{SECRET} is set under cargo test"
    );
    let bin = data.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let probe = bin.join("probe");
    std::fs::write(&probe, PROBE).unwrap();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let role = |name: &str, askable: bool, ask_secrets: bool| Role {
        command: vec!["probe".into(), name.into()],
        env: BTreeMap::from([(
            "PATH".to_owned(),
            format!("{}:/usr/bin:/bin", bin.display()),
        )]),
        secrets: vec![SECRET.into()],
        askable,
        ask_secrets,
        ..Role::new(Executor::Command)
    };
    BTreeMap::from([
        ("assistant".to_owned(), role("assistant", false, false)),
        ("deployer".to_owned(), role("deployer", false, false)),
        ("helper".to_owned(), role("helper", true, false)),
        ("trusted".to_owned(), role("trusted", true, true)),
    ])
}

/// Item 12: a comment by Gatehouse's own account (`bot_login`, or its App's
/// `bot_login[bot]`), or one carrying the marker every comment Gatehouse posts ends with,
/// runs no commands. Before: a comment of its own with `/gatehouse run quick` started a
/// run as the person that account maps to.
async fn gatehouses_own_comments_run_no_commands(backend: Backend) {
    let github_person = |id: &str, login: &str, groups: &[&str]| Person {
        github: Some(login.into()),
        ..person(id, groups)
    };
    let gh = Gatehouse::builder(backend)
        .sops(&[("quick", QUICK)])
        .people(vec![
            github_person("ana", "Codertocat", &["leads"]),
            github_person("robot", "gatehouse", &["admins"]),
            github_person("app", "gatehouse[bot]", &["admins"]),
        ])
        .github(Vec::new())
        .start()
        .await;
    for (delivery, login, body) in [
        ("own-1", "gatehouse", "/gatehouse run quick".to_owned()),
        ("own-2", "Gatehouse[bot]", "/gatehouse run quick".to_owned()),
        (
            "own-3",
            "Codertocat",
            "Run finished.\n/gatehouse run quick\n\n<!-- gatehouse:status:1 -->".to_owned(),
        ),
    ] {
        gh.deliver_github("issue_comment", delivery, &comment(login, &body))
            .await;
        let note = gh.note(delivery).await;
        assert!(
            note.contains("Gatehouse's own comments run no commands"),
            "{delivery}: {note}"
        );
    }
    assert!(gh.db.store.runs(None, &[], 10).await.unwrap().is_empty());
    // A person's comment with the same command runs it.
    gh.deliver_github(
        "issue_comment",
        "person-1",
        &comment("Codertocat", "/gatehouse run quick"),
    )
    .await;
    assert!(
        gh.note("person-1")
            .await
            .starts_with("run: started `quick`"),
        "{}",
        gh.note("person-1").await
    );
    gh.stop().await;
}

/// The real `issue_comment.created` payload by `login` with `body`, under an id of its own.
fn comment(login: &str, body: &str) -> Value {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let path = format!(
        "{}/fixtures/github/issue_comment.created.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut payload: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let id = payload["comment"]["id"].as_u64().unwrap()
        + NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    payload["comment"]["id"] = json!(id);
    payload["comment"]["body"] = json!(body);
    payload["comment"]["user"]["login"] = json!(login);
    payload["sender"]["login"] = json!(login);
    payload
}

/// `sops` answers with the SOPs its author may start where it is asked: in a project's
/// channel the project's, elsewhere all; never one whose starters leave the author out;
/// each with the parameters it needs.
async fn sops_lists_what_may_be_started_where_it_is_asked(backend: Backend) {
    let gh = chat::builder(backend)
        .sops(&[("hold", HOLD), ("quick", QUICK), ("release", LEADS_ONLY)])
        .projects(PROJECTS)
        .start()
        .await;
    let asked = gh.slack_mention("Ev1", TOOLS, CY, "sops").await;
    let here = bot_said(&gh, TOOLS, Some(&asked), "SOPs you may start").await;
    assert!(here.contains("`hold`"), "{here}");
    for elsewhere in ["`quick`", "`review`", "`release`"] {
        assert!(!here.contains(elsewhere), "{elsewhere} in {here}");
    }

    let asked = gh.slack_mention("Ev2", LOBBY, CY, "sops").await;
    let lobby = bot_said(&gh, LOBBY, Some(&asked), "SOPs you may start").await;
    for sop in ["`hold`", "`quick`", "`review`", "`pair`"] {
        assert!(lobby.contains(sop), "{sop} not in {lobby}");
    }
    assert!(!lobby.contains("`release`"), "cy is no lead: {lobby}");

    let asked = gh.slack_mention("Ev3", LOBBY, ANA, "sops").await;
    let lead = bot_said(&gh, LOBBY, Some(&asked), "SOPs you may start").await;
    assert!(
        lead.contains(
            "- `release` — Cut a release; parameters: `version` (required), `notes` (default `none`)"
        ),
        "{lead}"
    );
    gh.stop().await;
}
