//! Conversations with the whole of Gatehouse running on Postgres (ingest's HTTP endpoints,
//! scheduler, runner and notifier in the process, the fake Slack on loopback), the
//! assistant role a stand-in Claude Code that speaks stream-json from shell builtins (an
//! init line, a tool call and its result, the result line) and exits at once:
//! - mention → first progress message: from the signed `app_mention` (the fake Slack's
//!   `ts` of the person's message, taken just before the webhook is sent) to the fake's
//!   `ts` of the bot's first message in that thread. Both are the fake's timestamps,
//!   microseconds of this process's clock, so how often the bench looks does not show.
//!   For a conversation's first turn (its workspace cloned from the project's repository)
//!   and for a follow-up in its thread (the workspace kept, the CLI session resumed).
//! - per-turn overhead: the runner's attempt (`turn_attempts.duration_ms`) minus the CLI
//!   process's own time (`cli_ms`), both from the store; and end to end, from the mention
//!   to the reply less `cli_ms`. The reply is timed twice: when the notifier first tried
//!   to post it (`chat_messages.first_try_at`, Gatehouse's part) and when the fake stored
//!   it (what people see). Slack takes one message a second per channel and Gatehouse
//!   keeps to it, so a reply is posted no sooner than a second after the thread's
//!   progress message: with a CLI this fast the posted figure is that pacing.
//! - where the time goes: mention → the runner beginning the attempt
//!   (`turn_attempts.started_at`), and the attempt finished (`finished_at`) → the reply's
//!   first try. The notifier's chat poster is woken by its own consumer's commits; what
//!   the runner and the scheduler want posted it finds when it next looks (once a second
//!   when idle), so each mention is sent at an offset past the channel's free slot spread
//!   evenly over a second, as people's messages meet that poll at any phase.
//!
//! Baseline, measured in the same run and interleaved with the turns so noise hits both
//! alike: the same CLI command line (`turn_invocation` of the same role) run by `sh -c`
//! as a plain child process, timed whole. For the Docker sandbox also
//! `docker run --rm IMAGE sh -c '<that command line>'`, the floor of one container.
//!
//! Both with the process sandbox and the Docker sandbox (a `docker` profile on
//! `gatehouse-sandbox:busybox`, the CLI mounted read-only at `/opt/agent`); without a
//! Docker engine with that image the Docker figures are skipped, saying why.
//!
//! Last, 50 threads mentioned at once (each CLI lingers a second, so turns overlap), each
//! in its own channel so Slack's pacing does not order them: every thread must get
//! exactly one reply with its text. The mentions are signed as Slack signs events and
//! sent all at once; one that ingest answers 503 (it reads at most 16 webhook bodies at
//! once) is sent again after its `Retry-After` of a second, with `X-Slack-Retry-Num`
//! (sooner than Slack's own schedule would); how many were sent again is reported. Wall
//! time and this process's resident memory (its peak over the burst, `VmHWM` after
//! resetting it, and `VmRSS` before and after).
//!
//! `cargo bench -p gatehouse-tests --bench conversations` (needs the machine's Postgres;
//! Docker optional). `GATEHOUSE_BENCH_CONVERSATIONS` (default 30) sets the conversations
//! one at a time, `GATEHOUSE_BENCH_AT_ONCE` (default 50) the burst, and
//! `GATEHOUSE_BENCH_CONCURRENCY` (default 8; the harness's own is 2) the runner's slots.
//! Figures are printed, and written as JSON to the file `GATEHOUSE_BENCH_JSON` names,
//! when set.

use gatehouse_agent::Tools;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use futures::future::join_all;
use gatehouse_agent::{Executor, Role, Session, turn_invocation};
use gatehouse_sandbox::{DockerSandbox, Mount, ProcessSandbox, Profile, SandboxKind, Sandboxes};
use gatehouse_scheduler::AssistantSettings;
use gatehouse_store::ChatMessageRow;
use gatehouse_tests::fake_slack::{BOT_USER, SlackMessage};
use gatehouse_tests::gatehouse::chat::{self, ANA};
use gatehouse_tests::latencies::Latencies;
use gatehouse_tests::latencies::write_figures;
use gatehouse_tests::{Backend, Gatehouse, TestDb};
use serde_json::{Value, json};
use uuid::Uuid;

