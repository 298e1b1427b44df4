//! The edge of `gatehouse up` as the internet sees it: the listener's timeouts and
//! connection limit, the bound on unverified webhook bodies, where `/metrics` is served,
//! and the modes of the files it creates. Real processes, raw TCP clients.

mod harness;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use gatehouse_tests::private_nats::free_port;
use harness::Up;
use harness::http::{get, parse};

/// GitHub, Slack and Discord configured, so each webhook route reads and checks bodies.
const WEBHOOKS: &str = "[github]\nwebhook_secrets = [\"s3cret\"]\n[slack]\nsigning_secret = \"sl4ck\"\n[discord]\npublic_key = \"d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a\"\ngateway = false\n";

/// `gatehouse up` with `server` under `[server]` and `extra` after it, with `env` set.
fn start(server: &str, extra: &str, env: &[(&str, &str)]) -> Up {
    env.iter()
        .fold(Up::builder(), |up, (key, value)| up.env(key, value))
        .config(&format!("[server]\nsop_dirs = []\n{server}\n{extra}"))
        .start()
}

/// Reads until the server closes the connection: what it said, and when it closed. A
/// reset counts as closed.
fn until_closed(stream: &mut TcpStream) -> (String, Instant) {
    let mut said = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => said.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {
                panic!("the server kept the connection open for 30 s")
            }
            Err(_) => break,
        }
    }
    (String::from_utf8_lossy(&said).into_owned(), Instant::now())
}

/// How late a cut may come after its timeout on a loaded test machine.
const SLACK: Duration = Duration::from_millis(2500);

#[test]
fn a_client_that_stalls_in_its_request_line_is_cut_after_header_timeout() {
    let up = start("header_timeout = \"1s\"", WEBHOOKS, &[]);
    let mut half = up.connect();
    let start = Instant::now();
    half.write_all(b"POST /webhooks/github HT").unwrap();
    let (_, closed) = until_closed(&mut half);
    let took = closed - start;
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(1) + SLACK,
        "cut after {took:?}"
    );
    // One that sends nothing at all is cut too (before any request, HTTP/1 or HTTP/2).
    let mut silent = up.connect();
    let start = Instant::now();
    let (_, closed) = until_closed(&mut silent);
    let took = closed - start;
    assert!(took < Duration::from_secs(1) + SLACK, "cut after {took:?}");
    // The listener still answers.
    assert_eq!(up.get("/healthz", None).unwrap().0, 200);
}

#[test]
fn a_client_that_trickles_its_body_is_cut_after_body_timeout() {
    let up = start("body_timeout = \"2s\"", WEBHOOKS, &[]);
    let mut slow = up.connect();
    slow.set_nodelay(true).unwrap();
    let start = Instant::now();
    write!(
        slow,
        "POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: ping\r\nX-GitHub-Delivery: d-1\r\nContent-Length: 1000\r\n\r\n"
    )
    .unwrap();
    // A byte every 100 ms: never quiet for long, but 1000 bytes would take 100 s.
    let mut writer = slow.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        for _ in 0..1000 {
            if writer.write_all(b" ").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let (said, closed) = until_closed(&mut slow);
    let took = closed - start;
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(2) + SLACK,
        "cut after {took:?}"
    );
    assert_eq!(parse(&said).0, 408, "{said}");
    trickle.join().unwrap();
}

#[test]
fn a_kept_alive_connection_that_goes_quiet_is_closed() {
    let up = start("header_timeout = \"1s\"\nidle_timeout = \"1s\"", "", &[]);
    let mut kept = up.connect();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 1024];
    let n = kept.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let start = Instant::now();
    let (_, closed) = until_closed(&mut kept);
    assert!(closed - start < Duration::from_secs(1) + SLACK);
}

#[test]
fn past_max_connections_new_connections_wait_until_one_closes() {
    let up = start("header_timeout = \"30s\"\nmax_connections = 3", "", &[]);
    let held: Vec<TcpStream> = (0..3).map(|_| up.connect()).collect();
    // Accepted by the kernel, not by Gatehouse: the request is not answered meanwhile.
    let mut waiting = up.connect();
    waiting
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    waiting
        .set_read_timeout(Some(Duration::from_millis(700)))
        .unwrap();
    let mut buf = [0u8; 256];
    let early = waiting.read(&mut buf);
    assert!(
        matches!(&early, Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut),
        "answered past the limit: {early:?}"
    );
    drop(held);
    waiting
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let (said, _) = until_closed(&mut waiting);
    assert_eq!(parse(&said).0, 200, "{said}");
}

