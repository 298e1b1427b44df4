//! The console's pages rendered by the whole Gatehouse on Postgres (ingest on loopback
//! HTTP, scheduler and runner in the process), signed in as a lead through a login link:
//! - `GET /runs/{id}`: a live run of a 20-node SOP (a first script, four parallel branches
//!   of four scripts, a join, a gate waiting for another group, a last script) whose 18
//!   scripts wrote about 1 MiB of output that the runner stored in `node_logs`;
//! - `GET /`: the inbox with 200 runs waiting at a gate the signed-in person may decide
//!   (each a card with its decision form), requested by someone else.
//!
//! Baseline: `GET /static/console.css`, a file compiled into the binary served through the
//! same listener, router and middleware. All are sampled interleaved (the order rotating)
//! over one keep-alive connection, each timed from sending the request to the body read
//! whole; the first answers are checked (200, 20 node sections and the log tail, 200 gate
//! cards with their forms) so an error page or a sign-in redirect cannot be measured.
//!
//! Beside them, to see where the time goes: `GET /api/v1/runs/{id}` (the run page's reads
//! as JSON), `GET /runs/{id}/graph.svg` (the session, the run and its SVG graph),
//! `GET /api/v1/gates` (the inbox's gate scan as JSON), each page's store reads issued one
//! after another from the bench (each read timed too), and the inbox's CPU work on the
//! runs it scanned (decoding each state and the trial decision that decides whether a
//! card gets its buttons).
//!
//! `cargo bench -p gatehouse-tests --bench console` (needs the machine's Postgres).
//! `GATEHOUSE_BENCH_SAMPLES` (default 200) sets the samples of each, `GATEHOUSE_BENCH_WARMUP`
//! (default 30) the rounds before them, `GATEHOUSE_BENCH_WAITING` (default 200) the runs
//! waiting at a gate. Figures are printed, and written as JSON to the file
//! `GATEHOUSE_BENCH_JSON` names, when set.

use std::time::{Duration, Instant};

use gatehouse_engine::{Decision, Input, RunState, apply};
use gatehouse_events::RunStatus;
use gatehouse_ingest::{BOOTSTRAP_ADMIN, Scope, hash_token};
use gatehouse_tests::latencies::Latencies;
use gatehouse_tests::latencies::write_figures;
use gatehouse_tests::{Backend, Gatehouse, person};
use reqwest::header::{AUTHORIZATION, COOKIE};
use serde_json::{Value, json};
use uuid::Uuid;

/// How long the setup may take before the bench gives up.
const PATIENCE: Duration = Duration::from_secs(300);
/// Lines each script prints, of about 90 bytes: 18 scripts make about 1 MiB.
const LINES: usize = 630;
/// The four parallel branches of the big SOP.
const BRANCHES: [char; 4] = ['a', 'b', 'c', 'd'];

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A script printing `LINES` lines of about 90 bytes, every 25th to stderr, with shell
/// builtins only.
fn chatty(node: &str) -> String {
    let filler = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor";
    format!(
        "'i=0; while [ $i -lt {LINES} ]; do if [ $((i % 25)) -eq 24 ]; then printf \"{node} line %05d: warning %s\\n\" $i \"{filler}\" >&2; else printf \"{node} line %05d: %s\\n\" $i \"{filler}\"; fi; i=$((i+1)); done'"
    )
}

/// 20 nodes: `start`, branches `a1..a4` to `d1..d4`, `join`, the gate `review` (for
/// `group:ops`, so the run page offers the lead no decision) and `ship`.
fn big_sop() -> String {
    let mut yaml = String::from("name: big\ntitle: Twenty nodes\nnodes:\n");
    yaml.push_str(&format!(
        "  start: {{ kind: script, run: {} }}\n",
        chatty("start")
    ));
    for b in BRANCHES {
        for i in 1..=4 {
            let needs = if i == 1 {
                "start".to_owned()
            } else {
                format!("{b}{}", i - 1)
            };
            let node = format!("{b}{i}");
            yaml.push_str(&format!(
                "  {node}: {{ kind: script, needs: [{needs}], run: {} }}\n",
                chatty(&node)
            ));
        }
    }
    yaml.push_str(&format!(
        "  join: {{ kind: script, needs: [a4, b4, c4, d4], run: {} }}\n",
        chatty("join")
    ));
    yaml.push_str("  review: { kind: gate, needs: [join], approvers: [group:ops] }\n");
    yaml.push_str("  ship: { kind: script, needs: [review], run: 'echo shipped' }\n");
    yaml
}

