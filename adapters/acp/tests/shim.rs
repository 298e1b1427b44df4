//! gatehouse-acp against the scripted agent (tests/fake/agent.rs): what it prints, its exit
//! code, and that it never hangs nor leaves the agent's processes behind.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};
use serde_json::{Value, json};

const SHIM: &str = env!("CARGO_BIN_EXE_gatehouse-acp");
const AGENT: &str = env!("CARGO_BIN_EXE_fake-acp-agent");

/// One run's output.
struct Ran {
    lines: Vec<Value>,
    code: Option<i32>,
    elapsed: Duration,
    stderr: String,
}

impl Ran {
    fn of_type(&self, kind: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["type"] == kind).collect()
    }

    fn last(&self) -> &Value {
        self.lines.last().expect("some output")
    }
}

struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("prompt.md"), "Create hello.txt.").expect("prompt");
        std::fs::write(dir.path().join("system.md"), "Be brief.\n").expect("system");
        Self { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    fn command(&self, scenario: &str, extra: &[&str]) -> Command {
        let mut command = Command::new(SHIM);
        command
            .current_dir(self.dir.path())
            .env("FAKE_LOG", self.path("agent.log"))
            .env("FAKE_CHILD_PID_FILE", self.path("child.pid"))
            .env("FAKE_AGENT_PID_FILE", self.path("agent.pid"))
            .args(["--prompt-file", &self.path("prompt.md")])
            .args(extra)
            .args(["--", AGENT, scenario])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    fn run(&self, scenario: &str, extra: &[&str]) -> Ran {
        let started = Instant::now();
        let output = self.command(scenario, extra).output().expect("shim runs");
        Ran {
            lines: lines(&output.stdout),
            code: output.status.code(),
            elapsed: started.elapsed(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// The requests the agent received.
    fn agent_log(&self) -> Vec<Value> {
        lines(&std::fs::read(self.dir.path().join("agent.log")).unwrap_or_default())
    }
}

fn lines(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

#[test]
fn a_prompt_is_run_and_reported_line_by_line() {
    let dir = Dir::new();
    let ran = dir.run("happy", &["--system-file", &dir.path("system.md")]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let kinds: Vec<&str> = ran
        .lines
        .iter()
        .map(|l| l["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["session", "prompt", "update", "update", "update", "result"]
    );
    assert_eq!(
        ran.lines[0],
        json!({"type": "session", "sessionId": "fake-session-1", "loaded": false, "replayed": 0,
            "agent": {"name": "fake-agent", "version": "1.0.0"}, "protocolVersion": 1})
    );
    assert_eq!(
        ran.lines[2]["update"],
        json!({"sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "Write hello.txt",
            "kind": "edit", "status": "pending"})
    );
    assert_eq!(
        ran.last(),
        &json!({"type": "result", "stopReason": "end_turn", "meta": null,
            "usage": {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15}})
    );
    // No fs, no terminal; the system text ahead of the prompt, in one text block.
    let requests = dir.agent_log();
    assert_eq!(
        requests[0]["params"]["clientCapabilities"],
        json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false})
    );
    let cwd = std::fs::canonicalize(dir.dir.path()).unwrap();
    assert_eq!(requests[1]["method"], "session/new");
    assert_eq!(
        Path::new(requests[1]["params"]["cwd"].as_str().unwrap()),
        cwd
    );
    assert_eq!(
        requests[2]["params"]["prompt"],
        json!([{"type": "text", "text": "Be brief.\n\nCreate hello.txt."}])
    );
    assert!(ran.elapsed < Duration::from_secs(5), "{:?}", ran.elapsed);
}

#[test]
fn a_permission_request_is_allowed_once_and_recorded() {
    let dir = Dir::new();
    let ran = dir.run("permission", &[]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(
        ran.of_type("permission"),
        [
            &json!({"type": "permission", "policy": "allow", "decision": "allow_once",
            "optionId": "once",
            "toolCall": {"toolCallId": "call_1", "title": "Write hello.txt", "kind": "edit"}})
        ]
    );
    let said = ran.of_type("update")[2]["update"]["content"]["text"].clone();
    assert_eq!(said, "Permission: once.");
}

#[test]
fn sigterm_cancels_the_prompt_and_the_agent_answers_cancelled() {
    let dir = Dir::new();
    let (ran, after_signal) = run_and_signal(&dir, "cancellable", &[]);
    assert_eq!(ran.code, Some(128 + 15), "{}", ran.stderr);
    assert_eq!(ran.last()["stopReason"], "cancelled");
    assert!(
        dir.agent_log()
            .iter()
            .any(|r| r["method"] == "session/cancel")
    );
    assert!(after_signal < Duration::from_secs(4), "{after_signal:?}");
}

#[test]
fn an_agent_that_ignores_the_cancel_is_killed_after_the_grace() {
    let dir = Dir::new();
    let (ran, after_signal) = run_and_signal(&dir, "deaf", &["--cancel-grace", "1"]);
    assert_eq!(ran.code, Some(128 + 15), "{}", ran.stderr);
    let message = ran.last()["message"].as_str().unwrap().to_owned();
    assert!(
        message.contains("did not end its prompt within 1 s of `session/cancel`"),
        "{message}"
    );
    // 1 s of grace, then SIGTERM (ignored), 2 s, SIGKILL.
    assert!(after_signal < Duration::from_secs(6), "{after_signal:?}");
}

#[test]
fn an_agent_dies_with_a_shim_killed_outright() {
    let dir = Dir::new();
    let (ran, _) = run_and_signal_with(&dir, "deaf", &[], Signal::KILL);
    assert_eq!(ran.code, None, "killed");
    let agent = pid_in(&dir.path("agent.pid"));
    assert!(
        gone_within(agent, Duration::from_secs(3)),
        "the agent outlived the shim"
    );
}

/// The pid written in `file`.
fn pid_in(file: &str) -> Pid {
    let pid: i32 = std::fs::read_to_string(file)
        .expect("a pid file")
        .trim()
        .parse()
        .expect("a pid");
    Pid::from_raw(pid).expect("pid")
}

/// Whether `pid` is gone (or a zombie) within `wait`.
fn gone_within(pid: Pid, wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    loop {
        let alive = std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero()))
            .is_ok_and(|stat| !stat.contains(") Z "));
        if !alive {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs the shim and sends it SIGTERM once the prompt is sent; the run, and how long it
/// took after the signal.
fn run_and_signal(dir: &Dir, scenario: &str, extra: &[&str]) -> (Ran, Duration) {
    run_and_signal_with(dir, scenario, extra, Signal::TERM)
}

/// [`run_and_signal`] with `signal`.
fn run_and_signal_with(
    dir: &Dir,
    scenario: &str,
    extra: &[&str],
    signal: Signal,
) -> (Ran, Duration) {
    let started = Instant::now();
    let mut child = dir.command(scenario, extra).spawn().expect("shim runs");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut output = Vec::new();
    let mut line = String::new();
    while stdout.read_line(&mut line).expect("reads") > 0 {
        output.extend_from_slice(line.as_bytes());
        let prompted = line.contains(r#""type":"update""#);
        line.clear();
        if prompted {
            break;
        }
    }
    let pid = Pid::from_raw(child.id() as i32).expect("pid");
    kill_process(pid, signal).expect("signal");
    let signalled = Instant::now();
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut stdout, &mut rest).expect("reads");
    output.extend(rest);
    let status = child.wait().expect("exits");
    let after = signalled.elapsed();
    (
        Ran {
            lines: lines(&output),
            code: status.code(),
            elapsed: started.elapsed(),
            stderr: String::new(),
        },
        after,
    )
}

#[test]
fn an_agent_that_exits_at_once_is_named_with_its_stderr() {
    let dir = Dir::new();
    let ran = dir.run("exit", &[]);
    assert_eq!(ran.code, Some(1));
    assert_eq!(ran.lines.len(), 1);
    let message = ran.last()["message"].as_str().unwrap();
    assert_eq!(
        message,
        format!(
            "agent `{AGENT} exit` exited with status 3 before answering `initialize`; its \
             stderr ends: fake: cannot read ~/.fake/config.json"
        )
    );
    // Its stderr says why: no "printed nothing — is it the ACP mode?" hint, which is for
    // an agent that waits (see the garbage test).
    // Passed through too.
    assert!(ran.stderr.contains("fake: cannot read"), "{}", ran.stderr);
}

#[test]
fn a_missing_agent_says_to_install_it() {
    let dir = Dir::new();
    let output = Command::new(SHIM)
        .current_dir(dir.dir.path())
        .args([
            "--prompt-file",
            &dir.path("prompt.md"),
            "--",
            "no-such-agent-xyz",
            "acp",
        ])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(1));
    let message = lines(&output.stdout)[0]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.starts_with("cannot run `no-such-agent-xyz acp`: "),
        "{message}"
    );
    assert!(message.ends_with("(is the agent installed in the sandbox's image and on its PATH?)"));
}

#[test]
fn an_agent_that_prints_no_protocol_times_out_and_says_what_it_printed() {
    let dir = Dir::new();
    let ran = dir.run("garbage", &["--timeout", "1"]);
    assert_eq!(ran.code, Some(1));
    assert_eq!(ran.of_type("notice").len(), 2);
    let message = ran.last()["message"].as_str().unwrap();
    assert_eq!(
        message,
        format!(
            "agent `{AGENT} garbage` did not answer `initialize` within 1 s; it printed 2 \
             line(s) that are not ACP messages, the first: `Welcome to Fake Agent 1.0!` — is \
             `{AGENT} garbage` the agent's ACP mode (e.g. `gemini --acp`, `opencode acp`, \
             `goose acp`)?; if it is slow to start, raise `--timeout`"
        )
    );
    assert!(ran.elapsed < Duration::from_secs(5), "{:?}", ran.elapsed);
}

#[test]
fn an_agent_that_lingers_after_its_answer_is_killed_with_its_group() {
    let dir = Dir::new();
    let ran = dir.run("linger", &[]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(ran.last()["stopReason"], "end_turn");
    // 2 s after stdin closed, SIGTERM (ignored), 2 s, SIGKILL.
    assert!(ran.elapsed < Duration::from_secs(7), "{:?}", ran.elapsed);
    let child = pid_in(&dir.path("child.pid"));
    assert!(
        gone_within(child, Duration::from_secs(2)),
        "the agent's child survived"
    );
}

#[test]
fn another_protocol_version_is_refused() {
    let dir = Dir::new();
    let ran = dir.run("version", &[]);
    assert_eq!(ran.code, Some(1));
    assert_eq!(
        ran.last()["message"],
        format!(
            "agent `{AGENT} version` speaks ACP protocol version 2; gatehouse-acp speaks \
             version 1: use a release of the agent that supports version 1"
        )
    );
}

#[test]
fn an_agent_that_wants_a_login_says_so() {
    let dir = Dir::new();
    let ran = dir.run("auth", &[]);
    assert_eq!(ran.code, Some(1));
    let message = ran.last()["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "agent `{AGENT} auth` needs a login (Authentication required; its auth methods: \
             fake-login), which it cannot do inside a sandbox: give the role"
        )),
        "{message}"
    );
}

#[test]
fn resume_loads_the_session_without_printing_its_replay() {
    let dir = Dir::new();
    let ran = dir.run(
        "load",
        &["--resume", "ses_9", "--system-file", &dir.path("system.md")],
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(ran.lines[0]["sessionId"], "ses_9");
    assert_eq!(ran.lines[0]["loaded"], true);
    assert_eq!(ran.lines[0]["replayed"], 2);
    assert_eq!(ran.of_type("update").len(), 3);
    let requests = dir.agent_log();
    assert_eq!(requests[1]["method"], "session/load");
    // A loaded session has the system text already.
    assert_eq!(
        requests[2]["params"]["prompt"],
        json!([{"type": "text", "text": "Create hello.txt."}])
    );
}

#[test]
fn a_session_that_cannot_load_starts_over_with_the_transcript_or_fails() {
    let dir = Dir::new();
    std::fs::write(
        dir.path("transcript.jsonl"),
        "{\"role\":\"user\",\"text\":\"Hi\"}\n{\"role\":\"assistant\",\"text\":\"Hello.\"}\n",
    )
    .unwrap();
    let ran = dir.run("badload", &["--resume", "ses_9"]);
    assert_eq!(ran.code, Some(1));
    assert_eq!(
        ran.last()["message"],
        format!(
            "agent `{AGENT} badload` cannot continue session ses_9: `session/load` failed: \
             Internal error: Invalid session identifier (code -32603); and no \
             `--transcript-file` was given to start a new session with the conversation so far"
        )
    );

    let dir2 = Dir::new();
    std::fs::copy(dir.path("transcript.jsonl"), dir2.path("transcript.jsonl")).unwrap();
    let ran = dir2.run(
        "noload",
        &[
            "--resume",
            "ses_9",
            "--transcript-file",
            &dir2.path("transcript.jsonl"),
        ],
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(
        ran.lines[0]["message"],
        format!(
            "agent `{AGENT} noload` cannot continue session ses_9: it does not offer \
             `session/load`; a new session gets the conversation so far from the transcript \
             instead"
        )
    );
    assert_eq!(ran.lines[1]["sessionId"], "fake-session-1");
    let requests = dir2.agent_log();
    assert_eq!(requests[1]["method"], "session/new");
    assert_eq!(
        requests[2]["params"]["prompt"][0]["text"],
        "The conversation so far (continue it; the last message follows):\n\n\
         User: Hi\n\nAssistant: Hello.\n\nCreate hello.txt."
    );
}

#[test]
fn a_mode_is_set_and_an_unknown_one_lists_the_agents() {
    let dir = Dir::new();
    let ran = dir.run("happy", &["--mode", "yolo"]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(dir.agent_log()[2]["method"], "session/set_mode");
    let ran = dir.run("happy", &["--mode", "bogus"]);
    assert_eq!(ran.code, Some(1));
    assert_eq!(
        ran.last()["message"],
        format!("agent `{AGENT} happy` has no mode `bogus` (Invalid params); its modes: ask, yolo")
    );
}

#[test]
fn a_prompt_file_that_cannot_be_read_fails_before_the_agent_starts() {
    let dir = Dir::new();
    std::fs::remove_file(dir.path("prompt.md")).unwrap();
    let ran = dir.run("happy", &[]);
    assert_eq!(ran.code, Some(1));
    let message = ran.last()["message"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with(&format!(
            "cannot read the prompt file {}: ",
            dir.path("prompt.md")
        )),
        "{message}"
    );
    assert!(dir.agent_log().is_empty(), "the agent ran");
}

#[test]
fn mcp_servers_reach_the_session_and_a_remote_one_needs_the_agents_capability() {
    let dir = Dir::new();
    let stdio = r#"[{"name":"docs","command":"docs-mcp","args":["--stdio"],"env":[{"name":"A","value":"b"}]}]"#;
    let ran = dir.run("happy", &["--mcp", stdio]);
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let new = &dir.agent_log()[1];
    assert_eq!(new["method"], "session/new");
    assert_eq!(
        new["params"]["mcpServers"],
        serde_json::from_str::<Value>(stdio).unwrap()
    );

    let http =
        r#"[{"type":"http","name":"wiki","url":"http://127.0.0.1:1/mcp/wiki","headers":[]}]"#;
    let ran = dir.run("happy", &["--mcp", http]);
    assert_eq!(ran.code, Some(1));
    assert_eq!(
        ran.last()["message"],
        format!(
            "agent `{AGENT} happy` cannot reach MCP server `wiki`: it is a remote (http) server \
             and the agent does not offer `mcpCapabilities.http`; use a stdio server for this \
             agent, or an agent that takes remote ones"
        )
    );
    let ran = dir.run("happy", &["--mcp", "{}"]);
    assert_eq!(ran.code, Some(2), "{:?}", ran.lines);
    assert!(
        ran.stderr.contains("`--mcp`: not a JSON array of servers"),
        "{}",
        ran.stderr
    );
}