#[test]
fn at_sigterm_a_request_in_flight_is_answered() {
    let mut up = start("body_timeout = \"20s\"", WEBHOOKS, &[]);
    let mut slow = up.connect();
    write!(
        slow,
        "POST /webhooks/github HTTP/1.1\r\nHost: x\r\nX-GitHub-Event: ping\r\nX-GitHub-Delivery: d-1\r\nContent-Length: 4\r\n\r\n{{"
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let pid = up.pid();
    Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    slow.write_all(b"  }").unwrap();
    let (said, _) = until_closed(&mut slow);
    // Unsigned: 401, but answered.
    assert_eq!(parse(&said).0, 401, "{said}");
    let _ = up.terminate(Duration::from_secs(20));
}

/// Resident memory of `pid` in KiB: now (`VmRSS`) and at its peak (`VmHWM`).
fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Posts `total` bytes of nothing in particular, unsigned and chunked (so only reading
/// can tell how large it is), as fast as the server takes them; returns the status the
/// server answered with (0: none, the connection was cut) and how long that took.
fn flood(port: u16, path: &str, total: usize, go: &std::sync::Barrier) -> (u16, Duration) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    let path = path.to_owned();
    go.wait();
    let start = Instant::now();
    let sender = std::thread::spawn(move || {
        let chunk = vec![b'x'; 64 * 1024];
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-GitHub-Event: ping\r\nX-GitHub-Delivery: flood\r\nTransfer-Encoding: chunked\r\n\r\n"
        );
        if writer.write_all(head.as_bytes()).is_err() {
            return;
        }
        let mut sent = 0;
        while sent < total {
            let frame = [format!("{:x}\r\n", chunk.len()).as_bytes(), &chunk, b"\r\n"].concat();
            if writer.write_all(&frame).is_err() {
                return;
            }
            sent += chunk.len();
        }
        let _ = writer.write_all(b"0\r\n\r\n");
    });
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => line.push(byte[0]),
            _ => break,
        }
    }
    let took = start.elapsed();
    let _ = stream.shutdown(std::net::Shutdown::Both);
    let _ = sender.join();
    (parse(&String::from_utf8_lossy(&line)).0, took)
}

