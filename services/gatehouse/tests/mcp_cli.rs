//! `gatehouse mcp` as a person's assistant meets it: the official MCP client (the `mcp`
//! package from PyPI, driven by `tests/mcp/client.py`) starts `gatehouse mcp` on stdio
//! against a real `gatehouse up`, lists the tools and calls each, with a person's token,
//! a read-only token and a token made for an agent.
//!
//! The client is installed by `tests/mcp/install.sh` into `target/mcp-client` (or where
//! `MCP_CLIENT_PYTHON` names its python). Without it the tests say so and pass, unless
//! `MCP_CLIENT_TESTS=required` (CI, `.ci/run`), where that is a failure.

mod harness;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use harness::Up;
use serde_json::{Value, json};

/// A run that logs, writes a text, a large and a binary artifact, waits at a gate `ana`
/// decides (sending back to `write` allowed), then finishes.
const REVIEW: &str = r#"name: review
params:
  topic: { required: false }
nodes:
  write:
    kind: script
    run: |
      echo "topic: ${GATEHOUSE_PARAM_TOPIC:-none}"
      for i in $(seq 1 50); do echo "line $i"; done
      printf '# Report\n\nAbout %s.\n' "${GATEHOUSE_PARAM_TOPIC:-none}" > "$GATEHOUSE_ARTIFACTS/report.md"
      head -c 200000 /dev/zero | tr '\0' 'x' > "$GATEHOUSE_ARTIFACTS/big.txt"
      printf 'PK\003\004\000\001\002' > "$GATEHOUSE_ARTIFACTS/blob.bin"
    artifacts: [report.md, big.txt, blob.bin]
  check:
    kind: gate
    needs: [write]
    approvers: [ana]
    send_back: [write]
  done: { kind: script, needs: [check], run: "true" }
"#;

/// Every tool, in the order `tools/list` shows them.
const ALL_TOOLS: [&str; 11] = [
    "list_runs",
    "show_run",
    "run_logs",
    "list_artifacts",
    "read_artifact",
    "list_requirements",
    "show_requirement",
    "list_gates",
    "start_run",
    "send_command",
    "decide_gate",
];

/// The repository's root (this crate sits two levels below it).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("services/gatehouse has a root")
        .to_path_buf()
}

/// The python of the venv holding the `mcp` package, or `None` (the test skipped) when it
/// is not installed, unless `MCP_CLIENT_TESTS=required`.
fn client_python() -> Option<PathBuf> {
    let python = std::env::var_os("MCP_CLIENT_PYTHON").map_or_else(
        || root().join("target/mcp-client/bin/python"),
        PathBuf::from,
    );
    let installed = Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|out| out.status.success());
    if installed {
        return Some(python);
    }
    let why = format!(
        "the MCP client is not installed at {} (run tests/mcp/install.sh, or set MCP_CLIENT_PYTHON)",
        python.display()
    );
    if std::env::var("MCP_CLIENT_TESTS").as_deref() == Ok("required") {
        panic!("{why}; MCP_CLIENT_TESTS=required");
    }
    eprintln!("skipped: {why}");
    None
}

