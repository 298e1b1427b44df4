//! The command lines of the Gemini and Copilot executors run with the real CLIs against a
//! stand-in provider, twice (the second call resuming the session the trace read), and
//! their output read back. Ignored: they need the CLIs and the provider, set up by hand:
//!
//! ```sh
//! npm install --prefix S/npm/gemini @google/gemini-cli@0.61.0
//! npm install --prefix S/npm/copilot @github/copilot@1.0.102
//! python3 tests/agent-clis/survey/tools/fake/server.py --port-file S/port.txt --workdir S/work &
//! PATH=S/npm/gemini/node_modules/.bin:S/npm/copilot/node_modules/.bin:$PATH \
//! GATEHOUSE_REAL_PROVIDER=http://127.0.0.1:$(cat S/port.txt) GATEHOUSE_REAL_WORKDIR=S/work \
//! GATEHOUSE_REAL_OUT=S/out cargo test -p gatehouse-agent --test real_cli -- --ignored
//! ```
//!
//! The stand-in answers a request offering a file-writing tool with a call writing
//! `hello.txt` in its `--workdir` (the CLI's working directory here), and the tool's result
//! with "Done: I wrote hello.txt with the greeting.". `GATEHOUSE_REAL_OUT`, when set, keeps
//! each call's stdout there (the source of tests/fixtures/{gemini,copilot}_*.jsonl).
#![cfg(unix)]

use gatehouse_agent::Tools;
use std::path::{Path, PathBuf};
use std::process::Command;

use gatehouse_agent::{
    Executor, ModelApi, Role, Session, Trace, TraceParser, invocation, turn_invocation,
};

const REPLY: &str = "Done: I wrote hello.txt with the greeting.";

struct Setup {
    provider: String,
    workdir: PathBuf,
    out: Option<PathBuf>,
    scratch: tempfile::TempDir,
}

fn setup() -> Setup {
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"));
    let scratch = tempfile::tempdir().expect("scratch");
    std::fs::write(
        scratch.path().join("prompt.md"),
        "Create hello.txt containing a greeting.\n",
    )
    .expect("prompt");
    std::fs::write(scratch.path().join("system.md"), "You are terse.").expect("system");
    Setup {
        provider: var("GATEHOUSE_REAL_PROVIDER"),
        workdir: PathBuf::from(var("GATEHOUSE_REAL_WORKDIR")),
        out: std::env::var_os("GATEHOUSE_REAL_OUT").map(PathBuf::from),
        scratch,
    }
}

impl Setup {
    fn file(&self, name: &str) -> String {
        self.scratch.path().join(name).display().to_string()
    }

    /// Runs `command` as the runner would (`sh -c`, cwd the workspace, HOME its own), with
    /// the gateway's variables for `api`; keeps its stdout as `label` and traces it.
    fn run(&self, role: &Role, api: ModelApi, home: &Path, command: &str, label: &str) -> Trace {
        let _ = std::fs::remove_file(self.workdir.join("hello.txt"));
        let gateway: Vec<(&str, String)> = match api {
            ModelApi::Gemini => vec![
                ("GOOGLE_GEMINI_BASE_URL", self.provider.clone()),
                ("GEMINI_API_KEY", "attempt-token".to_owned()),
            ],
            ModelApi::OpenAi => vec![
                ("OPENAI_BASE_URL", format!("{}/v1", self.provider)),
                ("OPENAI_API_KEY", "attempt-token".to_owned()),
            ],
            ModelApi::Anthropic => vec![
                ("ANTHROPIC_BASE_URL", self.provider.clone()),
                ("ANTHROPIC_API_KEY", "attempt-token".to_owned()),
            ],
        };
        let output = Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(&self.workdir)
            .env("HOME", home)
            .envs(role.cli_environment())
            .envs(gateway)
            .output()
            .expect("sh runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if let Some(out) = &self.out {
            std::fs::create_dir_all(out).expect("out dir");
            std::fs::write(out.join(format!("{label}.jsonl")), &stdout).expect("stdout kept");
            std::fs::write(out.join(format!("{label}.command")), command).expect("command kept");
        }
        assert!(
            output.status.success(),
            "{command}\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(
            std::fs::read_to_string(self.workdir.join("hello.txt"))
                .ok()
                .as_deref(),
            Some("hello from the fake provider\n"),
            "the CLI's tool wrote the file"
        );
        let mut parser = TraceParser::new(role.executor, role.model.as_deref());
        for (i, line) in stdout.lines().enumerate() {
            parser.feed(line, i as u64);
        }
        parser.finish(stdout.lines().count() as u64)
    }