const IMAGE: &str = "gatehouse-sandbox:busybox";
/// Where the Docker profile mounts the CLI.
const TOOLS_IN_CONTAINER: &str = "/opt/agent";
/// How long one wait may take before the bench gives up.
const PATIENCE: Duration = Duration::from_secs(180);
/// How often the bench looks (the figures come from timestamps, not from looking).
const POLL: Duration = Duration::from_millis(2);
/// Slack's pacing interval per channel, with a margin.
const SLOT: chrono::Duration = chrono::Duration::milliseconds(1010);

/// Claude Code as a turn sees it, from shell builtins only so the CLI costs one process:
/// reads the message on stdin, resumes the session it is given (or names one), calls a
/// tool, notes the message in the workspace, and answers `Answer: <message>`. A message
/// saying `linger` takes a second.
const FAKE_CLAUDE: &str = r#"#!/bin/sh
IFS= read -r prompt
session="sess-$$"
args="$*"
case "$args" in *--resume\ *) rest=${args#*--resume }; session=${rest%% *};; esac
echo '{"type":"system","subtype":"init","session_id":"'"$session"'","tools":["Bash","Edit"],"model":"claude-sonnet-4-5"}'
echo '{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Edit","input":{"file_path":"notes.txt","old_string":"","new_string":"x"}}]},"session_id":"'"$session"'"}'
case "$prompt" in *linger*) sleep 1;; esac
echo "$prompt" >> notes.txt
echo '{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"ok","is_error":false}]},"session_id":"'"$session"'"}'
printf '{"type":"result","subtype":"success","is_error":false,"duration_ms":1,"num_turns":2,"result":"Answer: %s","session_id":"%s","usage":{"input_tokens":100,"output_tokens":50},"modelUsage":{"claude-sonnet-4-5":{"inputTokens":100,"outputTokens":50,"costUSD":0.001}}}\n' "$prompt" "$session"
"#;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A Slack `ts` (`1700000000.123456`) as the time it stands for.
fn slack_time(ts: &str) -> DateTime<Utc> {
    let (secs, micros) = ts.split_once('.').expect("a Slack ts");
    DateTime::from_timestamp(
        secs.parse().expect("seconds"),
        micros.parse::<u32>().expect("microseconds") * 1000,
    )
    .expect("a time")
}

/// Sleeps until the wall clock reads `at`.
async fn sleep_until(at: DateTime<Utc>) {
    if let Ok(left) = (at - Utc::now()).to_std() {
        tokio::time::sleep(left).await;
    }
}

/// Waits for `f` to find something, polling.
async fn until<T, F: Future<Output = Option<T>>>(what: &str, mut f: impl FnMut() -> F) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(found) = f().await {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(POLL).await;
    }
}

/// How this bench prints a figure.
trait Line {
    fn line(&self, name: &str, baseline: Option<&Latencies>) -> String;
}

impl Line for Latencies {
    fn line(&self, name: &str, baseline: Option<&Latencies>) -> String {
        let ratio = baseline
            .map(|b| format!("  {:>6.2}×", self.p50() / b.p50()))
            .unwrap_or_default();
        format!(
            "  {name:<52} {:>9.2} {:>9.2} {:>9.2}{ratio}",
            self.p50(),
            self.p99(),
            self.max(),
        )
    }
}

/// The figures of one sandbox kind.
struct Figures {
    progress_first: Latencies,
    progress_followup: Latencies,
    /// Mention → the runner beginning the attempt (`turn_attempts.started_at`).
    begun: Latencies,
    /// `duration_ms - cli_ms`.
    overhead_first: Latencies,
    overhead_followup: Latencies,
    cli: Latencies,
    /// The attempt finished (`turn_attempts.finished_at`) → the reply's first try.
    finished_to_ready: Latencies,
    /// Mention → the reply's first try, and posted.
    ready: Latencies,
    posted: Latencies,
    /// The same, less `cli_ms`.
    ready_overhead: Latencies,
    posted_overhead: Latencies,
    /// `docker run --rm IMAGE sh -c CLI` (Docker only).
    container: Latencies,
    /// Turns sent so far, for their spread.
    turns: usize,
    /// When the stack's channels next take a post unpaced, and its poster has had a
    /// moment: the next mention waits for it.
    next_free: DateTime<Utc>,
}