/// One MCP session: `gatehouse mcp` with `token`, driven through `steps` by the official
/// client; one answer per step.
fn session(python: &Path, up: &Up, token: &str, steps: Value) -> Vec<Value> {
    let mut child = Command::new(python)
        .arg(root().join("tests/mcp/client.py"))
        .arg(harness::process::BIN)
        .args(["mcp", "--server", &up.url(), "--token", token])
        .current_dir(up.dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the MCP client starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(steps.to_string().as_bytes())
        .expect("steps written");
    let out = child.wait_with_output().expect("the MCP client ends");
    assert!(
        out.status.success(),
        "the MCP client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Vec<Value>>(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the MCP client printed no answers ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn list() -> Value {
    json!({ "list": true })
}

fn call(name: &str, arguments: Value) -> Value {
    json!({ "call": name, "arguments": arguments })
}

/// The names `tools/list` answered.
fn names(answer: &Value) -> Vec<&str> {
    answer["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("not a tool list: {answer}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

/// A successful call's summary and JSON (parsed, `Null` when the answer is text only).
fn ok(answer: &Value) -> (String, Value) {
    assert_eq!(answer["is_error"], false, "the call failed: {answer}");
    let texts = answer["texts"].as_array().unwrap();
    let summary = texts[0].as_str().unwrap().to_owned();
    let json = texts
        .get(1)
        .map(|t| serde_json::from_str(t.as_str().unwrap()).unwrap())
        .unwrap_or(Value::Null);
    (summary, json)
}

/// A tool error's text.
fn refused(answer: &Value) -> String {
    assert_eq!(
        answer["is_error"], true,
        "the call was not refused: {answer}"
    );
    answer["texts"][0].as_str().unwrap().to_owned()
}

fn start() -> Up {
    Up::builder()
        .sops(&[("review", REVIEW)])
        .config(
            "[server]\nsop_dirs = [\"sops\"]\n[[people]]\nid = \"ana\"\ngroups = [\"leads\"]\n[[people]]\nid = \"admin\"\ngroups = [\"admins\"]\n",
        )
        .start()
}

/// A token made with `args` (`token create ...`), by the admin unless `--token` is among
/// them.
fn token(up: &Up, args: &[&str]) -> Value {
    let mut all = vec!["token", "create"];
    all.extend_from_slice(args);
    up.json(&all)
}

#[test]
fn a_persons_assistant_reads_starts_steers_and_decides_with_their_token() {
    let Some(python) = client_python() else {
        return;
    };
    let up = start();
    let admin = up.admin_token();
    let ana = up.token("ana");

    // The admin's assistant: every tool, a run started with a parameter.
    let answers = session(
        &python,
        &up,
        &admin,
        json!([
            list(),
            call(
                "start_run",
                json!({ "sop": "review", "params": { "topic": "mcp" } })
            ),
        ]),
    );
    assert_eq!(names(&answers[0]), ALL_TOOLS);
    let tools = answers[0]["tools"].as_array().unwrap();
    let schema_of =
        |name: &str| tools.iter().find(|t| t["name"] == name).unwrap()["input_schema"].clone();
    assert_eq!(schema_of("show_run")["required"], json!(["run"]));
    assert_eq!(
        schema_of("decide_gate")["properties"]["decision"]["$ref"],
        "#/$defs/Decision"
    );
    let list_runs = tools.iter().find(|t| t["name"] == "list_runs").unwrap();
    assert_eq!(
        list_runs["annotations"]["read_only_hint"], true,
        "{list_runs}"
    );
    let (summary, accepted) = ok(&answers[1]);
    let run = accepted["run_id"].as_str().unwrap().to_owned();
    assert_eq!(summary, format!("started run {run} of review"));
    up.wait(&run, "waiting");

    let answers = session(
        &python,
        &up,
        &admin,
        json!([
            call("list_runs", json!({ "sop": "review" })),
            call(
                "list_runs",
                json!({ "status": "waiting", "project": "elsewhere" })
            ),
            call("show_run", json!({ "run": run })),
            call(
                "run_logs",
                json!({ "run": run, "node": "write", "tail": 3 })
            ),
            call("list_artifacts", json!({ "run": run })),
            call(
                "read_artifact",
                json!({ "run": run, "node": "write", "name": "report.md" })
            ),
            call(
                "read_artifact",
                json!({ "run": run, "node": "write", "name": "big.txt", "max_bytes": 1000 })
            ),
            call(
                "read_artifact",
                json!({ "run": run, "node": "write", "name": "blob.bin" })
            ),
            call("list_gates", json!({})),
            call("list_gates", json!({ "for_me": false })),
            call("list_requirements", json!({ "state": "open" })),
            call(
                "show_requirement",
                json!({ "requirement": "0193a4b2-7c1d-7e2f-9a3b-4c5d6e7f8091" })
            ),
            call("send_command", json!({ "run": run, "command": "pause" })),
        ]),
    );
    let (summary, runs) = ok(&answers[0]);
    assert_eq!(runs[0]["id"], run.as_str(), "{runs}");
    assert!(summary.starts_with("1 run(s)\n"), "{summary}");
    assert_eq!(ok(&answers[1]).1, json!([]), "no run of an unknown project");
    let (summary, shown) = ok(&answers[2]);
    assert_eq!(shown["params"]["topic"], "mcp");
    assert!(
        summary.contains("check                waiting_approval"),
        "{summary}"
    );
    assert_eq!(
        text(&answers[3]),
        "[write #1 stdout] line 48\n[write #1 stdout] line 49\n[write #1 stdout] line 50"
    );
    let (_, artifacts) = ok(&answers[4]);
    let mut listed: Vec<&str> = artifacts
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    listed.sort_unstable();
    assert_eq!(listed, ["big.txt", "blob.bin", "report.md"]);
    assert_eq!(text(&answers[5]), "# Report\n\nAbout mcp.\n");
    let big = text(&answers[6]);
    assert!(
        big.starts_with(&"x".repeat(1000))
            && big.ends_with(
                "\n(cut at 1000 bytes; ask with a larger max_bytes, up to 1048576, for more)"
            ),
        "{big}"
    );
    let binary = refused(&answers[7]);
    assert!(
        binary.contains("`blob.bin` of node `write` (attempt 1) is not text"),
        "{binary}"
    );
    // The admin started it, and only ana approves: nothing for the admin to decide.
    assert_eq!(ok(&answers[8]).1, json!([]));
    let (summary, gates) = ok(&answers[9]);
    assert_eq!(gates[0]["id"], format!("{run}/check"));
    assert!(summary.contains("may send back to write"), "{summary}");
    assert!(ok(&answers[10]).1.is_array());
    let missing = refused(&answers[11]);
    assert!(
        missing.starts_with("Gatehouse refused this (404 Not Found): no requirement"),
        "{missing}"
    );
    assert_eq!(ok(&answers[12]).0, format!("pause requested for run {run}"));
    up.wait(&run, "paused");

    // Ana's assistant resumes it and, once the run waits again, approves her gate through
    // the API's decision route.
    let answers = session(
        &python,
        &up,
        &ana,
        json!([
            list(),
            call("send_command", json!({ "run": run, "command": "resume" })),
        ]),
    );
    assert_eq!(names(&answers[0]), ALL_TOOLS);
    ok(&answers[1]);
    up.wait(&run, "waiting");
    let answers = session(
        &python,
        &up,
        &ana,
        json!([
            list(),
            call("list_gates", json!({})),
            call(
                "decide_gate",
                json!({ "gate": format!("{run}/check"), "decision": "approve", "comment": "read it, fine" })
            ),
        ]),
    );
    let (_, gates) = ok(&answers[1]);
    assert_eq!(
        gates[0]["id"],
        format!("{run}/check"),
        "ana's gate: {gates}"
    );
    assert_eq!(
        ok(&answers[2]).0,
        format!("approved: gate `check` of run {run}")
    );
    let shown = up.wait(&run, "succeeded");
    let decision = &shown["decisions"][0];
    assert_eq!(
        (
            &decision["person"],
            &decision["decision"],
            &decision["comment"],
            &decision["channel"]
        ),
        (
            &json!("ana"),
            &json!("approve"),
            &json!("read it, fine"),
            &json!("api")
        ),
        "{decision}"
    );

    // A second run, cancelled from the assistant.
    let other = up.start_run("review");
    up.wait(&other, "waiting");
    let answers = session(
        &python,
        &up,
        &ana,
        json!([call(
            "send_command",
            json!({ "run": other, "command": "cancel" })
        )]),
    );
    ok(&answers[0]);
    up.wait(&other, "cancelled");
}

/// A text answer (a log, an artifact), or a success's summary.
fn text(answer: &Value) -> String {
    ok(answer).0
}

#[test]
fn scopes_decide_what_is_offered_and_the_api_refuses_the_rest() {
    let Some(python) = client_python() else {
        return;
    };
    let up = start();
    let reader = token(&up, &["ana", "--name", "ana-reader", "--scope", "read"])["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = up.start_run("review");
    up.wait(&run, "waiting");
    let answers = session(
        &python,
        &up,
        &reader,
        json!([
            list(),
            call("start_run", json!({ "sop": "review" })),
            call("send_command", json!({ "run": run, "command": "cancel" })),
            call(
                "decide_gate",
                json!({ "gate": format!("{run}/check"), "decision": "approve" })
            ),
            call("list_runs", json!({})),
        ]),
    );
    assert_eq!(
        names(&answers[0]),
        ALL_TOOLS[..8],
        "read only: no start_run, send_command or decide_gate"
    );
    // Called anyway, the API refuses, naming the scope.
    for (answer, scope) in [
        (&answers[1], "run"),
        (&answers[2], "run"),
        (&answers[3], "decide"),
    ] {
        let why = refused(answer);
        assert!(
            why.starts_with(
                "Gatehouse refused this (403 Forbidden): this token (`ana-reader`) lacks the"
            ) && why.contains(&format!("lacks the `{scope}` scope; it has: read")),
            "{why}"
        );
    }
    assert_eq!(ok(&answers[4]).1[0]["id"], run.as_str());
    assert_eq!(up.show(&run)["status"], "waiting", "nothing was changed");
}

#[test]
fn a_token_made_for_an_agent_is_never_offered_nor_allowed_a_decision() {
    let Some(python) = client_python() else {
        return;
    };
    let up = start();
    let made = token(&up, &["ana", "--name", "ana-agent", "--for-agent"]);
    assert_eq!(made["for_agent"], true);
    let agent = made["token"].as_str().unwrap().to_owned();
    // What the agent's token makes is an agent's token too, and it signs nobody in.
    let minted = up.json(&[
        "token",
        "create",
        "--name",
        "ana-agent-2",
        "--token",
        &agent,
    ]);
    assert_eq!(minted["for_agent"], true, "{minted}");
    let login = up.cli(&["login", "--token", &agent]);
    assert!(!login.status.success());
    assert!(
        String::from_utf8_lossy(&login.stderr).contains("made for an agent"),
        "{}",
        String::from_utf8_lossy(&login.stderr)
    );

    let run = up.start_run("review");
    up.wait(&run, "waiting");
    let answers = session(
        &python,
        &up,
        &agent,
        json!([
            list(),
            call("list_gates", json!({})),
            call(
                "decide_gate",
                json!({ "gate": format!("{run}/check"), "decision": "approve", "comment": "lgtm" })
            ),
            call("start_run", json!({ "sop": "review" })),
        ]),
    );
    assert_eq!(
        names(&answers[0]),
        ALL_TOOLS[..10],
        "every tool but decide_gate"
    );
    assert_eq!(
        ok(&answers[1]).1,
        json!([]),
        "no gate is an agent's to decide"
    );
    let why = refused(&answers[2]);
    assert!(
        why.starts_with("Gatehouse refused this (403 Forbidden): this token (`ana-agent`) was made for an agent, and only people decide gates"),
        "{why}"
    );
    ok(&answers[3]);
    // The API refuses the CLI just the same: it is the one decision path.
    let cli = up.cli(&[
        "gate",
        "approve",
        &format!("{run}/check"),
        "--token",
        &agent,
    ]);
    assert!(!cli.status.success());
    let shown = up.show(&run);
    assert_eq!(shown["status"], "waiting");
    assert_eq!(shown["decisions"], json!([]), "no decision was recorded");
}

#[test]
fn hostile_arguments_are_refused_before_anything_is_sent() {
    let Some(python) = client_python() else {
        return;
    };
    let up = start();
    let admin = up.admin_token();
    let run = up.start_run("review");
    up.wait(&run, "waiting");
    let long = "x".repeat(20_000);
    let answers = session(
        &python,
        &up,
        &admin,
        json!([
            call("show_run", json!({ "run": "../../tokens" })),
            call("run_logs", json!({ "run": run, "tail": 1_000_000 })),
            call("run_logs", json!({ "run": run, "node": "a/../b" })),
            call(
                "read_artifact",
                json!({ "run": run, "node": "write", "name": "../../../etc/passwd" })
            ),
            call(
                "read_artifact",
                json!({ "run": run, "node": "write", "name": "nothing.md" })
            ),
            call(
                "decide_gate",
                json!({ "gate": "not-a-gate", "decision": "approve" })
            ),
            call(
                "decide_gate",
                json!({ "gate": format!("{run}/check"), "decision": "approve", "comment": long })
            ),
            call(
                "decide_gate",
                json!({ "gate": format!("{run}/check"), "decision": "send_back" })
            ),
            call("send_command", json!({ "run": run, "command": "retry" })),
            call("send_command", json!({ "run": run, "command": "explode" })),
            call("list_runs", json!({ "limit": 0 })),
            call("list_runs", json!({ "surprise": true })),
            call("start_run", json!({ "sop": "review\u{1b}[2J" })),
            call("no_such_tool", json!({})),
        ]),
    );
    let expect = [
        "invalid arguments: `../../tokens` is not a run id",
        "invalid arguments: tail is 1000000; it must be from 1 to 2000",
        "invalid arguments: `a/../b` is not a node id",
        "invalid arguments: `../../../etc/passwd` is not an artifact name",
        "invalid arguments: node `write` of run",
        "invalid arguments: `not-a-gate` is not a gate",
        "invalid arguments: the comment is 20000 bytes; at most 8192 are accepted",
        "invalid arguments: send_back needs `to`",
        "invalid arguments: retry needs `node`",
        "invalid arguments: unknown variant `explode`",
        "invalid arguments: limit is 0; it must be from 1 to 100",
        "invalid arguments: unknown field `surprise`",
        "invalid arguments: `review\\u{1b}[2J` is not a SOP name",
    ];
    for (answer, start) in answers.iter().zip(expect) {
        let why = refused(answer);
        assert!(
            why.starts_with(start),
            "{why}\n(expected it to start with {start})"
        );
    }
    assert!(
        answers[13]["error"]
            .as_str()
            .is_some_and(|e| e.contains("there is no tool `no_such_tool`")),
        "{}",
        answers[13]
    );
    let shown = up.show(&run);
    assert_eq!(shown["status"], "waiting");
    assert_eq!(shown["decisions"], json!([]));
}

#[test]
fn a_bad_token_or_server_is_a_clear_error_at_tools_list() {
    let Some(python) = client_python() else {
        return;
    };
    let up = start();
    let answers = session(&python, &up, "gh_not-a-token", json!([list()]));
    let error = answers[0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("cannot learn who this token is from the Gatehouse server at")
            && error.contains("unknown token (401 Unauthorized)"),
        "{}",
        answers[0]
    );
}