/// A gate alone, for the leads.
const ASK: &str =
    "name: ask\ntitle: Sign-off\nnodes:\n  approve: { kind: gate, approvers: [group:leads] }\n";

/// How this bench prints a figure.
trait Line {
    fn line(&self, name: &str, baseline: Option<&Latencies>) -> String;
}

impl Line for Latencies {
    fn line(&self, name: &str, baseline: Option<&Latencies>) -> String {
        let ratio = baseline
            .map(|b| {
                format!(
                    " {:>8.1}× {:>8.1}×",
                    self.p50() / b.p50(),
                    self.p99() / b.p99()
                )
            })
            .unwrap_or_default();
        format!(
            "  {name:<50} {:>9.3} {:>9.3}{ratio}",
            self.p50(),
            self.p99()
        )
    }
}

/// One thing sampled.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Probe {
    Static,
    RunPage,
    Inbox,
    ApiRun,
    RunGraph,
    RunStoreReads,
    ApiGates,
    InboxStoreReads,
    InboxCpu,
}

const PROBES: [Probe; 9] = [
    Probe::Static,
    Probe::RunPage,
    Probe::Inbox,
    Probe::ApiRun,
    Probe::RunGraph,
    Probe::RunStoreReads,
    Probe::ApiGates,
    Probe::InboxStoreReads,
    Probe::InboxCpu,
];

/// The time of each store read of a sequence, by name.
type Reads = Vec<(&'static str, Duration)>;

/// Awaits `read`, noting its time under `name`.
async fn timed<T>(reads: &mut Reads, name: &'static str, read: impl Future<Output = T>) -> T {
    let begun = Instant::now();
    let value = read.await;
    reads.push((name, begun.elapsed()));
    value
}

/// What the bench talks to.
struct Bench<'a> {
    gh: &'a Gatehouse,
    http: reqwest::Client,
    cookie: String,
    /// The session secret, for the store's session lookup.
    secret: String,
    admin: String,
    run: Uuid,
}

