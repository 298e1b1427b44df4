//! The chaos test of distributed mode: two schedulers, two runners, two ingest replicas
//! and the notifier as separate `gatehouse serve` processes on Postgres and a NATS server of
//! the test's own, each process with a data directory of its own (as on machines of their
//! own: artifacts and workspace checkpoints are in NATS). 100 runs go through a script, an
//! approval gate (an approval card in a fake Slack, the decision through the API) and
//! another script that needs the first one's workspace file and artifact, while a seeded
//! chaos loop kills a random process with SIGKILL every few seconds and starts it again,
//! and kills and restarts NATS once. Afterwards every run has succeeded, no attempt ran
//! twice (the scripts' own execution log is the proof) and none failed (the workspace
//! followed the run to whichever runner took its next node), every gate attempt got
//! exactly one card, every artifact downloads from both ingest replicas, and nothing is
//! left unacknowledged on the bus or unsent in the outbox.
//!
//! The seed is printed at the start; `CHAOS_SEED=<seed>` repeats that kill schedule, and
//! `CHAOS_LOGS=<dir>` keeps the processes' logs (warnings and errors) there.

mod harness;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gatehouse_events::Prefix;
use gatehouse_store::{RunRow, Store};
use gatehouse_tests::fake_slack::{self, FakeSlack};
use gatehouse_tests::private_nats::{ConsumerBacklog, PrivateNats, consumer_backlogs};
use gatehouse_tests::{Backend, TestDb};
use harness::Deployment;
use serde_json::Value;
use uuid::Uuid;

/// Runs started.
const RUNS: usize = 100;
/// The SOPs they run (alternately), each with the channel its gate's cards go to: the
/// first to `[slack] approvals_channel`, the second to the gate's own `channels`. Slack
/// takes one message a second per channel, so two channels post 100 cards in 50 seconds.
const SOPS: [(&str, &str); 2] = [("chaos-a", "C0APPROVALS"), ("chaos-b", "C0CHAOSB")];
/// Their gate.
const GATE: &str = "review";
/// The processes: name and service.
const SERVICES: [(&str, &str); 7] = [
    ("ingest", "ingest"),
    ("ingest-2", "ingest"),
    ("scheduler-1", "scheduler"),
    ("scheduler-2", "scheduler"),
    ("runner-1", "runner"),
    ("runner-2", "runner"),
    ("notifier", "notifier"),
];
/// How long processes keep being killed.
const CHAOS: Duration = Duration::from_secs(90);
/// Between two kills: this, plus up to `KILL_JITTER` more.
const KILL_EVERY: Duration = Duration::from_millis(1_500);
const KILL_JITTER: Duration = Duration::from_millis(1_500);
/// A killed process starts again after this, plus up to `PAUSE_JITTER` more.
const PAUSE: Duration = Duration::from_millis(300);
const PAUSE_JITTER: Duration = Duration::from_millis(1_000);
/// Runs are started this far apart, so the chaos meets every stage of them.
const START_EVERY: Duration = Duration::from_millis(600);
/// How long everything may take to settle once the chaos stops (generous: it usually
/// takes seconds). Cards are the slowest part: one a second per channel, and a notifier
/// killed while holding the posting lease holds every post up until that lease runs out.
const SETTLE: Duration = Duration::from_secs(180);

/// The artifact each script leaves.
const ARTIFACT: &str = "out.txt";

/// A script node: it logs its execution, does `work` and then works a little more, so
/// kills hit running work.
fn script_node(id: &str, needs: &str, work: &str, log: &Path) -> String {
    format!(
        "  {id}:\n    kind: script\n{needs}    artifacts: [{ARTIFACT}]\n    run: |\n      echo \"$GATEHOUSE_RUN_ID $GATEHOUSE_NODE $GATEHOUSE_ATTEMPT\" >> '{}'\n{work}      sleep 0.4\n    retry: {{ max: 5, backoff: 1s }}\n    timeout: 1m\n",
        log.display()
    )
}