/// The `k`-th mention's offset past a free slot, spread evenly over a second (the
/// golden-ratio sequence): the notifier's chat poster looks once a second when nothing
/// wakes it, so a mention sent at a fixed phase would always meet the same wait.
fn spread(k: usize) -> chrono::Duration {
    let fraction = (k as f64 * 0.618_033_988_749_895).fract();
    chrono::Duration::microseconds((fraction * 1_000_000.0) as i64)
}

impl Figures {
    fn new() -> Self {
        Self {
            progress_first: Latencies::new(),
            progress_followup: Latencies::new(),
            begun: Latencies::new(),
            overhead_first: Latencies::new(),
            overhead_followup: Latencies::new(),
            cli: Latencies::new(),
            finished_to_ready: Latencies::new(),
            ready: Latencies::new(),
            posted: Latencies::new(),
            ready_overhead: Latencies::new(),
            posted_overhead: Latencies::new(),
            container: Latencies::new(),
            turns: 0,
            next_free: Utc::now(),
        }
    }

    fn json(&self, bare: &Latencies) -> Value {
        let mut figures = json!({
            "mention_to_progress_ms": self.progress_first.json(),
            "followup_mention_to_progress_ms": self.progress_followup.json(),
            "mention_to_attempt_begun_ms": self.begun.json(),
            "turn_overhead_ms": self.overhead_first.json(),
            "followup_turn_overhead_ms": self.overhead_followup.json(),
            "cli_ms": self.cli.json(),
            "attempt_finished_to_reply_ready_ms": self.finished_to_ready.json(),
            "mention_to_reply_ready_ms": self.ready.json(),
            "mention_to_reply_posted_ms": self.posted.json(),
            "end_to_end_overhead_ms": self.ready_overhead.json(),
            "end_to_end_overhead_posted_ms": self.posted_overhead.json(),
            "bare_cli_ms": bare.json(),
            "ratio_reply_ready_to_bare_cli": self.ready.p50() / bare.p50(),
            "ratio_reply_posted_to_bare_cli": self.posted.p50() / bare.p50(),
        });
        if self.container.count() != 0 {
            figures["docker_run_ms"] = self.container.json();
            figures["ratio_reply_ready_to_docker_run"] =
                json!(self.ready.p50() / self.container.p50());
        }
        figures
    }

    fn print(&self, name: &str, bare: &Latencies) {
        let title = format!("{name}:");
        println!(
            "{title:<54} {:>9} {:>9} {:>9}  p50 ratio",
            "p50 ms", "p99 ms", "max ms"
        );
        println!("{}", bare.line("baseline: the CLI as a bare process", None));
        if self.container.count() != 0 {
            println!(
                "{}",
                self.container
                    .line("baseline: docker run --rm IMAGE sh -c CLI", Some(bare))
            );
        }
        for (label, figure, baseline) in [
            (
                "mention → first progress message",
                &self.progress_first,
                None,
            ),
            ("  follow-up in the thread", &self.progress_followup, None),
            ("mention → attempt begun (runner)", &self.begun, None),
            ("CLI's own time (cli_ms)", &self.cli, Some(bare)),
            (
                "attempt − CLI (duration_ms − cli_ms), first turn",
                &self.overhead_first,
                None,
            ),
            ("  follow-up turn", &self.overhead_followup, None),
            (
                "attempt finished → reply ready",
                &self.finished_to_ready,
                None,
            ),
            (
                "mention → reply ready (notifier's first try)",
                &self.ready,
                Some(bare),
            ),
            ("  less cli_ms", &self.ready_overhead, None),
            (
                "mention → reply posted (Slack pacing: ≥ 1 s)",
                &self.posted,
                Some(bare),
            ),
            ("  less cli_ms", &self.posted_overhead, None),
        ] {
            println!("{}", figure.line(label, baseline));
        }
        if self.container.count() != 0 {
            println!(
                "  mention → reply ready over docker run: {:.2}×",
                self.ready.p50() / self.container.p50()
            );
        }
    }
}

/// Writes `script` as an executable `name` in `dir`.
fn install(dir: &Path, name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).expect("dir");
    let path = dir.join(name);
    std::fs::write(&path, script).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The channels of one stack: `count` for conversations one at a time (and a warm-up),
/// `burst` for the threads mentioned at once.
fn channels(kind: &str, count: usize, burst: usize) -> Vec<String> {
    (0..=count)
        .map(|i| format!("C0{kind}{i:04}"))
        .chain((0..burst).map(|i| format!("C0{kind}B{i:04}")))
        .collect()
}