impl Bench<'_> {
    /// `GET path` on the console (signed in) or the API (as the administrator): the time
    /// to the last byte, and the body.
    async fn get(&self, path: &str, api: bool) -> (Duration, String) {
        let request = self.http.get(format!("{}{path}", self.gh.url));
        let request = if api {
            request.header(AUTHORIZATION, format!("Bearer {}", self.admin))
        } else {
            request.header(COOKIE, &self.cookie)
        };
        let begun = Instant::now();
        let response = request.send().await.expect("ingest answers");
        let status = response.status();
        let body = response.text().await.expect("a body");
        let took = begun.elapsed();
        assert_eq!(status.as_u16(), 200, "GET {path} answered {status}: {body}");
        (took, body)
    }

    /// The session lookup every console page begins with.
    async fn viewer_reads(&self, reads: &mut Reads) {
        let store = &self.gh.db.store;
        let hash = hash_token(&self.secret);
        let session = timed(reads, "session", store.session_by_hash(&hash)).await;
        assert!(session.expect("store").is_some(), "the session is stored");
        timed(reads, "people", store.people()).await.expect("store");
    }

    /// The store reads the run page makes, one after another as it does.
    async fn run_store_reads(&self) -> Reads {
        let (store, id) = (&self.gh.db.store, self.run);
        let mut reads = Reads::new();
        self.viewer_reads(&mut reads).await;
        timed(&mut reads, "decisions", store.decisions(id))
            .await
            .expect("store");
        timed(&mut reads, "run", store.run(id))
            .await
            .expect("store");
        timed(&mut reads, "attempts", store.attempts(id))
            .await
            .expect("store");
        timed(&mut reads, "tool calls", store.tool_calls(id))
            .await
            .expect("store");
        timed(&mut reads, "artifacts", store.artifacts(id))
            .await
            .expect("store");
        timed(&mut reads, "usage", store.usage_of_run(id))
            .await
            .expect("store");
        let tail = timed(&mut reads, "log tail", store.logs_before(id, None, 200))
            .await
            .expect("store");
        assert_eq!(tail.len(), 200);
        reads
    }

    /// The store reads the inbox makes, one after another as it does.
    async fn inbox_store_reads(&self) -> Reads {
        let store = &self.gh.db.store;
        let mut reads = Reads::new();
        self.viewer_reads(&mut reads).await;
        let mut waiting = Vec::new();
        for (name, status) in [
            ("waiting runs", RunStatus::Waiting),
            ("running runs", RunStatus::Running),
            ("paused runs", RunStatus::Paused),
        ] {
            let rows = timed(&mut reads, name, store.all_runs_with_status(status))
                .await
                .expect("store");
            waiting.extend(rows.iter().map(|r| r.id));
        }
        // How long each gate waited, and its evidence: once for the whole page.
        timed(&mut reads, "finishes", store.node_finishes(&waiting))
            .await
            .expect("store");
        timed(&mut reads, "evidence", store.artifacts_of_runs(&waiting))
            .await
            .expect("store");
        timed(
            &mut reads,
            "my runs",
            store.runs_requested_by("ana", &[], 20),
        )
        .await
        .expect("store");
        timed(
            &mut reads,
            "my conversations",
            store.conversations_started_by("ana", &[], 20),
        )
        .await
        .expect("store");
        reads
    }

    /// What the inbox does with the waiting runs once read: each state decoded, and each
    /// waiting gate's trial decision by the viewer on a copy of the state. Returns the
    /// time and the gates the viewer may decide.
    async fn inbox_cpu(&self) -> (Duration, usize) {
        let store = &self.gh.db.store;
        let rows = store.runs(Some("waiting"), &[], 500).await.expect("store");
        let mut sops = Vec::with_capacity(rows.len());
        for row in &rows {
            sops.push(
                store
                    .sop_definition(&row.sop_version)
                    .await
                    .expect("store")
                    .expect("stored"),
            );
        }
        let groups = vec!["leads".to_owned()];
        let begun = Instant::now();
        let mut mine = 0;
        for (row, sop) in rows.iter().zip(&sops) {
            let run: RunState = serde_json::from_str(&row.state).expect("a state");
            for (node, n) in &run.nodes {
                if n.status != gatehouse_events::NodeStatus::WaitingApproval {
                    continue;
                }
                let input = Input::Decide {
                    node: node.clone(),
                    attempt: n.attempt,
                    decision: Decision::Approve,
                    comment: None,
                    person: "ana".into(),
                    groups: groups.clone(),
                };
                if apply(sop, &mut run.clone(), input).is_ok() {
                    mine += 1;
                }
            }
        }
        (begun.elapsed(), mine)
    }

    /// One sample: its time, and the time of each store read in it.
    async fn sample(&self, probe: Probe) -> (Duration, Reads) {
        let whole = |reads: Reads| (reads.iter().map(|(_, d)| *d).sum(), reads);
        let id = self.run;
        match probe {
            Probe::Static => (self.get("/static/console.css", false).await.0, vec![]),
            Probe::RunPage => (self.get(&format!("/runs/{id}"), false).await.0, vec![]),
            Probe::Inbox => (self.get("/", false).await.0, vec![]),
            Probe::ApiRun => (
                self.get(&format!("/api/v1/runs/{id}"), true).await.0,
                vec![],
            ),
            Probe::RunGraph => (
                self.get(&format!("/runs/{id}/graph.svg"), false).await.0,
                vec![],
            ),
            Probe::RunStoreReads => whole(self.run_store_reads().await),
            Probe::ApiGates => (self.get("/api/v1/gates", true).await.0, vec![]),
            Probe::InboxStoreReads => whole(self.inbox_store_reads().await),
            Probe::InboxCpu => (self.inbox_cpu().await.0, vec![]),
        }
    }
}