#[test]
fn unsigned_floods_hold_no_more_than_the_documented_body_memory() {
    let up = start("", WEBHOOKS, &[]);
    let routes = [
        "/webhooks/github",
        "/webhooks/slack/events",
        "/webhooks/discord/interactions",
    ];
    // Warm up every route (allocator arenas, lazy statics) before the baseline.
    for route in routes {
        let go = std::sync::Barrier::new(1);
        flood(up.port(), route, 64 * 1024, &go);
    }
    let pid = up.pid();
    // Reset the peak, so VmHWM is the peak of the flood alone.
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
    let (baseline, _) = memory_kib(pid);
    let go = std::sync::Arc::new(std::sync::Barrier::new(40));
    let posts: Vec<_> = (0..40)
        .map(|i| {
            let (port, route, go) = (up.port(), routes[i % routes.len()], go.clone());
            std::thread::spawn(move || flood(port, route, 25 * 1024 * 1024, &go))
        })
        .collect();
    let answers: Vec<(u16, Duration)> = posts.into_iter().map(|p| p.join().unwrap()).collect();
    let (_, peak) = memory_kib(pid);
    let grew_mib = peak.saturating_sub(baseline) as f64 / 1024.0;
    // docs/security.md: max_unverified_bodies (16) × the largest max_body_bytes
    // (GitHub's 5 MiB) = 80 MiB of body bytes.
    let bound_mib = 16.0 * 5.0;
    let busy = answers.iter().filter(|(s, _)| *s == 503).count();
    let too_large = answers.iter().filter(|(s, _)| *s == 413).count();
    let slowest = answers.iter().map(|(_, t)| *t).max().unwrap();
    eprintln!(
        "40 unsigned 25 MiB posts: resident memory {baseline} KiB → peak {peak} KiB (+{grew_mib:.1} MiB, bound {bound_mib} MiB); {busy} × 503, {too_large} × 413; slowest answer {slowest:?}"
    );
    assert!(
        grew_mib <= bound_mib,
        "resident memory grew by {grew_mib:.1} MiB, more than {bound_mib} MiB"
    );
    assert_eq!(
        busy + too_large,
        40,
        "every post is refused unread (503) or at the limit (413): {answers:?}"
    );
    assert!(slowest < Duration::from_secs(10), "{answers:?}");
    // Nothing was stored, and the webhooks still answer.
    assert_eq!(up.get("/healthz", None).unwrap().0, 200);
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn the_data_directory_and_the_database_are_the_users_alone() {
    let up = start("", "", &[]);
    let data = up.data_dir();
    assert_eq!(mode(&data), 0o700, "{}", data.display());
    for file in [
        "gatehouse.db",
        "gatehouse.db-wal",
        "gatehouse.db-shm",
        "admin.token",
    ] {
        assert_eq!(mode(&data.join(file)), 0o600, "{file}");
    }
}

#[test]
fn metrics_can_live_on_a_listener_of_their_own() {
    let metrics_port = free_port();
    let up = start(
        &format!("metrics_listen = \"127.0.0.1:{metrics_port}\""),
        "",
        &[],
    );
    assert_eq!(up.get("/metrics", None).unwrap().0, 404);
    let (status, text) = get(metrics_port, "/metrics", None).unwrap();
    assert_eq!(status, 200);
    assert!(text.contains("gatehouse_"), "{text}");
    // Only metrics there.
    assert_eq!(get(metrics_port, "/readyz", None).unwrap().0, 404);
    assert_eq!(up.get("/readyz", None).unwrap().0, 200);
}

#[test]
fn readyz_says_when_the_blob_store_cannot_be_written() {
    let up = start("", "", &[]);
    let (blobs, away) = (
        up.data_dir().join("blobs"),
        up.data_dir().join("blobs.away"),
    );
    std::fs::rename(&blobs, &away).unwrap();
    std::fs::write(&blobs, "not a directory").unwrap();
    let (status, why) = up.get("/readyz", None).unwrap();
    assert_eq!(status, 503, "{why}");
    assert!(why.starts_with("blob store: creating "), "{why}");

    std::fs::remove_file(&blobs).unwrap();
    std::fs::rename(&away, &blobs).unwrap();
    assert_eq!(up.get("/readyz", None).unwrap().0, 200);
}

#[test]
fn metrics_can_require_a_token() {
    let up = start(
        "metrics_token = { env = \"METRICS_TOKEN\" }",
        "",
        &[("METRICS_TOKEN", "scrape-me")],
    );
    assert_eq!(up.get("/metrics", None).unwrap().0, 401);
    assert_eq!(up.get("/metrics", Some("scrape-you")).unwrap().0, 401);
    let (status, text) = up.get("/metrics", Some("scrape-me")).unwrap();
    assert_eq!(status, 200);
    assert!(text.contains("gatehouse_"), "{text}");
    // The probes stay open.
    assert_eq!(up.get("/readyz", None).unwrap().0, 200);
}

#[test]
fn config_check_and_logs_hide_the_passwords_in_urls() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gatehouse.toml"),
        format!(
            "[server]\ndatabase_url = \"postgres://gatehouse:s3cret@127.0.0.1:{}/gatehouse\"\nnats_url = \"nats://alice:s3cret@127.0.0.1:{}\"\n",
            free_port(),
            free_port()
        ),
    )
    .unwrap();
    let check = harness::process::gatehouse()
        .args(["config", "check"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{shown}");
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(
        shown.contains("postgres://gatehouse:****@127.0.0.1:"),
        "{shown}"
    );
    assert!(shown.contains("nats://alice:****@127.0.0.1:"), "{shown}");

    // `up` on the embedded database and an unreachable NATS: its retries say where, not
    // the password.
    let config = format!(
        "[server]\nsop_dirs = []\nnats_url = \"nats://alice:s3cret@127.0.0.1:{}\"\n",
        free_port()
    );
    let mut up = Up::builder()
        .dir(dir)
        .config(&config)
        .stderr_piped()
        .spawn();
    let stderr = std::io::BufReader::new(up.take_stderr());
    let (lines, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in stderr.lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let mut logs = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !logs.contains("NATS unreachable") && Instant::now() < deadline {
        if let Ok(line) = seen.recv_timeout(Duration::from_millis(100)) {
            logs.push_str(&line);
            logs.push('\n');
        }
    }
    up.kill_9();
    assert!(logs.contains("NATS unreachable"), "{logs}");
    assert!(logs.contains("alice:****@127.0.0.1"), "{logs}");
    assert!(!logs.contains("s3cret"), "{logs}");
}