fn projects(channels: &[String]) -> String {
    let list: Vec<String> = channels.iter().map(|c| format!("\"slack:{c}\"")).collect();
    format!(
        "[[projects]]\nname = \"api\"\nrepositories = [{{ repo = \"acme/api\" }}]\nchannels = [{}]\nconverse = [\"ana\"]\n",
        list.join(", ")
    )
}

/// A turn's finished attempt, from the store.
struct Attempt {
    seq: i64,
    started_at: DateTime<Utc>,
    finished_at: DateTime<Utc>,
    duration_ms: i64,
    cli_ms: i64,
}

/// One Gatehouse, its assistant on one sandbox kind.
struct Stack {
    kind: &'static str,
    gh: Gatehouse,
    role: Role,
    /// Where the CLI is on the host.
    tools: PathBuf,
}

async fn stack(
    kind: &'static str,
    docker: Option<DockerSandbox>,
    data: tempfile::TempDir,
    concurrency: usize,
    channels: &[String],
) -> Stack {
    let tools = data.path().join("tools");
    install(&tools, "claude", FAKE_CLAUDE);
    let mut role = Role {
        model: Some("claude-sonnet-4-5".into()),
        ..Role::new(Executor::ClaudeCode)
    };
    let mut profiles = BTreeMap::new();
    let sandbox: Arc<dyn gatehouse_sandbox::Sandbox> = match docker {
        Some(docker) => {
            role.sandbox = Some("box".into());
            role.env
                .insert("PATH".into(), format!("{TOOLS_IN_CONTAINER}:/bin"));
            profiles.insert(
                "box".to_owned(),
                Profile {
                    kind: SandboxKind::Docker,
                    image: Some(IMAGE.into()),
                    mounts: vec![Mount {
                        source: tools.clone(),
                        target: TOOLS_IN_CONTAINER.into(),
                    }],
                    ..Profile::default()
                },
            );
            Arc::new(Sandboxes::new(ProcessSandbox::default(), Ok(docker)))
        }
        None => {
            role.env
                .insert("PATH".into(), format!("{}:/usr/bin:/bin", tools.display()));
            Arc::new(ProcessSandbox::default())
        }
    };
    let roles = BTreeMap::from([("assistant".to_owned(), role.clone())]);
    let gh = Gatehouse::builder_on(TestDb::new(Backend::Postgres).await, data)
        .people(chat::people())
        .chat()
        .projects(&projects(channels))
        .sandbox(sandbox)
        .runner(move |options| {
            options.roles = roles;
            options.profiles.extend(profiles);
            options.concurrency = concurrency;
        })
        .assistant(AssistantSettings::new("assistant"))
        .start()
        .await;
    Stack {
        kind,
        gh,
        role,
        tools,
    }
}

impl Stack {
    /// The bot's messages in `thread` of `channel`, oldest first.
    fn bot_messages(&self, channel: &str, thread: &str) -> Vec<SlackMessage> {
        self.gh
            .slack
            .messages(channel)
            .into_iter()
            .filter(|m| m.user == BOT_USER && m.thread_ts.as_deref() == Some(thread))
            .collect()
    }

    /// The bot's first message in the thread after `after` (a ts).
    async fn first_after(&self, channel: &str, thread: &str, after: &str) -> SlackMessage {
        let after = slack_time(after);
        until("the first progress message", || async {
            self.bot_messages(channel, thread)
                .into_iter()
                .find(|m| slack_time(&m.ts) > after)
        })
        .await
    }

    async fn said(&self, channel: &str, thread: &str, text: &str) -> SlackMessage {
        until(text, || async {
            self.bot_messages(channel, thread)
                .into_iter()
                .find(|m| m.text.contains(text))
        })
        .await
    }

    async fn conversation(&self, channel: &str) -> Uuid {
        until("the conversation", || async {
            let all = self
                .gh
                .db
                .store
                .conversations(Some("api"), &[], 10_000)
                .await
                .expect("conversations");
            all.into_iter().find(|c| c.channel == channel).map(|c| c.id)
        })
        .await
    }

    /// The finished attempt of turn `n` (0-based) of the conversation.
    async fn attempt(&self, id: Uuid, n: usize) -> Attempt {
        until("the turn's attempt to finish", || async {
            let rows = self.gh.db.store.turn_attempts(id).await.expect("attempts");
            let row = rows.get(n)?;
            Some(Attempt {
                seq: row.seq,
                started_at: row.started_at,
                finished_at: row.finished_at?,
                duration_ms: row.duration_ms?,
                cli_ms: row.cli_ms?,
            })
        })
        .await
    }