/// Waits for `f` to be true, polling.
async fn until<F: Future<Output = bool>>(what: &str, mut f: impl FnMut() -> F) {
    let deadline = Instant::now() + PATIENCE;
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn count(html: &str, what: &str) -> usize {
    html.matches(what).count()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `cargo test --benches` runs this with --test too; keep that quick.
    let quick = std::env::args().any(|a| a == "--test");
    let (samples, warmup, waiting) = if quick {
        (5, 2, 10)
    } else {
        (
            env_usize("GATEHOUSE_BENCH_SAMPLES", 200),
            env_usize("GATEHOUSE_BENCH_WARMUP", 30),
            env_usize("GATEHOUSE_BENCH_WAITING", 200),
        )
    };
    let started = Instant::now();

    let gh = Gatehouse::builder(Backend::Postgres)
        .sops(&[("big", &big_sop()), ("ask", ASK)])
        .people(vec![
            person("ana", &["leads"]),
            person("bob", &[]),
            person("olga", &["ops"]),
        ])
        .start()
        .await;
    let store = &gh.db.store;
    let run = gh.request("big").await;
    let asks = gatehouse_tests::request_runs(store, "ask", waiting, "bob").await;
    let last = *asks.last().expect("at least one run");
    until("the big run to wait at its gate", || async {
        store
            .run(run)
            .await
            .expect("store")
            .is_some_and(|r| r.status == "waiting")
    })
    .await;
    // Requests are applied in order, so the last one waiting means all are.
    until("the gate runs to wait", || async {
        store
            .run(last)
            .await
            .expect("store")
            .is_some_and(|r| r.status == "waiting")
    })
    .await;
    let lines = store.logs(run, 0, 1_000_000).await.expect("store");
    let output_bytes: usize = lines.iter().map(|l| l.line.len() + 1).sum();
    let scripts = 2 + 4 * BRANCHES.len();
    let printed = lines
        .iter()
        .filter(|l| l.line.starts_with(&format!("{} line ", l.node)))
        .count();
    assert_eq!(printed, scripts * LINES, "every line printed is stored");
    let setup = started.elapsed();

    let browser = gh.signed_in("ana").await;
    let cookie = browser.cookie.clone().expect("a session cookie");
    let secret = cookie
        .split_once('=')
        .map(|(_, v)| v.to_owned())
        .expect("name=value");
    let bench = Bench {
        gh: &gh,
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("a client"),
        cookie,
        secret,
        admin: gh.stored_token(BOOTSTRAP_ADMIN, &Scope::ALL, None).await,
        run,
    };

    // Once: the pages are the real ones, not an error page or a sign-in redirect.
    let (_, run_page) = bench.get(&format!("/runs/{run}"), false).await;
    let (_, inbox) = bench.get("/", false).await;
    let (_, css) = bench.get("/static/console.css", false).await;
    let (_, api_gates) = bench.get("/api/v1/gates", true).await;
    let (_, api_run) = bench.get(&format!("/api/v1/runs/{run}"), true).await;
    let (_, graph) = bench.get(&format!("/runs/{run}/graph.svg"), false).await;
    assert_eq!(
        count(&run_page, "<section class=\"node\""),
        20,
        "20 node sections"
    );
    assert_eq!(count(&run_page, "<span class=\"line"), 200, "the log tail");
    assert!(run_page.contains("data-live="), "the run page is live");
    assert!(
        run_page.contains(&format!("join line {:05}", LINES - 1)),
        "the last line shown"
    );
    assert!(graph.contains("<svg"), "a picture");
    assert_eq!(
        count(&inbox, "<article class=\"gate\""),
        waiting,
        "a card per gate"
    );
    assert_eq!(
        count(&inbox, "value=\"approve\""),
        waiting,
        "a decision form per gate"
    );
    assert!(inbox.contains(&format!(
        "Waiting for you <span class=\"count\">({waiting})"
    )));
    assert!(inbox.contains("1 more gate waits for other people"));
    assert!(css.contains('{'), "a stylesheet");
    let gates: Vec<Value> = serde_json::from_str(&api_gates).expect("JSON");
    assert_eq!(gates.len(), waiting + 1);
    assert_eq!(bench.inbox_cpu().await.1, waiting);

    let mut figures: Vec<Latencies> = PROBES.iter().map(|_| Latencies::new()).collect();
    // Each store read of the two read sequences, in the order made.
    let mut reads: Vec<(Probe, &'static str, Latencies)> = Vec::new();
    let measuring = Instant::now();
    for round in 0..warmup + samples {
        for k in 0..PROBES.len() {
            let i = (round + k) % PROBES.len();
            let (took, each) = bench.sample(PROBES[i]).await;
            if round < warmup {
                continue;
            }
            figures[i].took(took);
            for (name, took) in each {
                match reads
                    .iter_mut()
                    .find(|(p, n, _)| *p == PROBES[i] && *n == name)
                {
                    Some((_, _, l)) => l.took(took),
                    None => {
                        let mut l = Latencies::new();
                        l.took(took);
                        reads.push((PROBES[i], name, l));
                    }
                }
            }
        }
    }
    let measured = measuring.elapsed();
    let of = |p: Probe| &figures[PROBES.iter().position(|&q| q == p).expect("a probe")];
    let (baseline, run_f, inbox_f) = (of(Probe::Static), of(Probe::RunPage), of(Probe::Inbox));
    let reads_of = |p: Probe| {
        reads
            .iter()
            .filter(|(q, _, _)| *q == p)
            .map(|(_, n, l)| (*n, l))
            .collect::<Vec<_>>()
    };
    let each_p50 = |p: Probe| {
        reads_of(p)
            .iter()
            .map(|(n, l)| format!("{n} {:.2}", l.p50()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let each_json = |p: Probe| {
        reads_of(p)
            .iter()
            .map(|(n, l)| (n.to_string(), l.json()))
            .collect::<serde_json::Map<_, _>>()
    };

    drop(browser);
    gh.stop().await;
    let total = started.elapsed();

    println!(
        "console pages on Postgres, one keep-alive connection over loopback, {samples} samples each after {warmup} rounds of warm-up, interleaved; setup {:.1} s, sampling {:.1} s, {:.1} s in all",
        setup.as_secs_f64(),
        measured.as_secs_f64(),
        total.as_secs_f64()
    );
    println!(
        "  run: 20 nodes, {} lines of output in node_logs ({printed} printed by its scripts; {:.2} MiB); inbox: {waiting} gates waiting for the viewer, 1 for others",
        lines.len(),
        output_bytes as f64 / 1048576.0
    );
    println!(
        "  {:<50} {:>9} {:>9} {:>9} {:>9}",
        "", "p50 ms", "p99 ms", "p50 ×", "p99 ×"
    );
    println!(
        "{}",
        baseline.line(
            &format!("GET /static/console.css ({} B, baseline)", css.len()),
            None
        )
    );
    println!(
        "{}",
        run_f.line(
            &format!("GET /runs/{{id}} ({} B)", run_page.len()),
            Some(baseline)
        )
    );
    println!(
        "{}",
        inbox_f.line(&format!("GET / ({} B)", inbox.len()), Some(baseline))
    );
    println!("  the run page, where the time goes:");
    for (probe, label) in [
        (
            Probe::ApiRun,
            format!("GET /api/v1/runs/{{id}} ({} B)", api_run.len()),
        ),
        (
            Probe::RunGraph,
            format!("GET /runs/{{id}}/graph.svg ({} B)", graph.len()),
        ),
        (
            Probe::RunStoreReads,
            format!(
                "its {} store reads, in turn",
                reads_of(Probe::RunStoreReads).len()
            ),
        ),
    ] {
        println!("{}", of(probe).line(&label, Some(baseline)));
    }
    println!("    p50 ms each: {}", each_p50(Probe::RunStoreReads));
    println!("  the inbox, where the time goes:");
    for (probe, label) in [
        (
            Probe::ApiGates,
            format!("GET /api/v1/gates ({} B)", api_gates.len()),
        ),
        (
            Probe::InboxStoreReads,
            format!(
                "its {} store reads, in turn",
                reads_of(Probe::InboxStoreReads).len()
            ),
        ),
        (
            Probe::InboxCpu,
            "decoding the states + trial decisions".to_owned(),
        ),
    ] {
        println!("{}", of(probe).line(&label, Some(baseline)));
    }
    println!("    p50 ms each: {}", each_p50(Probe::InboxStoreReads));

    let ratio = |f: &Latencies| {
        json!({
            "p50": (f.p50() / baseline.p50() * 100.0).round() / 100.0,
            "p99": (f.p99() / baseline.p99() * 100.0).round() / 100.0,
        })
    };
    let figures = json!({
        "bench": "console",
        "backend": "postgres",
        "samples": samples,
        "warmup_rounds": warmup,
        "run_nodes": 20,
        "run_output_lines": lines.len(),
        "run_output_bytes": output_bytes,
        "waiting_gates": waiting,
        "static_ms": baseline.json(),
        "run_page_ms": run_f.json(),
        "inbox_ms": inbox_f.json(),
        "ratio_run_page_to_static": ratio(run_f),
        "ratio_inbox_to_static": ratio(inbox_f),
        "bytes": {
            "static": css.len(),
            "run_page": run_page.len(),
            "inbox": inbox.len(),
            "api_run": api_run.len(),
            "run_graph": graph.len(),
            "api_gates": api_gates.len(),
        },
        "run_page_breakdown_ms": {
            "api_run": of(Probe::ApiRun).json(),
            "graph_svg": of(Probe::RunGraph).json(),
            "store_reads": of(Probe::RunStoreReads).json(),
            "each_store_read": each_json(Probe::RunStoreReads),
        },
        "inbox_breakdown_ms": {
            "api_gates": of(Probe::ApiGates).json(),
            "store_reads": of(Probe::InboxStoreReads).json(),
            "each_store_read": each_json(Probe::InboxStoreReads),
            "decode_and_trial_decisions": of(Probe::InboxCpu).json(),
        },
        "setup_s": setup.as_secs_f64(),
        "total_s": total.as_secs_f64(),
    });
    write_figures(&figures);
}
