//! Gatehouse's MCP server met by the official MCP client: the `mcp` package from PyPI,
//! driven by `tests/mcp/client.py` with its `streamable_http_client` and `ClientSession`,
//! over real HTTP with an attempt's bearer token.
//!
//! The client is installed by `tests/mcp/install.sh` into `target/mcp-client` (or where
//! `MCP_CLIENT_PYTHON` names its python). Without it the tests say so and pass, unless
//! `MCP_CLIENT_TESTS=required` (CI, `.ci/run`), where that is a failure.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use gatehouse_store::QuestionStatus;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::*;

/// The exit status `client.py` ends with when the server refuses to initialize.
const INITIALIZE_REFUSED: i32 = 3;

/// The repository's root (this crate sits two levels below it).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("services/runner has a root")
        .to_path_buf()
}

/// The python of the venv holding the `mcp` package, or `None` (the test skipped) when it
/// is not installed, unless `MCP_CLIENT_TESTS=required`.
fn client_python() -> Option<PathBuf> {
    let python = std::env::var_os("MCP_CLIENT_PYTHON").map_or_else(
        || root().join("target/mcp-client/bin/python"),
        PathBuf::from,
    );
    let installed = std::process::Command::new(&python)
        .args(["-c", "import mcp.client.streamable_http"])
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

/// The official client connected to the bench's server with `token`, running `steps`
/// (one answer each, see `tests/mcp/client.py`).
fn client(python: &Path, bench: &Bench, token: &str, steps: &Value) -> tokio::process::Child {
    let mut child = tokio::process::Command::new(python)
        .arg(root().join("tests/mcp/client.py"))
        .args(["--url", &bench.url])
        .env("MCP_CLIENT_TOKEN", token)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the MCP client starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let steps = steps.to_string();
    tokio::spawn(async move {
        stdin.write_all(steps.as_bytes()).await.expect("steps");
        // Dropped here: the client reads its steps to the end.
    });
    child
}

/// The client's exit, within a minute.
async fn ended(child: tokio::process::Child) -> Output {
    tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the MCP client ends within a minute")
        .expect("the MCP client's output")
}

/// The answers a client that succeeded printed.
fn answers(out: &Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "the MCP client failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the MCP client printed no answers ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The one text of a tool call's answer, and whether it was a tool error.
fn said(answer: &Value) -> (bool, &str) {
    let texts = answer["texts"]
        .as_array()
        .unwrap_or_else(|| panic!("not a tool result: {answer}"));
    assert_eq!(texts.len(), 1, "{answer}");
    (
        answer["is_error"] == true,
        texts[0].as_str().unwrap_or_default(),
    )
}

#[tokio::test]
async fn the_official_client_lists_calls_and_waits_for_a_persons_answer() {
    let Some(python) = client_python() else {
        return;
    };
    let bench = Arc::new(Bench::new().await);
    let ticket = bench.attempt(1, Duration::from_secs(120));
    let steps = json!([
        {"list": true},
        {"call": "get_requirement", "arguments": {}},
        {"call": "publish_artifact", "arguments": {"name": "notes.md", "text": "# Notes\n"}},
        {"call": "publish_artifact", "arguments": {"name": "../escape.md", "text": "x"}},
        {"call": "request_approval", "arguments": {"question": "May I rotate the keys?"}},
    ]);
    let mut child = client(&python, &bench, ticket.token(), &steps);

    // The client waits in request_approval until a person answers.
    let question = loop {
        if let Some(q) = bench
            .store
            .open_questions(10)
            .await
            .expect("questions")
            .pop()
        {
            break q;
        }
        if let Some(status) = child.try_wait().expect("client") {
            let out = ended(child).await;
            panic!(
                "the MCP client ended ({status}) before asking: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(question.question, "May I rotate the keys?");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        child.try_wait().expect("client").is_none(),
        "the client waits for the answer"
    );
    bench
        .answer(question.id, QuestionStatus::Approved, "after the release")
        .await;
    let out = ended(child).await;
    let answers = answers(&out);
    assert_eq!(answers.len(), 5, "{answers:?}");

    let mut names: Vec<&str> = answers[0]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("not a tool list: {}", answers[0]))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "get_inputs",
            "get_requirement",
            "permission",
            "post_progress",
            "publish_artifact",
            "request_approval"
        ]
    );
    for tool in answers[0]["tools"].as_array().into_iter().flatten() {
        assert_eq!(tool["input_schema"]["type"], "object", "{tool}");
    }

    let (failed, requirement) = said(&answers[1]);
    assert!(
        !failed && requirement.contains("Add /health"),
        "{requirement}"
    );
    let (failed, published) = said(&answers[2]);
    assert!(!failed, "{published}");
    assert_eq!(
        std::fs::read_to_string(bench.artifacts.join("notes.md")).expect("artifact"),
        "# Notes\n"
    );
    let (failed, refused) = said(&answers[3]);
    assert!(
        failed && refused.contains("not a plain file name"),
        "{refused}"
    );
    let (failed, approved) = said(&answers[4]);
    assert!(!failed, "{approved}");
    assert_eq!(approved, "approved by ada: after the release");
}

#[tokio::test]
async fn the_official_client_is_refused_without_a_live_attempts_token() {
    let Some(python) = client_python() else {
        return;
    };
    let bench = Bench::new().await;
    let ended_ticket = bench.attempt(1, Duration::from_secs(5));
    let ended_token = ended_ticket.token().to_owned();
    drop(ended_ticket);
    let steps = json!([{"list": true}]);
    for token in ["gh-tools-forged", ended_token.as_str(), ""] {
        let out = ended(client(&python, &bench, token, &steps)).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(INITIALIZE_REFUSED),
            "token {token:?}: {}\n{stderr}",
            out.status
        );
        assert!(stderr.contains("initialize refused"), "{stderr}");
        assert!(out.stdout.is_empty(), "no answers: {:?}", out.stdout);
    }
    // The same client with a live token gets its answers: the refusal was the token's.
    let live = bench.attempt(2, Duration::from_secs(5));
    let out = ended(client(&python, &bench, live.token(), &steps)).await;
    assert_eq!(answers(&out)[0]["tools"].as_array().map(Vec::len), Some(6));
}
