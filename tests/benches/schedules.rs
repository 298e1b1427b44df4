//! Cron schedules at scale, on Postgres with the services running: `BENCH_SCHEDULES`
//! (default 100,000) schedules of which `BENCH_DUE` (default 1,000) fall due in the same
//! second. Reported: p50/p99/max fire lateness of those (each fire's recorded lateness:
//! handled − due), the process's resident memory, and the time the scheduler took to
//! index every new schedule — each beside the same run with only the due schedules
//! stored (the baseline), measured in the same process.
//!
//! `cargo bench -p gatehouse-tests --bench schedules`. The figures are printed, and written
//! as JSON to the file `GATEHOUSE_BENCH_JSON` names, when set.

use std::time::{Duration, Instant};

use chrono::Utc;
use futures::StreamExt;
use gatehouse_store::{ScheduleRow, Store};
use gatehouse_tests::latencies::write_figures;
use gatehouse_tests::{Backend, Gatehouse, TestDb};
use serde_json::{Value, json};

const WAITS: &str = "name: waits\nnodes:\n  ask: { kind: gate, approvers: [ana] }\n";

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn schedule(name: String, cron: String) -> ScheduleRow {
    let now = Utc::now();
    ScheduleRow {
        name,
        cron,
        timezone: "UTC".into(),
        sop: "waits".into(),
        params: "{}".into(),
        overlap: gatehouse_schedule::Overlap::Skip,
        catchup_window_ms: 3_600_000,
        jitter_ms: 0,
        starts_ms: None,
        ends_ms: None,
        paused: false,
        pause_note: None,
        source: "api".into(),
        owner: "admin".into(),
        project: None,
        since_ms: now.timestamp_millis(),
        next_due_ms: Some(0),
        revision: 0,
        created_at: now,
        updated_at: now,
    }
}

async fn insert(store: &Store, rows: impl Iterator<Item = ScheduleRow>) {
    futures::stream::iter(rows)
        .map(|row| async move { store.insert_schedule(&row).await.expect("insert") })
        .buffer_unordered(32)
        .for_each(|_| async {})
        .await;
}

/// Waits until the scheduler has computed when every schedule is next due.
async fn indexed(store: &Store) {
    loop {
        let pending = store.due_schedules(0, 1).await.expect("due");
        if pending.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

struct Figures {
    index: Duration,
    min: i64,
    p50: i64,
    p99: i64,
    max: i64,
    rss_idle_kib: u64,
    rss_after_kib: u64,
}

impl Figures {
    /// The figures of a scenario with `schedules` schedules stored.
    fn json(&self, schedules: usize) -> Value {
        json!({
            "schedules": schedules,
            "lateness_ms": { "min": self.min, "p50": self.p50, "p99": self.p99, "max": self.max },
            "index_s": self.index.as_secs_f64(),
            "rss_idle_mib": rounded_mib(self.rss_idle_kib),
            "rss_after_firing_mib": rounded_mib(self.rss_after_kib),
        })
    }
}

/// Kibibytes in mebibytes, to a tenth.
fn rounded_mib(kib: u64) -> f64 {
    (kib as f64 / 1024.0 * 10.0).round() / 10.0
}

async fn scenario(total: usize, due: usize) -> Figures {
    let db = TestDb::new(Backend::Postgres).await;
    let store = db.store.clone();
    let data = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(data.path().join("sops")).expect("mkdir");
    std::fs::write(data.path().join("sops/waits.yaml"), WAITS).expect("write");

    // Idle schedules: yearly, on a day that is never the benchmark's.
    insert(
        &store,
        (0..total - due).map(|i| schedule(format!("idle-{i:06}"), "0 0 1 1 *".into())),
    )
    .await;
    let services = Gatehouse::builder_on(db, data)
        .lease(Duration::from_secs(30))
        .start()
        .await;
    let started = Instant::now();
    indexed(&store).await;
    let index = started.elapsed();

    // The due schedules: one six-field expression for a whole second a little ahead.
    let at = Utc::now() + chrono::Duration::seconds(8);
    let cron = at.format("%S %M %H %d %m *").to_string();
    insert(
        &store,
        (0..due).map(|i| schedule(format!("due-{i:06}"), cron.clone())),
    )
    .await;
    indexed(&store).await;
    assert!(
        Utc::now() < at,
        "the due schedules were stored before their time"
    );
    let rss_idle_kib = rss_kib();

    let mut lateness = Vec::with_capacity(due);
    let deadline = Instant::now() + Duration::from_secs(300);
    for i in 0..due {
        let name = format!("due-{i:06}");
        loop {
            if let Some(fire) = store.fires(&name, 1).await.expect("fires").pop() {
                lateness.push(fire.lateness_ms);
                break;
            }
            assert!(Instant::now() < deadline, "{name} never fired");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let rss_after_kib = rss_kib();
    services.stop().await;
    lateness.sort_unstable();
    let pct = |p: f64| lateness[((lateness.len() as f64 * p).ceil() as usize).saturating_sub(1)];
    Figures {
        index,
        min: *lateness.first().unwrap_or(&0),
        p50: pct(0.50),
        p99: pct(0.99),
        max: *lateness.last().unwrap_or(&0),
        rss_idle_kib,
        rss_after_kib,
    }
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--test");
    let (total, due) = if quick {
        (200, 20)
    } else {
        (
            env_usize("BENCH_SCHEDULES", 100_000),
            env_usize("BENCH_DUE", 1_000),
        )
    };
    let start_rss = rss_kib();
    let base = scenario(due, due).await;
    let big = scenario(total, due).await;
    let mib = |kib: u64| kib as f64 / 1024.0;
    println!("schedules: {due} due in the same second, Postgres, services running");
    println!(
        "  lateness with {due} schedules (baseline): min {} ms, p50 {} ms, p99 {} ms, max {} ms",
        base.min, base.p50, base.p99, base.max
    );
    println!(
        "  lateness with {total} schedules: min {} ms, p50 {} ms, p99 {} ms, max {} ms (p99 = {:.2}x the baseline)",
        big.min,
        big.p50,
        big.p99,
        big.max,
        big.p99 as f64 / base.p99.max(1) as f64
    );
    println!(
        "  indexing new schedules (first pass): {due} in {:.2} s; {total} in {:.2} s",
        base.index.as_secs_f64(),
        big.index.as_secs_f64()
    );
    println!(
        "  resident memory: process start {:.1} MiB; {due} schedules {:.1} MiB idle, {:.1} MiB after firing; {total} schedules {:.1} MiB idle, {:.1} MiB after firing ({:.2}x the baseline)",
        mib(start_rss),
        mib(base.rss_idle_kib),
        mib(base.rss_after_kib),
        mib(big.rss_idle_kib),
        mib(big.rss_after_kib),
        big.rss_after_kib as f64 / base.rss_after_kib.max(1) as f64
    );

    let figures = json!({
        "bench": "schedules",
        "backend": "postgres",
        "due": due,
        "rss_start_mib": rounded_mib(start_rss),
        "baseline": base.json(due),
        "at_scale": big.json(total),
        "ratio_p99_lateness": big.p99 as f64 / base.p99.max(1) as f64,
        "ratio_rss_after_firing": big.rss_after_kib as f64 / base.rss_after_kib.max(1) as f64,
    });
    write_figures(&figures);
}