    /// The chat message `what` of turn `seq`, as the notifier recorded it.
    async fn message(&self, id: Uuid, seq: i64, what: &str) -> ChatMessageRow {
        let key = format!("conversation:{id}:turn:{seq}:{what}");
        self.gh
            .db
            .store
            .chat_message(&key)
            .await
            .expect("chat message")
            .expect("the message was wanted")
    }

    /// One turn in `channel` (in `thread`, or opening one): mention, progress, reply.
    /// The mention waits for the stack's next free moment, spread past it. Returns the
    /// thread.
    async fn turn(
        &self,
        f: &mut Figures,
        channel: &str,
        thread: Option<&str>,
        text: &str,
        record: bool,
    ) -> String {
        // At the spread's phase of the stack's own second: when the other stack's turns
        // ran meanwhile, whole seconds later, so its poster's poll is met at that phase.
        let mut at = f.next_free + spread(f.turns);
        let behind = (Utc::now() - at).num_microseconds().unwrap_or(0);
        if behind > 0 {
            at += chrono::Duration::seconds(behind / 1_000_000 + 1);
        }
        sleep_until(at).await;
        f.turns += 1;
        let event = format!("Ev{}", Uuid::new_v4().simple());
        let mention = self
            .gh
            .slack_mention_in(&event, channel, thread, ANA, text)
            .await;
        let thread = thread.map(str::to_owned).unwrap_or_else(|| mention.clone());
        let first = self.first_after(channel, &thread, &mention).await;
        let reply = self
            .said(channel, &thread, &format!("Answer: {text}"))
            .await;
        let id = self.conversation(channel).await;
        let n = usize::from(thread != mention);
        let attempt = self.attempt(id, n).await;
        // The bot's first message in the thread is the turn's progress message.
        let progress = self.message(id, attempt.seq, "progress").await;
        assert_eq!(progress.message_id.as_deref(), Some(first.ts.as_str()));
        let ready = self
            .message(id, attempt.seq, "reply")
            .await
            .first_try_at
            .expect("tried before posted");
        let (asked, posted) = (slack_time(&mention), slack_time(&reply.ts));
        f.next_free = posted + SLOT;
        if record {
            let (progress_l, overhead_l) = if n == 0 {
                (&mut f.progress_first, &mut f.overhead_first)
            } else {
                (&mut f.progress_followup, &mut f.overhead_followup)
            };
            progress_l.between(asked, slack_time(&first.ts));
            overhead_l.ms(attempt.duration_ms - attempt.cli_ms);
            f.begun.between(asked, attempt.started_at);
            f.cli.ms(attempt.cli_ms);
            f.finished_to_ready.between(attempt.finished_at, ready);
            f.ready.between(asked, ready);
            f.posted.between(asked, posted);
            let cli = chrono::Duration::milliseconds(attempt.cli_ms);
            f.ready_overhead
                .between(asked + cli, ready.max(asked + cli));
            f.posted_overhead
                .between(asked + cli, posted.max(asked + cli));
        }
        thread
    }

    /// A conversation of two turns in `channel`, each mentioned once the channel takes
    /// a post unpaced; the baselines run while it waits.
    async fn conversation_of_two(
        &self,
        f: &mut Figures,
        bare: &mut Latencies,
        channel: &str,
        i: usize,
        record: bool,
    ) {
        let thread = self
            .turn(f, channel, None, &format!("open {i}"), record)
            .await;
        self.baselines(f, bare, i, record).await;
        self.turn(f, channel, Some(&thread), &format!("again {i}"), record)
            .await;
        self.baselines(f, bare, i, record).await;
    }

    /// The CLI run bare (and, for Docker, in a plain container), once each.
    async fn baselines(&self, f: &mut Figures, bare: &mut Latencies, i: usize, record: bool) {
        let sample = bare_cli(&self.tools, &format!("bare {i}")).await;
        if record {
            bare.micros(sample.as_micros() as i64);
        }
        if self.kind == "docker" {
            let sample = docker_run(&self.tools, &self.role, &format!("bare {i}")).await;
            if record {
                f.container.micros(sample.as_micros() as i64);
            }
        }
    }
}

