//! `gatehouse up` and the CLI, as a user runs them: real processes, real HTTP, SQLite.

mod harness;

use std::process::Command;
use std::time::Duration;

use harness::Up;
use serde_json::Value;

const SOPS: &[(&str, &str)] = &[
    (
        "slow",
        "name: slow\nnodes:\n  wait:\n    kind: script\n    run: echo $$ > \"$GATEHOUSE_WORKSPACE/pid\"; sleep 60\n",
    ),
    (
        "late",
        "name: late\nnodes:\n  nap:\n    kind: script\n    run: sleep 30\n    timeout: 1s\n",
    ),
    (
        "steps",
        "name: steps\nnodes:\n  first: { kind: script, run: 'echo first >> \"$GATEHOUSE_WORKSPACE/log\"' }\n  check: { kind: gate, needs: [first], approvers: [ana], send_back: [first] }\n  second: { kind: script, needs: [check], run: 'echo second >> \"$GATEHOUSE_WORKSPACE/log\"' }\n",
    ),
    ("broken", "name: broken\nnodes:\n  a: { kind: script }\n"),
    (
        "tick",
        "name: tick\nnodes:\n  t: { kind: script, run: \"true\" }\n",
    ),
    (
        "both",
        "name: both\nnodes:\n  edit: { kind: script, run: 'echo api > api/API.md; echo web > web/WEB.md' }\n  ship: { kind: deliver, needs: [edit] }\n",
    ),
];

/// The people every test here knows, the SOPs above and a short lease (so an attempt cut
/// off by kill -9 is reported within the test), with `extra` appended.
fn config(extra: &str) -> String {
    format!(
        "[server]\nsop_dirs = [\"sops\"]\n[runner]\nlease = \"2s\"\n[[people]]\nid = \"ana\"\nslack = \"U0ANA\"\ndiscord = \"4242\"\ngroups = [\"leads\"]\n[[people]]\nid = \"admin\"\ngroups = [\"leads\"]\n{extra}"
    )
}

/// `gatehouse up` with these tests' configuration.
fn start() -> Up {
    start_with("")
}

/// Starts with `extra` appended to the configuration file.
fn start_with(extra: &str) -> Up {
    start_in(tempfile::tempdir().unwrap(), extra, Vec::new())
}

/// Starts in `dir` (which may hold more SOPs under `sops/`) with `extra` appended to the
/// configuration file and `env` in the process's environment.
fn start_in(dir: tempfile::TempDir, extra: &str, env: Vec<(String, String)>) -> Up {
    Up::builder()
        .dir(dir)
        .sops(SOPS)
        .config(&config(extra))
        .envs(env)
        .start()
}

/// A token for a reviewer other than the requester (the admin).
fn reviewer(up: &Up) -> String {
    up.token("ana")
}

/// Posts a Slack Events API body to `/webhooks/slack/events`, signed with the signing
/// secret the Slack tests configure (`sl4ck`); returns the status.
fn slack_event(up: &Up, runtime: &tokio::runtime::Runtime, event: String) -> u16 {
    let now = chrono::Utc::now().timestamp();
    let signature = gatehouse_slack::sign_request(b"sl4ck", now, event.as_bytes());
    runtime.block_on(async {
        reqwest::Client::new()
            .post(format!("{}/webhooks/slack/events", up.url()))
            .header("X-Slack-Request-Timestamp", now.to_string())
            .header("X-Slack-Signature", signature)
            .body(event)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    })
}