    /// A first call, then a turn resuming its session; both traces.
    fn twice(&self, role: &Role, api: ModelApi, name: &str) -> (Trace, Trace) {
        let home = tempfile::tempdir().expect("home");
        let (prompt, system) = (self.file("prompt.md"), self.file("system.md"));
        let first = invocation(role, Some(api), &Tools::none(), &prompt, Some(&system));
        let first = self.run(role, api, home.path(), &first, &format!("{name}_first"));
        let id = first.session_id.clone().expect("a session id");
        let session = Session {
            resume: Some(&id),
            transcript_file: None,
        };
        let turn = turn_invocation(
            role,
            Some(api),
            &Tools::none(),
            &prompt,
            Some(&system),
            session,
        )
        .expect("a valid id");
        let second = self.run(role, api, home.path(), &turn, &format!("{name}_resumed"));
        (first, second)
    }
}

fn check(trace: &Trace, tool: &str, model: &str) {
    assert_eq!(trace.failure, None, "{trace:#?}");
    assert_eq!(trace.reply.as_deref(), Some(REPLY));
    assert_eq!(trace.tools.len(), 1, "{trace:#?}");
    assert_eq!(trace.tools[0].tool, tool);
    assert!(trace.tools[0].summary.ends_with("/hello.txt"), "{trace:#?}");
    assert!(!trace.tools[0].error);
    assert!(trace.tools[0].duration_ms.is_some());
    // The stand-in bills 10 input and 20 then 5 output tokens per model request, two
    // requests per call.
    assert_eq!(trace.usage.len(), 1, "{trace:#?}");
    assert_eq!(trace.usage[0].model, model);
    assert_eq!(
        (trace.usage[0].input_tokens, trace.usage[0].output_tokens),
        (20, 25)
    );
}

#[test]
#[ignore = "needs the real gemini CLI and the stand-in provider"]
fn gemini_writes_the_file_and_resumes_its_session() {
    let setup = setup();
    let role = Role {
        model: Some("gemini-2.5-flash".to_owned()),
        provider: Some("google".to_owned()),
        ..Role::new(Executor::Gemini)
    };
    let (first, second) = setup.twice(&role, ModelApi::Gemini, "gemini");
    check(&first, "write_file", "gemini-2.5-flash");
    check(&second, "write_file", "gemini-2.5-flash");
    assert_eq!(second.session_id, first.session_id);
}

#[test]
#[ignore = "needs the real copilot CLI and the stand-in provider"]
fn copilot_on_openai_writes_the_file_and_resumes_its_session() {
    let setup = setup();
    let role = Role {
        model: Some("fake-model".to_owned()),
        provider: Some("openai".to_owned()),
        ..Role::new(Executor::Copilot)
    };
    let (first, second) = setup.twice(&role, ModelApi::OpenAi, "copilot_openai");
    check(&first, "create", "fake-model");
    // The usage file holds both calls; the turn's is the difference.
    check(&second, "create", "fake-model");
    assert_eq!(second.session_id, first.session_id);
}

#[test]
#[ignore = "needs the real copilot CLI and the stand-in provider"]
fn copilot_on_anthropic_writes_the_file_and_resumes_its_session() {
    let setup = setup();
    let role = Role {
        model: Some("fake-model".to_owned()),
        provider: Some("anthropic".to_owned()),
        ..Role::new(Executor::Copilot)
    };
    let (first, second) = setup.twice(&role, ModelApi::Anthropic, "copilot_anthropic");
    check(&first, "create", "fake-model");
    check(&second, "create", "fake-model");
    assert_eq!(second.session_id, first.session_id);
}