/// The command line a turn runs, over the prompt file `prompt`.
fn command_line(role: &Role, prompt: &str) -> String {
    turn_invocation(
        role,
        None,
        &Tools::none(),
        prompt,
        None,
        Session {
            resume: None,
            transcript_file: None,
        },
    )
    .expect("a command line")
}

/// The turn's command line run by `sh -c` as a plain child process in a scratch
/// directory, its output read to the end: the time of the whole.
async fn bare_cli(tools: &Path, text: &str) -> Duration {
    let dir = tempfile::tempdir().expect("dir");
    let prompt = dir.path().join("prompt.md");
    std::fs::write(&prompt, text).expect("prompt");
    let role = Role {
        model: Some("claude-sonnet-4-5".into()),
        ..Role::new(Executor::ClaudeCode)
    };
    let script = command_line(&role, &prompt.display().to_string());
    let begun = Instant::now();
    let out = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&script)
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", tools.display()))
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("the CLI");
    let took = begun.elapsed();
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("Answer: {text}")),
        "{out:?}"
    );
    took
}

/// The same in a fresh container of the image, as the Docker profile runs it (no network,
/// an unprivileged user, a read-only root, the CLI mounted read-only).
async fn docker_run(tools: &Path, role: &Role, text: &str) -> Duration {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    std::fs::write(dir.path().join("prompt.md"), text).expect("prompt");
    let script = command_line(role, "/w/prompt.md");
    let begun = Instant::now();
    let out = tokio::process::Command::new("docker")
        .args(["run", "--rm", "--network", "none", "--read-only"])
        .args(["--user", "65534:65534", "--workdir", "/w"])
        .arg("-v")
        .arg(format!("{}:/w", dir.path().display()))
        .arg("-v")
        .arg(format!("{}:{TOOLS_IN_CONTAINER}:ro", tools.display()))
        .args(["-e", &format!("PATH={TOOLS_IN_CONTAINER}:/bin")])
        .args([IMAGE, "sh", "-c", &script])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("docker run");
    let took = begun.elapsed();
    assert!(out.status.success(), "{out:?}");
    took
}

/// `VmHWM` and `VmRSS` of this process, in KiB.
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// What the burst gave.
struct Burst {
    threads: usize,
    /// Mentions ingest answered 503 at first (its bound on webhook bodies read at once),
    /// sent again after its `Retry-After`.
    retried: usize,
    wall: Duration,
    /// Mention → reply posted, per thread.
    reply: Latencies,
    rss_before_kib: u64,
    peak_kib: u64,
    rss_after_kib: u64,
    /// Whether the peak is over the burst alone (`clear_refs` took), or the process's.
    peak_of_burst: bool,
}

impl Burst {
    fn json(&self, concurrency: usize) -> Value {
        json!({
            "threads": self.threads,
            "mentions_retried_after_503": self.retried,
            "runner_concurrency": concurrency,
            "wall_s": self.wall.as_secs_f64(),
            "floor_s": floor_secs(self.threads, concurrency),
            "mention_to_reply_posted_ms": self.reply.json(),
            "rss_before_mib": mib(self.rss_before_kib),
            "peak_rss_mib": mib(self.peak_kib),
            "rss_after_mib": mib(self.rss_after_kib),
            "peak_is_of_the_burst": self.peak_of_burst,
        })
    }
}

fn mib(kib: u64) -> f64 {
    (kib as f64 / 1024.0 * 10.0).round() / 10.0
}

/// The least the burst can take: the turns in waves of `concurrency`, a second each.
fn floor_secs(threads: usize, concurrency: usize) -> usize {
    threads.div_ceil(concurrency.max(1))
}