/// The SOP `name`: a script, a gate ana decides (its card in `channels`, when given) and
/// another script. The first leaves a file in the workspace and an artifact; the second
/// fails unless it finds both, and leaves an artifact of both.
fn sop(name: &str, channels: &str, log: &Path) -> String {
    let build = format!(
        "      echo \"$GATEHOUSE_RUN_ID\" > \"$GATEHOUSE_WORKSPACE/built\"\n      echo \"$GATEHOUSE_RUN_ID build\" > \"$GATEHOUSE_ARTIFACTS/{ARTIFACT}\"\n"
    );
    let ship = format!(
        "      grep -qx \"$GATEHOUSE_RUN_ID\" \"$GATEHOUSE_WORKSPACE/built\" || exit 3\n      cat \"$GATEHOUSE_INPUTS/build/{ARTIFACT}\" \"$GATEHOUSE_WORKSPACE/built\" > \"$GATEHOUSE_ARTIFACTS/{ARTIFACT}\" || exit 4\n"
    );
    format!(
        "name: {name}\ntitle: Chaos\nparams:\n  n: {{ required: false }}\nnodes:\n{}  {GATE}:\n    kind: gate\n    needs: [build]\n    approvers: [ana]\n{channels}{}",
        script_node("build", "", &build, log),
        script_node("ship", &format!("    needs: [{GATE}]\n"), &ship, log),
    )
}

/// What `node`'s artifact holds in `run`.
fn artifact_text(run: Uuid, node: &str) -> String {
    match node {
        "build" => format!("{run} build\n"),
        _ => format!("{run} build\n{run}\n"),
    }
}

/// Whether `run` is one of the test's.
fn ours(run: &RunRow) -> bool {
    SOPS.iter().any(|(sop, _)| run.sop == *sop)
}

/// A tiny xorshift* generator: the chaos is random, and repeatable from its seed.
struct XorShift(u64);

impl XorShift {
    /// Seeds that differ little (clock readings) still start far apart: splitmix64.
    fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Self((z ^ (z >> 31)).max(1))
    }

    fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) % n
    }

    fn up_to(&mut self, d: Duration) -> Duration {
        Duration::from_millis(self.below(d.as_millis() as u64 + 1))
    }
}

/// What the test's tasks share.
struct Ctx {
    deployment: Mutex<Deployment>,
    store: Store,
    nats_url: String,
    prefix: Prefix,
    http: reqwest::Client,
}

impl Ctx {
    /// A CLI verb against ingest, with `--json`: the answer, or what went wrong.
    async fn cli(&self, args: &[&str]) -> Result<Value, String> {
        let command = {
            let deployment = self.deployment.lock().unwrap();
            let mut command = deployment.gatehouse();
            command
                .args(args)
                .args(["--json", "--server", &deployment.url("ingest")])
                .stdin(Stdio::null());
            command
        };
        let mut command = tokio::process::Command::from(command);
        command.kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(30), command.output())
            .await
            .map_err(|_| format!("{args:?}: no answer within 30 s"))?
            .map_err(|e| format!("{args:?}: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
        }
        serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
    }

    /// The text of `node`'s artifact of `run`, downloaded from the ingest process `ingest`.
    async fn artifact(
        &self,
        ingest: &str,
        token: &str,
        run: Uuid,
        node: &str,
        attempt: u32,
    ) -> Result<String, String> {
        let url = format!(
            "{}/api/v1/runs/{run}/artifacts/{node}/{attempt}/{ARTIFACT}",
            self.deployment.lock().unwrap().url(ingest)
        );
        let answer = self
            .http
            .get(&url)
            .bearer_auth(token)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = answer.status();
        let text = answer.text().await.map_err(|e| e.to_string())?;
        if status.is_success() {
            Ok(text)
        } else {
            Err(format!("{status}: {text}"))
        }
    }