#[test]
fn platform_check_approved_succeeds_with_both_artifacts() {
    let up = start();
    assert!(up.data_dir().join("admin.token").exists());
    let run = up.start_run("platform-check");
    up.wait(&run, "waiting");
    let gates = up.json(&["gate", "list"]);
    assert_eq!(gates[0]["id"], format!("{run}/confirm"));
    let token = reviewer(&up);
    let out = up.cli(&[
        "gate",
        "approve",
        &format!("{run}/confirm"),
        "--token",
        &token,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = up.wait(&run, "succeeded");
    let attempts: Vec<_> = shown["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["node"].as_str().unwrap(),
                a["status"].as_str().unwrap(),
                a["exit_code"].as_i64(),
            )
        })
        .collect();
    assert_eq!(
        attempts,
        [
            ("report", "succeeded", Some(0)),
            ("finish", "succeeded", Some(0))
        ]
    );
    let artifacts: Vec<_> = shown["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(artifacts, ["completed.md", "welcome.md"]);
    assert!(
        up.artifact(&run, "finish", 1, "completed.md")
            .contains("The report was approved")
    );

    let tree = String::from_utf8(up.cli(&["run", "show", &run]).stdout).unwrap();
    assert!(tree.contains("platform-check · succeeded"), "{tree}");
    assert!(
        tree.contains("└─ finish   succeeded         attempt 1"),
        "{tree}"
    );
}

#[test]
fn send_back_reruns_report_as_attempt_2_with_rework_1() {
    let up = start();
    let token = reviewer(&up);
    let run = up.start_run("platform-check");
    up.wait(&run, "waiting");
    let gate = format!("{run}/confirm");
    let out = up.cli(&[
        "gate",
        "send-back",
        &gate,
        "--to",
        "report",
        "--comment",
        "name the error budget",
        "--token",
        &token,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for _ in 0..400 {
        if Up::node(&up.show(&run), "confirm")["attempt"] == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let shown = up.wait(&run, "waiting");
    let report = Up::node(&shown, "report");
    assert_eq!(
        (report["attempt"].as_u64(), report["rework_count"].as_u64()),
        (Some(2), Some(1))
    );
    assert!(
        up.artifact(&run, "report", 2, "welcome.md")
            .contains("Reworked after review: name the error budget")
    );
    assert!(
        up.cli(&["gate", "approve", &gate, "--token", &token])
            .status
            .success()
    );
    up.wait(&run, "succeeded");
}

#[test]
fn a_waiting_gate_survives_kill_9_and_the_run_completes_after_restart() {
    let mut up = start();
    let token = reviewer(&up);
    let run = up.start_run("platform-check");
    up.wait(&run, "waiting");
    up.kill_9();
    up.restart();
    let shown = up.wait(&run, "waiting");
    assert_eq!(Up::node(&shown, "confirm")["status"], "waiting_approval");
    assert!(
        up.cli(&[
            "gate",
            "approve",
            &format!("{run}/confirm"),
            "--token",
            &token
        ])
        .status
        .success()
    );
    let shown = up.wait(&run, "succeeded");
    assert_eq!(shown["artifacts"].as_array().unwrap().len(), 2);
}

#[test]
fn reject_fails_the_run() {
    let up = start();
    let token = reviewer(&up);
    let run = up.start_run("platform-check");
    up.wait(&run, "waiting");
    assert!(
        up.cli(&[
            "gate",
            "reject",
            &format!("{run}/confirm"),
            "--comment",
            "not now",
            "--token",
            &token
        ])
        .status
        .success()
    );
    let shown = up.wait(&run, "failed");
    assert_eq!(
        shown["failure"],
        "gate `confirm` was rejected by ana: not now"
    );
    assert_eq!(Up::node(&shown, "finish")["status"], "skipped");
}

#[test]
fn cancel_during_a_running_script_leaves_no_process() {
    let up = start();
    let run = up.start_run("slow");
    let pid = gatehouse_tests::script_pid(&up.data_dir().join(format!("runs/{run}/workspace/pid")));
    assert!(up.cli(&["run", "cancel", &run]).status.success());
    up.wait(&run, "cancelled");
    assert!(
        gatehouse_tests::process_gone(&pid),
        "the script outlived its cancelled run"
    );
}

#[test]
fn pause_resume_and_retry_from_a_node() {
    let up = start();
    let token = reviewer(&up);
    let run = up.start_run("steps");
    up.wait(&run, "waiting");
    assert!(up.cli(&["run", "pause", &run]).status.success());
    up.wait(&run, "paused");
    assert!(
        up.cli(&[
            "gate",
            "approve",
            &format!("{run}/check"),
            "--token",
            &token
        ])
        .status
        .success()
    );
    std::thread::sleep(Duration::from_millis(500));
    let shown = up.wait(&run, "paused");
    assert_eq!(
        Up::node(&shown, "second")["status"],
        "ready",
        "nothing new starts while paused"
    );
    assert!(up.cli(&["run", "resume", &run]).status.success());
    up.wait(&run, "succeeded");

    assert!(
        up.cli(&["run", "retry", &run, "--node", "first"])
            .status
            .success()
    );
    let shown = up.wait(&run, "waiting");
    assert_eq!(Up::node(&shown, "first")["attempt"], 2);
    let log =
        std::fs::read_to_string(up.data_dir().join(format!("runs/{run}/workspace/log"))).unwrap();
    assert_eq!(
        log, "first\nsecond\nfirst\n",
        "the workspace is kept across the run's nodes"
    );
}

#[test]
fn a_timeout_fails_the_node() {
    let up = start();
    let run = up.start_run("late");
    let shown = up.wait(&run, "failed");
    assert_eq!(shown["failure"], "node `nap` failed: timed out");
}

#[test]
fn bad_input_is_refused_with_a_clear_message_and_changes_nothing() {
    let up = start();
    let token = reviewer(&up);
    assert!(
        up.fails(&["run", "list", "--token", "not-a-token"])
            .starts_with("error: unknown token (401 Unauthorized): asked "),
        "a refused token names the server asked"
    );
    assert_eq!(
        up.fails(&["run", "show", "01a22bee-97f4-75bf-a6d4-722d91cb6931"]),
        "error: no run matches `01a22bee-97f4-75bf-a6d4-722d91cb6931` (404 Not Found)"
    );
    assert!(
        up.fails(&["run", "start", "broken"])
            .starts_with("error: no SOP named `broken`"),
        "invalid SOP files never start"
    );
    assert_eq!(
        up.fails(&["run", "start", "bug-fix", "--param", "repo=acme/api"]),
        "error: `bug-fix` cannot start: node `clarify` uses the agent role `analyst`, which is not configured (add [roles.analyst] to the configuration) (422 Unprocessable Entity)"
    );

    let run = up.start_run("platform-check");
    up.wait(&run, "waiting");
    let gate = format!("{run}/confirm");
    let before = up.show(&run);
    assert_eq!(
        up.fails(&[
            "gate",
            "send-back",
            &gate,
            "--to",
            "finish",
            "--comment",
            "x",
            "--token",
            &token
        ]),
        "error: gate `confirm` cannot send work back to `finish`; it may send back to: report (422 Unprocessable Entity)"
    );
    assert_eq!(
        up.fails(&[
            "gate",
            "send-back",
            &gate,
            "--to",
            "report",
            "--token",
            &token
        ]),
        "error: sending work back needs a comment for whoever redoes it (422 Unprocessable Entity)"
    );
    assert_eq!(
        up.fails(&["gate", "approve", &gate]),
        "error: the requester may not approve their own requirement at gate `confirm` (403 Forbidden)"
    );
    assert_eq!(
        up.fails(&["token", "create", "mallory"]),
        "error: `mallory` is not one of the people known to Gatehouse; an administrator adds them first (`gatehouse person add mallory`) (422 Unprocessable Entity)"
    );
    up.json(&["person", "add", "mallory"]);
    let outsider = up.json(&["token", "create", "mallory"])["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        up.fails(&["gate", "approve", &gate, "--token", &outsider]),
        "error: mallory may not decide gate `confirm`; its approvers are group:leads (403 Forbidden)"
    );
    assert_eq!(
        up.fails(&[
            "gate",
            "approve",
            &format!("{run}/report"),
            "--token",
            &token
        ]),
        "error: `report` is not a gate (422 Unprocessable Entity)"
    );
    assert_eq!(
        up.fails(&["run", "resume", &run]),
        "error: the run is not paused (409 Conflict)"
    );
    assert_eq!(
        up.show(&run)["nodes"],
        before["nodes"],
        "refusals change nothing"
    );
    assert!(
        up.cli(&["gate", "approve", &gate, "--token", &token])
            .status
            .success()
    );
    up.wait(&run, "succeeded");
    assert_eq!(
        up.fails(&["gate", "approve", &gate, "--token", &token]),
        "error: the run has already ended (Succeeded) (409 Conflict)"
    );
}

#[test]
fn a_login_link_from_the_cli_opens_the_console_and_run_show_writes_the_graph() {
    let up = start();
    let out = up.cli(&["login"]);
    assert!(out.status.success(), "{out:?}");
    let printed = String::from_utf8(out.stdout).unwrap();
    let link = printed.lines().next().unwrap_or_default();
    let path = &link[link.find("/login/gh_").expect("a login link")..];
    assert!(
        printed.contains("signs admin in to the console once"),
        "{printed}"
    );
    let page = up.http_get(path);
    assert!(page.contains("Sign in as admin"), "{page}");

    let run = up.start_run("steps");
    up.wait(&run, "waiting");
    let file = up.dir().join("run.svg");
    let out = up.cli(&["run", "show", &run, "--svg", file.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let picture = std::fs::read_to_string(&file).unwrap();
    assert!(
        picture.starts_with("<svg") && picture.contains("waiting"),
        "{picture}"
    );
    // The tree is drawn as before.
    assert!(String::from_utf8_lossy(&out.stdout).contains("check"));
}

#[test]
fn the_openapi_document_is_served() {
    let up = start();
    let doc: Value = serde_json::from_str(&up.http_get("/api/v1/openapi.json")).unwrap();
    assert_eq!(doc["info"]["title"], "Gatehouse API");
    for path in [
        "/runs",
        "/runs/{id}",
        "/gates",
        "/runs/{id}/gates/{node}/decision",
        "/tokens",
        "/schedules",
        "/schedules/{name}/backfill",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} is documented");
    }
}

#[test]
fn kill_9_during_a_script_stops_it_at_restart_and_never_runs_that_attempt_twice() {
    let mut up = start();
    let run = up.start_run("slow");
    let pid = gatehouse_tests::script_pid(&up.data_dir().join(format!("runs/{run}/workspace/pid")));
    up.kill_9();
    assert!(
        !gatehouse_tests::process_gone(&pid),
        "a script outlives a killed gatehouse until the restart"
    );
    up.restart();
    assert!(
        gatehouse_tests::process_gone(&pid),
        "the restart stopped the orphaned script"
    );
    // The cut-off attempt is recorded interrupted and never run again; the node runs
    // again as attempt 2 (it has no `retry`: interruptions are not its failures).
    let mut shown = up.show(&run);
    for _ in 0..600 {
        if Up::node(&shown, "wait")["attempt"] == 2
            && Up::node(&shown, "wait")["status"] == "running"
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
        shown = up.show(&run);
    }
    assert_eq!(Up::node(&shown, "wait")["attempt"], 2, "{shown:#}");
    let first = &shown["attempts"][0];
    assert_eq!(
        (&first["attempt"], &first["status"], &first["error"]),
        (
            &Value::from(1),
            &Value::from("interrupted"),
            &Value::from("interrupted: the runner stopped during this attempt")
        ),
        "{shown:#}"
    );
    assert!(up.cli(&["run", "cancel", &run]).status.success());
    up.wait(&run, "cancelled");
}

#[test]
fn configured_schedules_start_runs() {
    let up = start_with(
        "[[schedules]]\nname = \"every-second\"\ncron = \"* * * * * *\"\nsop = \"tick\"\noverlap = \"allow_all\"\n",
    );
    for _ in 0..200 {
        let runs = up.json(&["run", "list", "--status", "succeeded"]);
        let ticks: Vec<_> = runs
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["sop"] == "tick" && r["requested_by"] == "admin")
            .collect();
        if ticks.len() >= 2 {
            let metrics = up.http_get("/metrics");
            assert!(
                metrics.contains("gatehouse_schedule_lateness_seconds_bucket{le=\"0.5\"}"),
                "{metrics}"
            );
            assert!(
                metrics.contains("gatehouse_schedule_fires_total{outcome=\"started\"}"),
                "{metrics}"
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "the schedule did not start runs: {:#}",
        up.json(&["run", "list"])
    );
}

#[test]
fn schedules_are_operated_from_the_cli() {
    let up = start_with(
        "[[schedules]]\nname = \"nightly\"\ncron = \"0 3 * * *\"\nsop = \"tick\"\ncatchup_window = \"0s\"\n",
    );
    let created = up.json(&[
        "schedule",
        "create",
        "hourly",
        "--cron",
        "0 * * * *",
        "--tz",
        "Europe/Berlin",
        "--sop",
        "steps",
        "--jitter",
        "1m",
    ]);
    let next = created["next_fire"].as_str().unwrap();
    assert!(next.ends_with(":00:00+01:00"), "{next}");
    assert_eq!(created["source"], "api");
    assert_eq!(created["jitter"], "1m");

    // Bad definitions are refused naming the field; nothing is stored.
    let create = |name: &str, extra: &[&str]| {
        let mut args = vec!["schedule", "create", name, "--sop", "tick"];
        args.extend_from_slice(extra);
        up.fails(&args)
    };
    assert!(create("feb30", &["--cron", "0 0 30 2 *"]).contains("never fires"));
    assert!(
        create("mars", &["--cron", "@daily", "--tz", "Mars/Base"]).contains("timezone `Mars/Base`")
    );
    assert!(create("x", &["--cron", "61 * * * *"]).contains("cron `61 * * * *`"));
    assert!(
        create(
            "past",
            &["--cron", "@daily", "--end", "2020-01-01T00:00:00Z"]
        )
        .contains("end")
    );
    assert!(create("hourly", &["--cron", "@daily"]).contains("exists already"));
    assert!(
        up.fails(&[
            "schedule", "create", "nosop", "--cron", "@daily", "--sop", "nope"
        ])
        .contains("sop: no SOP named `nope`")
    );
    let names: Vec<Value> = up
        .json(&["schedule", "list"])
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].clone())
        .collect();
    assert_eq!(names, ["hourly", "nightly"]);

    // A manual trigger starts a run that links back; a second one meets the overlap policy.
    let fire = up.json(&["schedule", "trigger", "hourly"]);
    assert_eq!(fire["outcome"], "started", "{fire:#}");
    let run = fire["run_id"].as_str().unwrap().to_owned();
    let shown = up.wait(&run, "waiting");
    assert_eq!(shown["schedule"]["name"], "hourly");
    let again = up.json(&["schedule", "trigger", "hourly"]);
    assert_eq!(again["outcome"], "skipped_overlap", "{again:#}");
    let detail = up.json(&["schedule", "show", "hourly"]);
    assert_eq!(detail["fires"], 2);
    assert_eq!(detail["skipped"], 1);
    assert_eq!(detail["last_fire"]["outcome"], "skipped_overlap");
    assert_eq!(detail["recent"][1]["kind"], "manual");
    assert_eq!(detail["recent"][1]["run_status"], "waiting");
    assert_eq!(detail["upcoming"].as_array().unwrap().len(), 5);

    // Pause with a note, refuse triggers while paused, resume.
    let paused = up.json(&["schedule", "pause", "hourly", "--note", "release freeze"]);
    assert_eq!(paused["paused"], true);
    assert_eq!(paused["pause_note"], "release freeze");
    assert_eq!(paused["next_fire"], Value::Null);
    assert!(
        up.fails(&["schedule", "trigger", "hourly"])
            .contains("paused")
    );
    let resumed = up.json(&["schedule", "resume", "hourly"]);
    assert_eq!(resumed["paused"], false);
    assert!(resumed["next_fire"].is_string());

    // Backfill two missed nights: they run one after another.
    let today = chrono::Utc::now().date_naive();
    let day = |back: i64| {
        (today - chrono::Duration::days(back))
            .format("%Y-%m-%d")
            .to_string()
    };
    let result = up.json(&[
        "schedule",
        "backfill",
        "nightly",
        "--from",
        &format!("{}T00:00:00Z", day(2)),
        "--to",
        &format!("{}T12:00:00Z", day(1)),
    ]);
    assert_eq!(result["queued"].as_array().unwrap().len(), 2, "{result:#}");
    for _ in 0..400 {
        let detail = up.json(&["schedule", "show", "nightly"]);
        let done = detail["recent"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["run_status"] == "succeeded" && f["kind"] == "backfill")
            .count();
        if done == 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let detail = up.json(&["schedule", "show", "nightly"]);
    let backfilled: Vec<_> = detail["recent"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "backfill")
        .collect();
    assert!(
        backfilled.iter().all(|f| f["run_status"] == "succeeded"),
        "{detail:#}"
    );
    let again = up.json(&[
        "schedule",
        "backfill",
        "nightly",
        "--from",
        &format!("{}T00:00:00Z", day(2)),
        "--to",
        &format!("{}T12:00:00Z", day(1)),
    ]);
    assert_eq!(again["already"], 2, "a backfill runs each time once");
    assert!(
        up.fails(&[
            "schedule",
            "backfill",
            "nightly",
            "--from",
            "2020-01-01T00:00:00Z",
            "--to",
            "2030-01-01T00:00:00Z"
        ])
        .contains("in the future")
    );

    // Text output, then delete: configuration schedules stay, API ones go.
    let out = up.cli(&["schedule", "list"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("NAME") && text.contains("hourly"),
        "{text}"
    );
    assert!(
        up.fails(&["schedule", "delete", "nightly"])
            .contains("configuration file")
    );
    assert!(up.cli(&["schedule", "delete", "hourly"]).status.success());
    assert!(
        up.fails(&["schedule", "show", "hourly"])
            .contains("no schedule named `hourly`")
    );
    assert_eq!(up.show(&run)["schedule"]["name"], "hourly", "runs stay");
}

#[test]
fn github_webhooks_start_runs_and_post_their_status() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let github = runtime.block_on(gatehouse_fake_forge::github::FakeGithub::start());
    let git = tempfile::tempdir().unwrap();
    gatehouse_fake_forge::git::bare_repository(&git.path().join("Codertocat/Hello-World.git"));
    let up = start_with(&format!(
        "[github]\napi_url = \"{}\"\ntoken = \"ghs_secret_token\"\nwebhook_secrets = [\"s3cret\"]\ngit_url = \"file://{}\"\n[[github.triggers]]\nlabel = \"bug\"\nsop = \"tick\"\nrepos = [\"Codertocat/*\"]\n",
        github.url,
        git.path().display()
    ));
    let body = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/github/issues.labeled.json"
    ))
    .unwrap();
    let signature = harness::http::github_signature(b"s3cret", &body);
    let post = |signature: &str| {
        runtime.block_on(async {
            reqwest::Client::new()
                .post(format!("{}/webhooks/github", up.url()))
                .header("X-GitHub-Event", "issues")
                .header("X-GitHub-Delivery", "delivery-1")
                .header("X-Hub-Signature-256", signature)
                .body(body.clone())
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        })
    };
    assert_eq!(post("sha256=00"), 401);
    assert_eq!(post(&signature), 202);
    for _ in 0..400 {
        let comments = github.comments("Codertocat/Hello-World", 1);
        if comments.iter().any(|c| c.contains("— succeeded")) {
            let runs = up.json(&["run", "list", "--status", "succeeded"]);
            assert_eq!(runs.as_array().unwrap().len(), 1, "{runs:#}");
            assert_eq!(comments.len(), 1, "{comments:#?}");
            // The issue is a requirement the CLI lists and shows, with the run it got.
            let requirements = up.json(&["requirement", "list", "--state", "open"]);
            let listed = requirements.as_array().unwrap();
            assert_eq!(listed.len(), 1, "{requirements:#}");
            assert_eq!(listed[0]["key"], "github:Codertocat/Hello-World#1");
            assert_eq!(listed[0]["source"]["kind"], "github");
            let id = listed[0]["id"].as_str().unwrap();
            let shown = up.json(&["requirement", "show", id]);
            assert_eq!(shown["runs"][0]["id"], runs[0]["id"], "{shown:#}");
            assert_eq!(shown["runs"][0]["status"], "succeeded");
            let text = up.cli(&["requirement", "show", id]);
            let text = String::from_utf8_lossy(&text.stdout);
            assert!(
                text.contains("github:Codertocat/Hello-World#1 · open") && text.contains("tick"),
                "{text}"
            );
            let closed = up.json(&["requirement", "list", "--state", "closed"]);
            assert_eq!(closed.as_array().unwrap().len(), 0, "{closed:#}");
            assert!(
                up.fails(&["requirement", "show", "not-a-uuid"])
                    .contains("400"),
                "a bad id is refused"
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!(
        "no run reported on the issue: {:#?} {:#}",
        github.comments("Codertocat/Hello-World", 1),
        up.json(&["run", "list"])
    );
}

/// A project from the configuration file: `project list` shows it, `run start --project`
/// checks out both repositories and the delivery opens a pull request in each, and a
/// repository outside the project is refused at once.
#[test]
fn a_project_run_from_the_cli_delivers_each_repository() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let github = runtime.block_on(gatehouse_fake_forge::github::FakeGithub::start());
    let git = tempfile::tempdir().unwrap();
    for repo in ["acme/api", "acme/web"] {
        gatehouse_fake_forge::git::bare_repository(&git.path().join(format!("{repo}.git")));
    }
    let up = start_with(&format!(
        "[github]\napi_url = \"{}\"\ntoken = \"ghs_secret_token\"\nwebhook_secrets = [\"s3cret\"]\ngit_url = \"file://{}\"\n[[projects]]\nname = \"shop\"\nrepositories = [{{ repo = \"acme/api\" }}, {{ repo = \"acme/web\", branch = \"main\" }}]\n",
        github.url,
        git.path().display()
    ));
    let listed = up.json(&["project", "list"]);
    assert_eq!(listed[0]["name"], "shop", "{listed:#}");
    let text = String::from_utf8_lossy(&up.cli(&["project", "list"]).stdout).into_owned();
    assert!(text.starts_with("shop\n  acme/api"), "{text}");
    assert!(
        up.fails(&[
            "run",
            "start",
            "both",
            "--project",
            "shop",
            "--repo",
            "acme/other"
        ])
        .contains("acme/other is not a repository of project `shop`")
    );
    let run = up.json(&["run", "start", "both", "--project", "shop"])["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    up.wait(&run, "succeeded");
    let text = String::from_utf8_lossy(&up.cli(&["run", "show", &run]).stdout).into_owned();
    assert!(
        text.contains("project shop: acme/api, acme/web\n"),
        "{text}"
    );
    let pulls = github.pulls();
    let mut repos: Vec<&str> = pulls.iter().map(|p| p.repo.as_str()).collect();
    repos.sort();
    assert_eq!(repos, ["acme/api", "acme/web"], "{pulls:#?}");
    let requirements = up.json(&["requirement", "list"]);
    let id = requirements[0]["id"].as_str().unwrap();
    let text = String::from_utf8_lossy(&up.cli(&["requirement", "show", id]).stdout).into_owned();
    assert!(
        text.contains("project shop") && text.contains("acme/web#") && text.contains("open"),
        "{text}"
    );
}

/// Repositories off GitHub from the configuration file, with no `[github]` at all: one on
/// GitLab and one on Gitea (`[forges.NAME]`, their git in local bare repositories), each
/// delivered as a merge request (pull request) there, recorded, and shown by `run show` and
/// `requirement show`.
#[test]
fn a_project_on_gitlab_and_gitea_delivers_without_github() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let gitlab = runtime.block_on(gatehouse_fake_forge::gitlab::FakeGitlab::start("glpat-x"));
    let gitea = runtime.block_on(gatehouse_fake_forge::gitea::FakeGitea::start("tea-x"));
    let git = tempfile::tempdir().unwrap();
    for repo in ["acme/api", "acme/web"] {
        gatehouse_fake_forge::git::bare_repository(&git.path().join(format!("{repo}.git")));
    }
    let up = start_with(&format!(
        "[forges.lab]\nkind = \"gitlab\"\napi_url = \"{}\"\ntoken = \"glpat-x\"\ngit_url = \"file://{git}\"\n[forges.tea]\nkind = \"gitea\"\napi_url = \"{}\"\ntoken = \"tea-x\"\ngit_url = \"file://{git}\"\n[[projects]]\nname = \"shop\"\nrepositories = [{{ repo = \"acme/api\", forge = \"lab\" }}, {{ repo = \"acme/web\", forge = \"tea\" }}]\n",
        gitlab.api_url(),
        gitea.api_url(),
        git = git.path().display()
    ));
    let run = up.json(&["run", "start", "both", "--project", "shop"])["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    up.wait(&run, "succeeded");
    let requests = gitlab.merge_requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].project, "acme/api");
    let pulls = gitea.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    assert_eq!(pulls[0].project, "acme/web");
    let text = String::from_utf8_lossy(&up.cli(&["run", "show", &run]).stdout).into_owned();
    assert!(
        text.contains(&format!(
            "on the forge `lab` ({}/acme/api/-/merge_requests/1)",
            gitlab.url
        )),
        "{text}"
    );
    let requirements = up.json(&["requirement", "list"]);
    let id = requirements[0]["id"].as_str().unwrap();
    let text = String::from_utf8_lossy(&up.cli(&["requirement", "show", id]).stdout).into_owned();
    assert!(
        text.contains(&format!("acme/web: pushed branch {}", pulls[0].source))
            && text.contains("#1 on the forge `tea`"),
        "{text}"
    );
}

/// The chat configuration end to end: a card for a gate in both chats' approvals channels,
/// decided from a Discord button, the Slack card then showing who decided; a Slack request
/// in a channel with a configured SOP starts it.
#[test]
fn slack_and_discord_from_the_config_file() {
    use gatehouse_tests::fake_discord::FakeDiscord;
    use gatehouse_tests::fake_slack::{self, FakeSlack};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let slack = runtime.block_on(FakeSlack::start());
    let discord = runtime.block_on(FakeDiscord::start());
    let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    let up = start_with(&format!(
        "[slack]\napi_url = \"{}\"\nbot_token = \"{}\"\nsigning_secret = \"sl4ck\"\napprovals_channel = \"C0APPROVALS\"\nchannel_sops = {{ C0REQ = \"tick\" }}\n[discord]\napi_url = \"{}\"\nbot_token = \"{}\"\napplication_id = \"{}\"\npublic_key = \"{}\"\napprovals_channel = \"900\"\ngateway = false\n",
        slack.api_url(),
        fake_slack::BOT_TOKEN,
        discord.api_url(),
        FakeDiscord::TOKEN,
        FakeDiscord::APPLICATION_ID,
        hex::encode(key.verifying_key().as_bytes()),
    ));
    let http = reqwest::Client::new();
    let url = up.url();
    let wait = |what: &str, mut found: Box<dyn FnMut() -> bool + '_>| {
        for _ in 0..400 {
            if found() {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("timed out waiting for {what}");
    };

    let run = up.json(&["run", "start", "steps"]);
    let run = run["run_id"].as_str().unwrap().to_owned();
    wait(
        "the cards",
        Box::new(|| {
            !slack.messages("C0APPROVALS").is_empty() && !discord.messages("900").is_empty()
        }),
    );
    let card = &discord.messages("900")[0];
    let approve = format!("gh:approve:{run}:1:check");
    assert!(
        serde_json::to_string(&card.components)
            .unwrap()
            .contains(&approve),
        "{card:?}"
    );
    let click = serde_json::json!({
        "type": 3, "id": "1300000000000000001", "application_id": FakeDiscord::APPLICATION_ID,
        "token": "interaction-token", "version": 1, "channel_id": "900",
        "member": { "user": { "id": "4242", "username": "ana" } },
        "message": { "id": card.id, "channel_id": "900" },
        "data": { "custom_id": approve, "component_type": 2 },
    })
    .to_string();
    // Interactions signed more than five minutes from now are refused as replays.
    let timestamp = chrono::Utc::now().timestamp().to_string();
    let signature = gatehouse_discord::sign_interaction(&key, &timestamp, click.as_bytes());
    let answer: Value = runtime.block_on(async {
        http.post(format!("{url}/webhooks/discord/interactions"))
            .header("X-Signature-Ed25519", signature)
            .header("X-Signature-Timestamp", timestamp)
            .body(click)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    assert_eq!(answer, serde_json::json!({ "type": 6 }));
    wait(
        "the run to finish",
        Box::new(|| up.json(&["run", "show", &run])["status"] == "succeeded"),
    );
    wait(
        "the Slack card to show the decision",
        Box::new(|| {
            slack.messages("C0APPROVALS")[0]
                .blocks
                .to_string()
                .contains("Approved by ana")
        }),
    );

    // A request in a channel with a SOP starts it, answered in its thread.
    let event = serde_json::json!({
        "type": "event_callback", "event_id": "Ev-up", "team_id": "T1",
        "event": { "type": "app_mention", "user": "U0ANA", "channel": "C0REQ",
                   "ts": "1796000000.000100", "text": "<@U0GATEHOUSE> the nightly export is empty" },
    })
    .to_string();
    assert_eq!(slack_event(&up, &runtime, event), 200);
    wait(
        "the reply in the thread",
        Box::new(|| {
            slack.messages("C0REQ").iter().any(|m| {
                m.thread_ts.as_deref() == Some("1796000000.000100")
                    && m.text.contains("started `tick`")
            })
        }),
    );
    let metrics = up.http_get("/metrics");
    for line in [
        "gatehouse_chat_messages_total{platform=\"slack\",outcome=\"posted\"}",
        "gatehouse_chat_messages_total{platform=\"discord\",outcome=\"posted\"}",
        "gatehouse_webhook_deliveries_total{source=\"discord\",duplicate=\"false\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} in {metrics}");
    }
}

/// A data directory for [`start_in`] with `script` installed as `bin/NAME` (the `bin`
/// folder is returned, for a role's `PATH`) and an empty `sops/`.
fn stand_in(name: &str, script: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(dir.path().join("sops")).unwrap();
    std::fs::write(bin.join(name), script).unwrap();
    std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, bin)
}

/// `gatehouse up` with Slack and a project `notes` on channel `C0NOTES`, whose assistant
/// is the `command` role `helper` running `agent` (a shell script; `role` adds lines to
/// the role's table), given `env`.
struct Assistant {
    runtime: tokio::runtime::Runtime,
    slack: gatehouse_tests::fake_slack::FakeSlack,
    up: Up,
}

impl Assistant {
    fn start(agent: &str, role: &str, env: Vec<(String, String)>) -> Self {
        use gatehouse_tests::fake_slack::{self, FakeSlack};
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let slack = runtime.block_on(FakeSlack::start());
        let (dir, bin) = stand_in("helper", agent);
        let config = format!(
            "[slack]\napi_url = \"{}\"\nbot_token = \"{}\"\nsigning_secret = \"sl4ck\"\n[[projects]]\nname = \"notes\"\nchannels = [\"slack:C0NOTES\"]\nconverse = [\"ana\"]\n[roles.helper]\nexecutor = \"command\"\n{role}\nenv = {{ PATH = \"{}:/usr/bin:/bin\" }}\n[assistant]\nrole = \"helper\"\nmax_queue = 3\n",
            slack.api_url(),
            fake_slack::BOT_TOKEN,
            bin.display()
        );
        let up = start_in(dir, &config, env);
        Self { runtime, slack, up }
    }

    /// ana mentions the bot in `C0NOTES` with `text`, as the message `ts`.
    fn mention(&self, ts: &str, text: &str) {
        let event = serde_json::json!({
            "type": "event_callback", "event_id": format!("Ev-{ts}"), "team_id": "T1",
            "event": { "type": "app_mention", "user": "U0ANA", "channel": "C0NOTES",
                       "ts": ts, "text": format!("<@U0GATEHOUSE> {text}") },
        })
        .to_string();
        assert_eq!(slack_event(&self.up, &self.runtime, event), 200);
    }

    /// The first message in `C0NOTES` that `matches`, waited for up to 10 s.
    fn message(
        &self,
        matches: impl Fn(&gatehouse_tests::fake_slack::SlackMessage) -> bool,
    ) -> gatehouse_tests::fake_slack::SlackMessage {
        for _ in 0..400 {
            if let Some(found) = self.slack.messages("C0NOTES").into_iter().find(&matches) {
                return found;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("{:#?}", self.slack.messages("C0NOTES"));
    }
}

/// `[assistant]` from the configuration file: a mention in a project's Slack channel is
/// answered in its thread by the assistant role (a `command` stand-in here), and `gatehouse
/// conversation list|show` show it.
#[test]
fn a_conversation_from_the_config_file() {
    let assistant = Assistant::start(
        "#!/bin/sh\nread -r message < \"$1\"\necho \"on it: $message\"\n",
        "command = [\"helper\", \"{prompt_file}\"]",
        Vec::new(),
    );
    assistant.mention("1796000000.000200", "summarise the notes");
    assistant.message(|m| {
        m.thread_ts.as_deref() == Some("1796000000.000200")
            && m.text.contains("on it: summarise the notes")
    });
    let up = &assistant.up;
    let list = up.json(&["conversation", "list"]);
    assert_eq!(list[0]["project"], "notes", "{list:#}");
    let id = list[0]["id"].as_str().unwrap().to_owned();
    let shown = up.cli(&["conversation", "show", &id]);
    let text = String::from_utf8_lossy(&shown.stdout);
    let errors = String::from_utf8_lossy(&shown.stderr);
    assert!(
        text.contains("#1 replied  ana: summarise the notes"),
        "{text}{errors}"
    );
    assert!(text.contains("reply: on it: summarise the notes"), "{text}");
}

/// Claude Code's `--output-format stream-json --verbose` events, printed by a stand-in CLI:
/// one tool call (whose summary holds the secret, masked before it is stored), then the
/// result.
const FAKE_CLAUDE: &str = r#"#!/bin/sh
cat > /dev/null
echo edit >> work.txt
echo '{"type":"system","subtype":"init","session_id":"s1"}'
echo "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Bash\",\"input\":{\"command\":\"make check TOKEN=$GH_TEST_TOKEN\"}}]}}"
echo '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok","is_error":false}]}}'
echo '{"type":"result","subtype":"success","is_error":false,"result":"Done.","total_cost_usd":0.01,"usage":{"input_tokens":1000,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":500},"modelUsage":{"claude-sonnet-4-5":{"inputTokens":1000,"outputTokens":500,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.01}}}'
"#;

#[test]
fn agent_usage_shows_in_run_show_and_secrets_never_reach_logs_or_artifacts() {
    let (dir, bin) = stand_in("claude", FAKE_CLAUDE);
    std::fs::write(
        dir.path().join("sops/agentic.yaml"),
        "name: agentic\nnodes:\n  code: { kind: agent, role: coder, prompt: \"Do it.\" }\n  leak:\n    kind: script\n    needs: [code]\n    secrets: [GH_TEST_TOKEN]\n    run: echo token=$GH_TEST_TOKEN; echo $GH_TEST_TOKEN > $GATEHOUSE_ARTIFACTS/out.txt\n    artifacts: [out.txt]\n",
    )
    .unwrap();
    let config = format!(
        "[roles.coder]\nexecutor = \"claude-code\"\nmodel = \"claude-sonnet-4-5\"\nsecrets = [\"GH_TEST_TOKEN\"]\nenv = {{ PATH = \"{}:/usr/bin:/bin\" }}\n[pricing.\"claude-sonnet-4-5\"]\ninput = 3.0\noutput = 15.0\n[[schedules]]\nname = \"notes\"\ncron = \"* * * * * *\"\nrole = \"coder\"\nprompt = \"Write notes for {{{{ run_id }}}}.\"\n",
        bin.display()
    );
    let secret = "s3cr3t-token-value";
    let up = start_in(dir, &config, vec![("GH_TEST_TOKEN".into(), secret.into())]);
    let run = up.start_run("agentic");
    let shown = up.wait(&run, "failed");
    assert_eq!(
        Up::node(&shown, "leak")["last_error"],
        "artifact out.txt contained the value of the secret GH_TEST_TOKEN; it was deleted, not stored"
    );
    assert!(
        !up.data_dir()
            .join(format!("runs/{run}/artifacts/leak/1/out.txt"))
            .exists()
    );
    let watched = up.cli(&["run", "watch", &run]);
    let output = String::from_utf8_lossy(&watched.stdout);
    assert!(output.contains("token=[secret]"), "{output}");
    assert!(!output.contains(secret), "{output}");

    let usage = &shown["usage"];
    assert_eq!(usage["attempts"][0]["model"], "claude-sonnet-4-5");
    assert_eq!(usage["run"]["input_tokens"], 1000);
    assert_eq!(usage["run"]["output_tokens"], 500);
    // 1000 × $3 + 500 × $15 per million tokens.
    assert!((usage["run"]["cost_usd"].as_f64().unwrap() - 0.0105).abs() < 1e-9);
    let text = String::from_utf8_lossy(&up.cli(&["run", "show", &run]).stdout).into_owned();
    assert!(
        text.contains(
            "code#1 claude-sonnet-4-5  in 1000  out 500  cache read 0  cache write 0  $0.0105"
        ),
        "{text}"
    );
    assert!(text.contains("run total: in 1000  out 500"), "{text}");
    assert!(
        text.contains("agent tools:\n  code#1\n    Bash     make check TOKEN=[secret]  ("),
        "{text}"
    );
    let code = shown["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["node"] == "code")
        .unwrap();
    assert_eq!(code["tools"][0]["tool"], "Bash", "{code:#}");
    assert!(
        !code["tools"][0]["summary"]
            .as_str()
            .unwrap()
            .contains(secret),
        "{code:#}"
    );

    // The usage report groups it with its SOP (the schedule's runs have their own).
    let report = up.json(&["report", "usage", "--by", "sop", "--since", "1h"]);
    let groups = report["groups"].as_array().unwrap();
    let agentic = groups.iter().find(|g| g["key"] == "agentic").unwrap();
    assert_eq!(agentic["runs"], 1, "{report:#}");
    // Its `leak` node fails the run on purpose.
    assert_eq!(agentic["failed"], 1, "{report:#}");
    assert_eq!(agentic["input_tokens"], 1000, "{report:#}");
    assert!((agentic["cost_usd"].as_f64().unwrap() - 0.0105).abs() < 1e-9);
    let by_model = up.json(&["report", "usage", "--by", "model"]);
    let model = &by_model["groups"][0];
    assert_eq!(model["key"], "claude-sonnet-4-5", "{by_model:#}");
    assert!(
        model["input_tokens"].as_i64().unwrap() >= 1000,
        "{by_model:#}"
    );
    let csv = up.cli(&["report", "usage", "--by", "sop", "--csv"]);
    let csv = String::from_utf8_lossy(&csv.stdout);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "sop,runs,succeeded,failed,cancelled,duration_ms,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,cost_usd,unpriced_models"
        )
    );
    assert!(
        lines.any(|l| l.starts_with("agentic,1,0,1,0,") && l.contains(",1000,500,0,0,0.010500,")),
        "{csv}"
    );
    assert!(
        up.fails(&["report", "usage", "--by", "colour"])
            .contains("cannot group by `colour`: use project, person, sop, sop-version or model")
    );

    // The schedule's agent shorthand runs as a one-node SOP.
    for _ in 0..200 {
        let runs = up.json(&["run", "list", "--status", "succeeded"]);
        if let Some(task) = runs
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["sop"] == "schedule-notes" && r["requested_by"] == "admin")
        {
            let shown = up.show(task["id"].as_str().unwrap());
            assert_eq!(Up::node(&shown, "agent")["status"], "succeeded");
            assert_eq!(shown["usage"]["run"]["output_tokens"], 500);
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "the agent task did not run: {:#}",
        up.json(&["run", "list"])
    );
}

/// Whether Docker can run sandboxes here; panics when CI requires it and it cannot.
fn docker_ready() -> bool {
    let ready = Command::new("docker")
        .args(["image", "inspect", "gatehouse-sandbox:busybox"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ready {
        assert!(
            std::env::var("DOCKER_TESTS").as_deref() != Ok("required"),
            "DOCKER_TESTS=required but Docker or gatehouse-sandbox:busybox is missing"
        );
        eprintln!("skipped: no Docker engine with gatehouse-sandbox:busybox here");
    }
    ready
}

/// The ids of containers labelled with `run`.
fn containers_of(run: &str) -> Vec<String> {
    let out = Command::new("docker")
        .args([
            "ps",
            "-aq",
            "--filter",
            &format!("label=gatehouse.run={run}"),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn kill_9_during_a_docker_node_removes_its_container_at_restart() {
    if !docker_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sops")).unwrap();
    std::fs::write(
        dir.path().join("sops/boxed.yaml"),
        // `on_interrupt: fail`: the run ends with the interruption, so no new attempt's
        // container is there to confuse the count.
        "name: boxed\nsandbox: boxed\nnodes:\n  wait: { kind: script, on_interrupt: fail, run: \"touch started; sleep 600\" }\n",
    )
    .unwrap();
    let config =
        "[sandbox.profiles.boxed]\nkind = \"docker\"\nimage = \"gatehouse-sandbox:busybox\"\n";
    let mut up = start_in(dir, config, Vec::new());
    let run = up.start_run("boxed");
    let started = up.data_dir().join(format!("runs/{run}/workspace/started"));
    for _ in 0..400 {
        if started.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(started.exists(), "the node started in its container");
    assert_eq!(containers_of(&run).len(), 1);
    up.kill_9();
    assert_eq!(
        containers_of(&run).len(),
        1,
        "the container outlives a killed gatehouse until the restart"
    );
    up.restart();
    let shown = up.wait(&run, "failed");
    assert_eq!(
        shown["failure"],
        "node `wait` failed: interrupted: the runner stopped during this attempt"
    );
    assert_eq!(
        containers_of(&run),
        Vec::<String>::new(),
        "the restart removed it"
    );
}

/// A multi-line secret (an SSH key) and one holding `"` and `\`, for the tests below.
const SSH_KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACBzZWNyZXQta2V5LW1hdGVyaWFsLWZvci10ZXN0cy1vbmx5AAAA\n-----END OPENSSH PRIVATE KEY-----\n";
const DB_PASSWORD: &str = r#"pa"ss\word-42"#;

fn hard_secrets() -> Vec<(String, String)> {
    vec![
        ("SSH_KEY".into(), SSH_KEY.into()),
        ("DB_PASSWORD".into(), DB_PASSWORD.into()),
    ]
}

/// Panics when `text` holds the password or any line of the key.
fn holds_no_hard_secret(what: &str, text: &str) {
    for secret in SSH_KEY.lines().chain([DB_PASSWORD]) {
        assert!(!text.contains(secret), "{what} holds {secret:?}:\n{text}");
    }
}

/// Claude Code's events from a stand-in whose tool call and reply quote both secrets, JSON
/// escaped as the CLI prints them (the key's newlines as `\n`, `"` and `\` escaped).
const FAKE_CLAUDE_QUOTING: &str = r#"#!/bin/sh
cat > /dev/null
esc() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g' | awk 'NR > 1 { printf "\\n" } { printf "%s", $0 }'; }
key=$(esc "$SSH_KEY")
pw=$(esc "$DB_PASSWORD")
echo '{"type":"system","subtype":"init","session_id":"s1"}'
printf '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"psql --password \\"%s\\""}}]}}\n' "$pw"
echo '{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok","is_error":false}]}}'
printf '{"type":"result","subtype":"success","is_error":false,"result":"Key:\\n%s\\nPassword: %s","usage":{"input_tokens":10,"output_tokens":5}}\n' "$key" "$pw"
"#;

/// An agent node and a script printing a multi-line key and a password with `"` and `\`
/// (the password in two writes): neither reaches the stored log, which `run watch` and
/// the console's server-sent events read, nor the recorded tool calls.
#[test]
fn multi_line_and_escaped_secrets_never_reach_logs_or_tool_calls() {
    let (dir, bin) = stand_in("claude", FAKE_CLAUDE_QUOTING);
    std::fs::write(
        dir.path().join("sops/leaky.yaml"),
        r#"name: leaky
nodes:
  code: { kind: agent, role: coder, prompt: "Do it." }
  show:
    kind: script
    needs: [code]
    secrets: [SSH_KEY, DB_PASSWORD]
    run: |
      printf 'key:\n%s\n' "$SSH_KEY"
      printf 'inline: %s.\n' "$SSH_KEY"
      half=$(printf %s "$DB_PASSWORD" | cut -c1-5)
      rest=$(printf %s "$DB_PASSWORD" | cut -c6-)
      printf 'pw=%s' "$half"; sleep 0.3; printf '%s\n' "$rest"
      printf '{"password": "%s"}\n' "$(printf %s "$DB_PASSWORD" | sed 's/\\/\\\\/g; s/"/\\"/g')"
"#,
    )
    .unwrap();
    let config = format!(
        "[roles.coder]\nexecutor = \"claude-code\"\nmodel = \"claude-sonnet-4-5\"\nsecrets = [\"SSH_KEY\", \"DB_PASSWORD\"]\nenv = {{ PATH = \"{}:/usr/bin:/bin\" }}\n",
        bin.display()
    );
    let up = start_in(dir, &config, hard_secrets());
    let run = up.start_run("leaky");
    let shown = up.wait(&run, "succeeded");
    let watched = up.cli(&["run", "watch", &run]);
    let output = String::from_utf8_lossy(&watched.stdout);
    holds_no_hard_secret("the log", &output);
    for masked in [
        "key:",
        "inline: [secret]\n",
        "pw=[secret]",
        r#"{"password": "[secret]"}"#,
    ] {
        assert!(output.contains(masked), "{masked:?} in {output}");
    }
    let code = shown["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["node"] == "code")
        .unwrap();
    assert_eq!(
        code["tools"][0]["summary"], "psql --password \"[secret]\"",
        "{code:#}"
    );
    holds_no_hard_secret("run show", &shown.to_string());
}

/// A conversation's assistant printing both secrets in its reply: the thread gets it
/// masked, and so does the stored turn `conversation show` reads.
#[test]
fn multi_line_and_escaped_secrets_never_reach_a_conversations_thread() {
    let assistant = Assistant::start(
        "#!/bin/sh\nprintf 'Here is the key:\\n%s\\nand the password: %s\\n' \"$SSH_KEY\" \"$DB_PASSWORD\"\n",
        "command = [\"helper\"]\nsecrets = [\"SSH_KEY\", \"DB_PASSWORD\"]",
        hard_secrets(),
    );
    assistant.mention("1796000000.000300", "show me the keys");
    let reply = assistant.message(|m| m.text.contains("Here is the key:"));
    assert_eq!(
        reply.text, "Here is the key:\n[secret]\n\nand the password: [secret]",
        "the key ends in a newline of its own"
    );
    let everything: Vec<String> = assistant
        .slack
        .messages("C0NOTES")
        .into_iter()
        .map(|m| m.text)
        .collect();
    holds_no_hard_secret("the thread", &everything.join("\n"));
    let up = &assistant.up;
    let list = up.json(&["conversation", "list"]);
    let id = list[0]["id"].as_str().unwrap().to_owned();
    let shown = up.json(&["conversation", "show", &id]);
    holds_no_hard_secret("conversation show", &shown.to_string());
}

/// A node that writes a secret it was given into the repository: the run's `deliver` node
/// refuses the change, naming the file and the secret (declared by that node, not by the
/// `deliver` node), and nothing is pushed.
#[test]
fn a_delivery_adding_a_secrets_value_is_refused_and_pushes_nothing() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let github = runtime.block_on(gatehouse_fake_forge::github::FakeGithub::start());
    let git = tempfile::tempdir().unwrap();
    let bare = git.path().join("acme/api.git");
    gatehouse_fake_forge::git::bare_repository(&bare);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sops")).unwrap();
    std::fs::write(
        dir.path().join("sops/spill.yaml"),
        "name: spill\nnodes:\n  edit:\n    kind: script\n    secrets: [SSH_KEY]\n    run: 'mkdir -p deploy; printf \"%s\" \"$SSH_KEY\" > deploy/id; echo notes > NOTES.md'\n  ship: { kind: deliver, needs: [edit] }\n",
    )
    .unwrap();
    let config = format!(
        "[github]\napi_url = \"{}\"\ntoken = \"ghs_secret_token\"\nwebhook_secrets = [\"s3cret\"]\ngit_url = \"file://{}\"\n[[projects]]\nname = \"shop\"\nrepositories = [{{ repo = \"acme/api\" }}]\n",
        github.url,
        git.path().display()
    );
    let up = start_in(dir, &config, hard_secrets());
    let run = up.json(&["run", "start", "spill", "--project", "shop"])["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let shown = up.wait(&run, "failed");
    assert_eq!(
        Up::node(&shown, "ship")["last_error"],
        "refused: the changes to acme/api add the value of the secret SSH_KEY (in deploy/id); nothing was delivered"
    );
    holds_no_hard_secret("run show", &shown.to_string());
    assert!(github.pulls().is_empty());
    let branches =
        gatehouse_fake_forge::git::git(&bare, &["branch", "--list", "--format=%(refname:short)"]);
    assert_eq!(branches.trim(), "main", "nothing pushed");
}