/// How long ingest asks a busy webhook's sender to wait (its `Retry-After`).
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// A mention at the top of `channel`, signed as Slack signs events, and sent again with
/// `X-Slack-Retry-Num` after the `Retry-After` of a 503 (ingest bounds the webhook bodies
/// it reads at once). Returns the thread and how many retries it took.
async fn mention_as_slack(gh: &Gatehouse, event: &str, channel: &str, text: &str) -> (String, u32) {
    let ts = gh.slack.add_user_message(channel, ANA, text, None);
    let mut body: Value = serde_json::from_str(include_str!(
        "../fixtures/slack/event_callback.app_mention.json"
    ))
    .expect("the fixture");
    body["event_id"] = json!(event);
    body["event"]["channel"] = json!(channel);
    body["event"]["user"] = json!(ANA);
    body["event"]["ts"] = json!(ts);
    body["event"]["event_ts"] = json!(ts);
    body["event"]["text"] = json!(format!("<@{BOT_USER}> {text}"));
    let body = serde_json::to_vec(&body).expect("JSON");
    for retry in 0..10u32 {
        let at = Utc::now().timestamp();
        let signature = gatehouse_slack::sign_request(chat::SIGNING_SECRET.as_bytes(), at, &body);
        let mut request = gh
            .http
            .post(format!("{}/webhooks/slack/events", gh.url))
            .header("Content-Type", "application/json")
            .header("X-Slack-Request-Timestamp", at.to_string())
            .header("X-Slack-Signature", signature)
            .body(body.clone());
        if retry > 0 {
            request = request.header("X-Slack-Retry-Num", retry.to_string());
        }
        let response = request.send().await.expect("ingest");
        match response.status().as_u16() {
            200 => return (ts, retry),
            503 => tokio::time::sleep(RETRY_AFTER).await,
            status => panic!("{status}: {}", response.text().await.unwrap_or_default()),
        }
    }
    panic!("ingest never took the mention in {channel}");
}

/// `threads` threads mentioned at once, one per channel; each must be answered once.
async fn burst(stack: &Stack, threads: usize) -> Burst {
    let (_, rss_before_kib) = memory();
    // Linux: `5` resets the peak to the current size, so VmHWM is the burst's own.
    let peak_of_burst = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let kind = if stack.kind == "docker" { "D" } else { "P" };
    let begun = Instant::now();
    let mentions = (0..threads).map(|i| {
        let channel = format!("C0{kind}B{i:04}");
        async move {
            let text = format!("linger burst {i}");
            let event = format!("Ev{}", Uuid::new_v4().simple());
            let (thread, retries) = mention_as_slack(&stack.gh, &event, &channel, &text).await;
            (channel, thread, text, retries)
        }
    });
    let sent = join_all(mentions).await;
    let retried = sent.iter().filter(|m| m.3 > 0).count();
    let threads_said: Vec<(String, String, String)> =
        sent.into_iter().map(|(c, t, x, _)| (c, t, x)).collect();
    let replies = join_all(
        threads_said
            .iter()
            .map(|(channel, thread, text)| async move {
                stack
                    .said(channel, thread, &format!("Answer: {text}"))
                    .await
            }),
    )
    .await;
    let wall = begun.elapsed();
    let (peak_kib, rss_after_kib) = memory();
    let mut reply = Latencies::new();
    for ((_, thread, _), answer) in threads_said.iter().zip(&replies) {
        reply.between(slack_time(thread), slack_time(&answer.ts));
    }
    // Exactly one reply each, once everything had time to be posted twice.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for (channel, thread, text) in &threads_said {
        let said = stack
            .bot_messages(channel, thread)
            .iter()
            .filter(|m| m.text.contains(&format!("Answer: {text}")))
            .count();
        assert_eq!(said, 1, "{channel} {thread}: {said} replies");
    }
    Burst {
        threads,
        retried,
        wall,
        reply,
        rss_before_kib,
        peak_kib,
        rss_after_kib,
        peak_of_burst,
    }
}

fn print_burst(name: &str, b: &Burst, concurrency: usize) {
    println!(
        "{name}: {} threads at once ({} mentions answered 503 and sent again after 1 s), runner concurrency {concurrency}: all answered once in {:.2} s (floor {} s: waves of {concurrency} one-second turns); mention → reply p50 {:.0} ms, p99 {:.0} ms",
        b.threads,
        b.retried,
        b.wall.as_secs_f64(),
        floor_secs(b.threads, concurrency),
        b.reply.p50(),
        b.reply.p99(),
    );
    println!(
        "  resident memory: {:.1} MiB before, peak {:.1} MiB{}, {:.1} MiB after",
        mib(b.rss_before_kib),
        mib(b.peak_kib),
        if b.peak_of_burst {
            " during the burst"
        } else {
            " (the process's; VmHWM could not be reset)"
        },
        mib(b.rss_after_kib),
    );
}

/// The Docker sandbox, or why not.
async fn docker(owner: &Path) -> Result<DockerSandbox, String> {
    let docker = DockerSandbox::connect(owner.display().to_string())
        .await
        .map_err(|e| format!("no Docker engine: {e}"))?;
    docker
        .check_image(IMAGE)
        .await
        .map_err(|e| format!("{e} (deploy/sandbox/build-images.sh builds it)"))?;
    Ok(docker)
}