    /// Waits up to `limit` until `name` answers `/readyz` with 200.
    async fn ready(&self, name: &str, limit: Duration) -> bool {
        let url = format!("{}/readyz", self.deployment.lock().unwrap().url(name));
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            let answer = self
                .http
                .get(&url)
                .timeout(Duration::from_secs(1))
                .send()
                .await;
            if answer.is_ok_and(|a| a.status().is_success()) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    /// The test's runs.
    async fn runs(&self) -> Vec<RunRow> {
        match self.store.runs(None, &[], 10 * RUNS as i64).await {
            Ok(rows) => rows.into_iter().filter(ours).collect(),
            Err(e) => panic!("reading runs: {e}"),
        }
    }

    async fn backlogs(&self) -> Result<Vec<ConsumerBacklog>, String> {
        consumer_backlogs(&self.nats_url, &self.prefix).await
    }

    /// Whether run number `n` exists; after a `run start` that failed, the request may
    /// still have been taken before ingest died. Waits until the run appears, or until
    /// nothing that could still create it is left: the outbox sent, and the schedulers'
    /// request consumer with nothing pending or unacknowledged.
    async fn became_run(&self, n: usize) -> bool {
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut quiet = 0;
        loop {
            if self.runs().await.iter().any(|r| tag(r) == Some(n)) {
                return true;
            }
            let unsent = self.store.outbox_backlog().await.unwrap_or(1);
            let requests = self.backlogs().await.map(|b| {
                b.iter()
                    .filter(|c| c.consumer == "scheduler-requests")
                    .all(|c| c.pending == 0 && c.ack_pending == 0)
            });
            if unsent == 0 && requests == Ok(true) {
                quiet += 1;
                if quiet >= 3 {
                    return false;
                }
            } else {
                quiet = 0;
            }
            assert!(
                Instant::now() < deadline,
                "run {n}: neither created nor settled within 2 minutes of a failed start"
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
}

/// The number the test gave a run (its `n` parameter).
fn tag(run: &RunRow) -> Option<usize> {
    let params: Value = serde_json::from_str(&run.params).ok()?;
    params["n"].as_str()?.parse().ok()
}

/// How starting the runs went.
#[derive(Debug, Default)]
struct Starts {
    /// `run start` calls that failed (ingest down or killed during the call).
    failed_calls: u32,
    /// Of those, the ones whose request had been taken all the same.
    taken_anyway: u32,
    last_error: String,
}

/// Starts the runs through the CLI, `START_EVERY` apart, each exactly once.
async fn start_runs(ctx: Arc<Ctx>) -> Starts {
    let mut starts = Starts::default();
    for n in 0..RUNS {
        let began = Instant::now();
        let param = format!("n={n}");
        let (sop, _) = SOPS[n % SOPS.len()];
        loop {
            match ctx.cli(&["run", "start", sop, "--param", &param]).await {
                Ok(_) => break,
                Err(e) => {
                    starts.failed_calls += 1;
                    starts.last_error = e;
                    if ctx.became_run(n).await {
                        starts.taken_anyway += 1;
                        break;
                    }
                }
            }
        }
        tokio::time::sleep_until((began + START_EVERY).into()).await;
    }
    starts
}

/// How deciding the gates went.
#[derive(Debug, Default)]
struct Approvals {
    approved: u32,
    /// Refused as already decided: the earlier call went through before ingest died.
    already: u32,
    failed_calls: u32,
    last_error: String,
}

/// Approves, as ana through the CLI, every gate that waits, until `stop`.
async fn approve_gates(ctx: Arc<Ctx>, token: String, stop: Arc<AtomicBool>) -> Approvals {
    let mut approvals = Approvals::default();
    let mut tried: HashMap<Uuid, Instant> = HashMap::new();
    while !stop.load(Ordering::Relaxed) {
        let waiting = ctx.store.runs(Some("waiting"), &[], 10 * RUNS as i64).await;
        for run in waiting.unwrap_or_default() {
            if !ours(&run)
                || tried
                    .get(&run.id)
                    .is_some_and(|at| at.elapsed() < Duration::from_secs(3))
            {
                continue;
            }
            tried.insert(run.id, Instant::now());
            let gate = format!("{}/{GATE}", run.id);
            match ctx
                .cli(&["gate", "approve", &gate, "--token", &token])
                .await
            {
                Ok(_) => approvals.approved += 1,
                Err(e) if e.contains("already") => approvals.already += 1,
                Err(e) => {
                    approvals.failed_calls += 1;
                    approvals.last_error = e;
                    // Again in a second rather than three.
                    tried.insert(run.id, Instant::now() - Duration::from_secs(2));
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    approvals
}

/// What the chaos did.
#[derive(Debug, Default)]
struct Chaos {
    kills: BTreeMap<&'static str, u32>,
    nats_restarts: u32,
    /// Processes that were not ready 30 s after they were started again.
    slow: Vec<&'static str>,
}

/// Kills a random process every few seconds and starts it again, and restarts NATS once,
/// half-way; for `CHAOS`. The first kills take every process once, in a random order.
async fn chaos(ctx: Arc<Ctx>, mut nats: PrivateNats, seed: u64) -> (PrivateNats, Chaos) {
    let mut rng = XorShift::new(seed);
    let mut chaos = Chaos::default();
    let mut first_round: Vec<usize> = (0..SERVICES.len()).collect();
    for i in (1..first_round.len()).rev() {
        first_round.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let began = Instant::now();
    loop {
        tokio::time::sleep(KILL_EVERY + rng.up_to(KILL_JITTER)).await;
        if began.elapsed() >= CHAOS {
            break;
        }
        if chaos.nats_restarts == 0 && began.elapsed() >= CHAOS / 2 {
            nats = tokio::task::spawn_blocking(move || {
                nats.kill();
                std::thread::sleep(Duration::from_secs(1));
                nats.restart();
                nats
            })
            .await
            .unwrap();
            chaos.nats_restarts += 1;
            continue;
        }
        let pick = first_round
            .pop()
            .unwrap_or_else(|| rng.below(SERVICES.len() as u64) as usize);
        let (name, service) = SERVICES[pick];
        ctx.deployment.lock().unwrap().kill_9(name);
        *chaos.kills.entry(name).or_default() += 1;
        tokio::time::sleep(PAUSE + rng.up_to(PAUSE_JITTER)).await;
        ctx.deployment.lock().unwrap().start(name, service);
        if !ctx.ready(name, Duration::from_secs(30)).await {
            chaos.slow.push(name);
        }
    }
    (nats, chaos)
}

/// Where things stand, polled until everything has settled.
#[derive(Debug)]
struct Standing {
    runs: usize,
    by_status: BTreeMap<String, usize>,
    unsent: i64,
    dirty_chat: usize,
    backlogs: Result<Vec<ConsumerBacklog>, String>,
}

impl Standing {
    async fn now(ctx: &Ctx) -> Self {
        let runs = ctx.runs().await;
        let mut by_status = BTreeMap::new();
        for run in &runs {
            *by_status.entry(run.status.to_string()).or_default() += 1;
        }
        Self {
            runs: runs.len(),
            by_status,
            unsent: ctx.store.outbox_backlog().await.unwrap_or(-1),
            dirty_chat: ctx
                .store
                .dirty_chat_messages(1000)
                .await
                .map_or(usize::MAX, |d| d.len()),
            backlogs: ctx.backlogs().await,
        }
    }

    fn terminal(&self) -> bool {
        self.runs == RUNS
            && self
                .by_status
                .iter()
                .all(|(s, _)| ["succeeded", "failed", "cancelled"].contains(&s.as_str()))
    }

    fn unacked(&self) -> Option<u64> {
        self.backlogs.as_ref().ok().map(|b| {
            b.iter()
                .map(|c| c.pending + c.ack_pending as u64)
                .sum::<u64>()
        })
    }

    fn settled(&self) -> bool {
        self.terminal() && self.unsent == 0 && self.dirty_chat == 0 && self.unacked() == Some(0)
    }
}

/// How many warnings and errors each process logged, for the summary.
fn log_counts(dir: &Path) -> String {
    SERVICES
        .iter()
        .map(|(name, _)| {
            let log = std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default();
            let count = |level: &str| log.lines().filter(|l| l.contains(level)).count();
            format!("{name} {}/{}", count(" WARN"), count(" ERROR"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The runs that did not succeed, and the last lines each process logged.
async fn explain(ctx: &Ctx, dir: &Path) -> String {
    let mut text = String::new();
    for run in ctx.runs().await.iter().filter(|r| r.status != "succeeded") {
        let attempts = ctx.store.attempts(run.id).await.unwrap_or_default();
        text += &format!(
            "\nrun {} (n={:?}) is {}: {}\n  attempts: {:?}\n",
            run.id,
            tag(run),
            run.status,
            run.state,
            attempts
                .iter()
                .map(|a| format!("{}#{} {} {:?}", a.node, a.attempt, a.status, a.error))
                .collect::<Vec<_>>()
        );
    }
    if let Ok(dirty) = ctx.store.dirty_chat_messages(20).await {
        for m in dirty {
            text += &format!(
                "\nunposted chat message {} (first try {:?}, id {:?})",
                m.key, m.first_try_at, m.message_id
            );
        }
    }
    for (name, _) in SERVICES {
        let log = std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        text += &format!("\n--- {name}.log, last lines of {} ---\n", lines.len());
        for line in &lines[lines.len().saturating_sub(25)..] {
            text += line;
            text += "\n";
        }
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn distributed_mode_survives_kill_9_and_a_nats_restart() {
    let test_began = Instant::now();
    let seed = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!("chaos: seed {seed} (CHAOS_SEED={seed} repeats this kill schedule)");

    let nats = tokio::task::spawn_blocking(PrivateNats::start)
        .await
        .unwrap();
    let db = TestDb::unmigrated(Backend::Postgres).await;
    let slack = FakeSlack::start().await;
    let prefix = Prefix::new("chaos").unwrap();
    let mut deployment = Deployment::new(
        &db.url,
        &nats.url(),
        prefix.as_str(),
        &format!(
            "[slack]\napi_url = \"{}\"\nbot_token = \"{}\"\nsigning_secret = \"chaos\"\napprovals_channel = \"{}\"\n",
            slack.api_url(),
            fake_slack::BOT_TOKEN,
            SOPS[0].1,
        ),
    );
    let executions = deployment.dir.path().join("executions.log");
    let logs = deployment.dir.path().join("logs");
    for (i, (name, channel)) in SOPS.iter().enumerate() {
        // The first SOP's cards go to the default approvals channel, the others' to their own.
        let channels = match i {
            0 => String::new(),
            _ => format!("    channels: [\"slack:{channel}\"]\n"),
        };
        std::fs::write(
            deployment.dir.path().join(format!("sops/{name}.yaml")),
            sop(name, &channels, &executions),
        )
        .unwrap();
    }
    deployment.log_to(logs.clone());
    let migrated = deployment.gatehouse().arg("migrate").output().unwrap();
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    for (name, service) in SERVICES {
        deployment.start(name, service);
    }
    let ctx = Arc::new(Ctx {
        deployment: Mutex::new(deployment),
        store: db.store.clone(),
        nats_url: nats.url(),
        prefix,
        http: reqwest::Client::new(),
    });
    for (name, _) in SERVICES {
        assert!(
            ctx.ready(name, Duration::from_secs(60)).await,
            "{name} never became ready:{}",
            explain(&ctx, &logs).await
        );
    }
    let token = ctx.cli(&["token", "create", "ana"]).await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();

    let stop = Arc::new(AtomicBool::new(false));
    let starter = tokio::spawn(start_runs(ctx.clone()));
    let approver = tokio::spawn(approve_gates(ctx.clone(), token.clone(), stop.clone()));
    let (nats, chaos) = tokio::spawn(chaos(ctx.clone(), nats, seed)).await.unwrap();
    let chaos_ended = test_began.elapsed();
    let starts = starter.await.unwrap();

    // Everything settles: every run ends, every card is posted and up to date, the outbox
    // is sent and every consumer has acknowledged everything.
    let deadline = Instant::now() + SETTLE;
    let standing = loop {
        let standing = Standing::now(&ctx).await;
        if standing.settled() || Instant::now() > deadline {
            break standing;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    stop.store(true, Ordering::Relaxed);
    let approvals = approver.await.unwrap();
    let settled_after = test_began.elapsed();
    println!(
        "chaos: {chaos:?}\nchaos: {starts:?}\nchaos: {approvals:?}\nchaos: standing {standing:?}"
    );
    let mut problems = Vec::new();
    if !standing.settled() {
        problems.push(format!(
            "not settled {} s after the chaos stopped: {standing:?}",
            SETTLE.as_secs()
        ));
    }

    // Every run succeeded.
    let runs = ctx.runs().await;
    let succeeded = runs.iter().filter(|r| r.status == "succeeded").count();
    if runs.len() != RUNS || succeeded != RUNS {
        problems.push(format!(
            "{} runs, {succeeded} succeeded: {:?}",
            runs.len(),
            standing.by_status
        ));
    }

    // No attempt ran twice: each (run, node, attempt) is in the execution log at most once,
    // and each is a recorded attempt.
    let mut executed: BTreeMap<(String, String, u32), u32> = BTreeMap::new();
    for line in std::fs::read_to_string(&executions)
        .unwrap_or_default()
        .lines()
    {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [run, node, attempt] = fields[..] else {
            problems.push(format!("unreadable execution log line `{line}`"));
            continue;
        };
        *executed
            .entry((run.into(), node.into(), attempt.parse().unwrap_or(0)))
            .or_default() += 1;
    }
    let duplicates: u32 = executed.values().map(|n| n - 1).sum();
    if duplicates > 0 {
        problems.push(format!(
            "{duplicates} duplicate executions: {:?}",
            executed.iter().filter(|(_, n)| **n > 1).collect::<Vec<_>>()
        ));
    }
    let mut attempts = 0;
    let mut by_status: BTreeMap<String, u32> = BTreeMap::new();
    let mut recorded = std::collections::BTreeSet::new();
    let mut produced = Vec::new();
    for run in &runs {
        for a in ctx.store.attempts(run.id).await.unwrap() {
            attempts += 1;
            *by_status.entry(a.status.to_string()).or_default() += 1;
            let key = (a.run_id.to_string(), a.node.clone(), a.attempt as u32);
            if a.status == "succeeded" && !executed.contains_key(&key) {
                problems.push(format!(
                    "attempt {key:?} succeeded without running its script"
                ));
            }
            if a.status == "failed" {
                problems.push(format!("attempt {key:?} failed: {:?}", a.error));
            }
            if a.status == "succeeded" {
                produced.push((a.run_id, a.node.clone(), a.attempt as u32));
            }
            recorded.insert(key);
        }
    }
    let unrecorded: Vec<_> = executed.keys().filter(|k| !recorded.contains(*k)).collect();
    if !unrecorded.is_empty() {
        problems.push(format!(
            "executions without a recorded attempt: {unrecorded:?}"
        ));
    }
    let interrupted = by_status.get("interrupted").copied().unwrap_or(0);

    // Every artifact downloads from either ingest replica, though neither ran a node.
    for (run, node, attempt) in &produced {
        for ingest in ["ingest", "ingest-2"] {
            match ctx.artifact(ingest, &token, *run, node, *attempt).await {
                Ok(text) if text == artifact_text(*run, node) => {}
                Ok(text) => problems.push(format!(
                    "{ingest} served {node}#{attempt}'s {ARTIFACT} of run {run} as {text:?}"
                )),
                Err(e) => problems.push(format!(
                    "{ingest} did not serve {node}#{attempt}'s {ARTIFACT} of run {run}: {e}"
                )),
            }
        }
    }

    // One approval card per gate attempt, each posted once (edits are updates, not posts),
    // each showing the decision in the end.
    let mut posts: BTreeMap<String, u32> = BTreeMap::new();
    for post in slack.calls_of("chat.postMessage") {
        let key = post["metadata"]["event_payload"]["key"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        *posts.entry(key).or_default() += 1;
    }
    let reposted: Vec<_> = posts.iter().filter(|(_, n)| **n > 1).collect();
    if !reposted.is_empty() {
        problems.push(format!("cards posted more than once: {reposted:?}"));
    }
    for run in &runs {
        let state: Value = serde_json::from_str(&run.state).unwrap();
        let attempt = state["nodes"][GATE]["attempt"].as_u64().unwrap_or(0);
        let wanted: Vec<String> = (1..=attempt)
            .map(|a| format!("card:{}/{GATE}/{a}:", run.id))
            .collect();
        for card in &wanted {
            let found = posts.keys().filter(|k| k.starts_with(card)).count();
            if found != 1 {
                problems.push(format!("{found} cards for {card}"));
            }
        }
    }
    let cards = posts.keys().filter(|k| k.starts_with("card:")).count();
    for (sop, channel) in SOPS {
        let wanted = runs.iter().filter(|r| r.sop == sop).count();
        let shown = slack.messages(channel);
        let decided = shown
            .iter()
            .filter(|m| m.blocks.to_string().contains("Approved by ana"))
            .count();
        if shown.len() != wanted || decided != wanted {
            problems.push(format!(
                "{} messages in {channel}, {decided} of them showing the approval, for {wanted} runs of {sop}",
                shown.len()
            ));
        }
    }

    // Nothing left unacknowledged, unsent or parked.
    let backlogs = ctx.backlogs().await;
    let unacked = match &backlogs {
        Ok(b) => b
            .iter()
            .map(|c| c.pending + c.ack_pending as u64)
            .sum::<u64>(),
        Err(e) => {
            problems.push(format!("reading the consumers: {e}"));
            u64::MAX
        }
    };
    if unacked != 0 {
        problems.push(format!("unacknowledged messages: {backlogs:?}"));
    }
    let unsent = ctx.store.outbox_backlog().await.unwrap();
    if unsent != 0 {
        problems.push(format!("{unsent} outbox rows unsent"));
    }
    let mut parked = 0;
    for consumer in backlogs.iter().flatten() {
        let letters = ctx.store.dead_letters(&consumer.consumer).await.unwrap();
        for letter in &letters {
            problems.push(format!(
                "dead letter of {}: {} ({})",
                letter.consumer, letter.topic, letter.reason
            ));
        }
        parked += letters.len();
    }

    let kills: u32 = chaos.kills.values().sum();
    let per_service = chaos
        .kills
        .iter()
        .map(|(name, n)| format!("{name} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    println!(
        "chaos: seed {seed}, {succeeded} runs succeeded, {kills} kills ({per_service}), NATS restarted {}, \
         {attempts} attempts ({interrupted} retried after an interruption; {by_status:?}), \
         {duplicates} duplicate executions, {} artifacts served by both ingest replicas, {cards} cards, \
         {unacked} unacked, {unsent} unsent, {parked} dead letters; chaos {} s, settled at {} s",
        match chaos.nats_restarts {
            1 => "once".to_owned(),
            n => format!("{n} times"),
        },
        produced.len(),
        chaos_ended.as_secs(),
        settled_after.as_secs(),
    );
    println!("chaos: warnings/errors logged: {}", log_counts(&logs));
    if let Ok(keep) = std::env::var("CHAOS_LOGS") {
        std::fs::create_dir_all(&keep).unwrap();
        for (name, _) in SERVICES {
            let log = format!("{name}.log");
            let _ = std::fs::copy(logs.join(&log), Path::new(&keep).join(&log));
        }
    }
    if !chaos.slow.is_empty() {
        problems.push(format!("not ready 30 s after a restart: {:?}", chaos.slow));
    }
    if !problems.is_empty() {
        panic!(
            "{} problems:\n{}\n{}",
            problems.len(),
            problems.join("\n"),
            explain(&ctx, &logs).await
        );
    }

    drop(Arc::into_inner(ctx));
    db.cleanup().await;
    drop(nats);
}