/// Containers and volumes the Docker stack's runner left, removed.
fn remove_leftovers(owner: &Path) {
    let label = format!("label=gatehouse.owner={}", owner.display());
    for (list, remove) in [
        (vec!["ps", "-aq", "--filter", &label], vec!["rm", "-f"]),
        (
            vec!["volume", "ls", "-q", "--filter", &label],
            vec!["volume", "rm", "-f"],
        ),
    ] {
        let Ok(out) = std::process::Command::new("docker").args(&list).output() else {
            return;
        };
        let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect();
        if !ids.is_empty() {
            let _ = std::process::Command::new("docker")
                .args(&remove)
                .args(&ids)
                .output();
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `cargo test --benches` runs this with --test too; keep that quick.
    let quick = std::env::args().any(|a| a == "--test");
    let (count, at_once) = if quick {
        (2, 4)
    } else {
        (
            env_usize("GATEHOUSE_BENCH_CONVERSATIONS", 30),
            env_usize("GATEHOUSE_BENCH_AT_ONCE", 50),
        )
    };
    let concurrency = env_usize("GATEHOUSE_BENCH_CONCURRENCY", 8);
    let started = Instant::now();

    let process_data = tempfile::tempdir().expect("dir");
    let process = stack(
        "process",
        None,
        process_data,
        concurrency,
        &channels("P", count, at_once),
    )
    .await;
    let docker_data = tempfile::tempdir().expect("dir");
    let owner = docker_data.path().to_owned();
    let boxed = match docker(&owner).await {
        Ok(engine) => Ok(stack(
            "docker",
            Some(engine),
            docker_data,
            concurrency,
            &channels("D", count, at_once),
        )
        .await),
        Err(why) => Err(why),
    };

    // Warm up each (pools, caches, the image's layers), then the conversations one at a
    // time, the kinds and the baselines interleaved.
    let mut bare = Latencies::new();
    let (mut on_process, mut on_docker) = (Figures::new(), Figures::new());
    process
        .conversation_of_two(&mut on_process, &mut bare, "C0P0000", 0, false)
        .await;
    if let Ok(boxed) = &boxed {
        boxed
            .conversation_of_two(&mut on_docker, &mut bare, "C0D0000", 0, false)
            .await;
    }
    for i in 1..=count {
        process
            .conversation_of_two(&mut on_process, &mut bare, &format!("C0P{i:04}"), i, true)
            .await;
        if let Ok(boxed) = &boxed {
            boxed
                .conversation_of_two(&mut on_docker, &mut bare, &format!("C0D{i:04}"), i, true)
                .await;
        }
    }
    let process_burst = burst(&process, at_once).await;
    let docker_burst = match &boxed {
        Ok(boxed) => Some(burst(boxed, at_once).await),
        Err(_) => None,
    };
    process.gh.stop().await;
    let docker_skipped = match boxed {
        Ok(boxed) => {
            boxed.gh.stop().await;
            remove_leftovers(&owner);
            None
        }
        Err(why) => Some(why),
    };

    println!(
        "conversations on Postgres, fake Slack, stand-in Claude Code: {count} conversations of two turns one at a time, each mentioned once its channel takes a post unpaced, spread over the poster's second ({:.0} s in all)",
        started.elapsed().as_secs_f64()
    );
    on_process.print("process sandbox", &bare);
    match &docker_skipped {
        None => on_docker.print("docker sandbox", &bare),
        Some(why) => println!("docker sandbox: skipped: {why}"),
    }
    print_burst("process sandbox", &process_burst, concurrency);
    if let Some(b) = &docker_burst {
        print_burst("docker sandbox", b, concurrency);
    }

    let mut figures = on_process.json(&bare);
    figures["bench"] = json!("conversations");
    figures["conversations"] = json!(count);
    figures["at_once"] = process_burst.json(concurrency);
    figures["docker"] = match (&docker_skipped, &docker_burst) {
        (None, Some(b)) => {
            let mut d = on_docker.json(&bare);
            d["at_once"] = b.json(concurrency);
            d
        }
        (Some(why), _) => json!({ "skipped": why }),
        (None, None) => json!({ "skipped": "no burst" }),
    };
    write_figures(&figures);
}
