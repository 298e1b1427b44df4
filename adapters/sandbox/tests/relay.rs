//! Jobs behind the relay: the script reaches a Unix socket the test serves (as the runner
//! serves its gateway) through 127.0.0.1:PORT, and nothing else. In a Docker container
//! (skipped without Docker unless DOCKER_TESTS=required, as in docker.rs) and in the
//! process sandbox's namespaces (the isolation checks skipped, saying why, only where the
//! kernel refuses user namespaces).
//!
//! The relay binary is `SANDBOX_RELAY` when set (CI builds it once), else built with
//! deploy/sandbox/build-relay.sh.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gatehouse_sandbox::{
    DockerSandbox, Exit, ExitStatus, Forward, Job, JobLabels, LogLine, ProcessSandbox, Profile,
    Relay, Sandbox, SandboxError, SandboxKind, Stream,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const IMAGE: &str = "gatehouse-sandbox:busybox";
/// The port the script connects to.
const PORT: u16 = 18080;
/// What the test's "gateway" answers.
const ANSWER: &str = "hello from the runner";

/// The static relay binary.
fn relay_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            if let Some(path) = std::env::var_os("SANDBOX_RELAY") {
                return PathBuf::from(path);
            }
            let script =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/sandbox/build-relay.sh");
            let output = std::process::Command::new("bash")
                .arg(&script)
                .stderr(std::process::Stdio::inherit())
                .output()
                .unwrap();
            assert!(output.status.success(), "build-relay.sh failed");
            let stdout = String::from_utf8(output.stdout).unwrap();
            // The directory holding the relay and the ACP shim.
            PathBuf::from(stdout.lines().last().unwrap().trim()).join("gatehouse-relay")
        })
        .clone()
}

/// A Unix socket (mode 0666, as the runner makes its own) answering every request with a
/// tiny HTTP response.
fn http_socket(dir: &Path) -> PathBuf {
    let path = dir.join("gateway.sock");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = vec![0; 4096];
                let _ = stream.read(&mut request).await;
                let response = format!(
                    "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{ANSWER}",
                    ANSWER.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    path
}

fn relay_to(socket: &Path) -> Relay {
    Relay {
        binary: relay_binary(),
        forwards: vec![Forward {
            port: PORT,
            socket: socket.to_owned(),
        }],
    }
}

fn job(dir: &Path, run: &str, profile: Profile, script: &str, relay: Relay) -> Job {
    Job {
        script: script.into(),
        env: BTreeMap::from([("GATEHOUSE_RUN_ID".into(), run.into())]),
        workspace: dir.join("workspace"),
        artifacts: dir.join("artifacts"),
        inputs: dir.join("inputs"),
        timeout: Some(Duration::from_secs(60)),
        profile,
        labels: JobLabels {
            run: run.into(),
            node: "relay".into(),
            attempt: 1,
        },
        stdout_tail: 0,
        relay: Some(relay),
        home: None,
    }
}

async fn run(
    sandbox: &impl Sandbox,
    job: &Job,
    cancel: CancellationToken,
) -> (Result<Exit, SandboxError>, Vec<LogLine>) {
    let (tx, mut rx) = mpsc::channel(1024);
    let collector = tokio::spawn(async move {
        let mut lines = Vec::new();
        while let Some(line) = rx.recv().await {
            lines.push(line);
        }
        lines
    });
    let exit = sandbox.run(job, tx, cancel).await;
    (exit, collector.await.unwrap())
}

fn out(lines: &[LogLine], stream: Stream) -> Vec<&str> {
    lines
        .iter()
        .filter(|l| l.stream == stream)
        .map(|l| l.line.as_str())
        .collect()
}

/// A name no other test, parallel or earlier, uses.
fn unique(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("t{}-{nanos:x}-{test}", std::process::id())
}

// ---- Docker ----

/// Docker is optional for a developer, required where DOCKER_TESTS=required (CI).
async fn docker(test: &str) -> Option<DockerSandbox> {
    let why = match DockerSandbox::connect(unique(test)).await {
        Ok(sandbox) => match sandbox.check_image(IMAGE).await {
            Ok(()) => return Some(sandbox),
            Err(e) => e.to_string(),
        },
        Err(e) => e.to_string(),
    };
    if std::env::var("DOCKER_TESTS").as_deref() == Ok("required") {
        panic!("{test}: DOCKER_TESTS=required but Docker cannot be used: {why}");
    }
    eprintln!("{test}: skipped, Docker cannot be used: {why}");
    None
}

/// What a container behind the relay reaches, as user `user` (the default: nobody).
async fn container_reaches_only_the_relay(test: &str, user: Option<&str>) {
    let Some(sandbox) = docker(test).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let socket = http_socket(dir.path());
    let run_id = unique(test);
    let profile = Profile {
        kind: SandboxKind::Docker,
        image: Some(IMAGE.into()),
        user: user.map(str::to_owned),
        ..Profile::default()
    };
    let script = format!(
        r#"
        echo "uid $(id -u)"
        echo "answer $(wget -qO- http://127.0.0.1:{PORT}/)"
        for url in http://1.1.1.1/ http://169.254.169.254/ http://127.0.0.1:4222/ http://127.0.0.1:{other}/; do
            if wget -q -T 3 -O /dev/null "$url" 2>/dev/null; then echo "reached $url"; else echo "refused $url"; fi
        done
        exit 3
        "#,
        other = PORT + 1
    );
    let job = job(dir.path(), &run_id, profile, &script, relay_to(&socket));
    let (exit, lines) = run(&sandbox, &job, CancellationToken::new()).await;
    let _ = sandbox.remove_run_volume(&run_id).await;
    let exit = exit.unwrap();
    let stdout = out(&lines, Stream::Stdout);
    assert_eq!(exit.status, ExitStatus::Exited(3), "{lines:?}");
    assert!(
        stdout.contains(&format!("answer {ANSWER}").as_str()),
        "{lines:?}"
    );
    if let Some(user) = user {
        let uid = user.split(':').next().unwrap();
        assert!(stdout.contains(&format!("uid {uid}").as_str()), "{lines:?}");
    }
    let reached: Vec<_> = stdout.iter().filter(|l| l.starts_with("reached")).collect();
    assert!(reached.is_empty(), "escaped the relay: {reached:?}");
    assert_eq!(
        stdout.iter().filter(|l| l.starts_with("refused")).count(),
        4,
        "{lines:?}"
    );
}

#[tokio::test]
async fn a_container_reaches_the_socket_through_the_relay_and_nothing_else() {
    container_reaches_only_the_relay("relay-nobody", None).await;
}

#[tokio::test]
async fn a_container_user_1000_reaches_the_read_only_socket_too() {
    container_reaches_only_the_relay("relay-1000", Some("1000:1000")).await;
}

#[tokio::test]
async fn a_container_relay_to_a_missing_socket_is_a_clear_error() {
    let Some(sandbox) = docker("relay-missing").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let profile = Profile {
        kind: SandboxKind::Docker,
        image: Some(IMAGE.into()),
        ..Profile::default()
    };
    let missing = dir.path().join("absent.sock");
    let job = job(dir.path(), "r", profile, "true", relay_to(&missing));
    let (exit, _) = run(&sandbox, &job, CancellationToken::new()).await;
    let error = exit.unwrap_err().to_string();
    assert!(
        error.contains("relay socket") && error.contains("absent.sock"),
        "{error}"
    );
}

// ---- the process sandbox ----

/// The isolation checks, or `false` having said why the kernel refuses them here.
fn namespaces_work(test: &str) -> bool {
    if ProcessSandbox::namespaces_work() {
        return true;
    }
    eprintln!(
        "{test}: isolation checks skipped: the kernel refused user namespaces (unshare --user --net)"
    );
    false
}

#[tokio::test]
async fn a_process_job_reaches_the_socket_through_the_relay_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let socket = http_socket(dir.path());
    // A service on the host's loopback, as the runner's NATS or Postgres would be.
    let host_service = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host_port = host_service.local_addr().unwrap().port();
    let host_service = tokio::spawn(async move {
        while let Ok((mut stream, _)) = host_service.accept().await {
            let _ = stream
                .write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")
                .await;
        }
    });
    let script = format!(
        r#"
        echo "answer $(curl -s -m 5 http://127.0.0.1:{PORT}/)"
        for url in http://1.1.1.1/ http://169.254.169.254/ http://127.0.0.1:{host_port}/; do
            if curl -s -m 3 -o /dev/null "$url"; then echo "reached $url"; else echo "refused $url"; fi
        done
        exit 4
        "#
    );
    let job = job(
        dir.path(),
        "r",
        Profile::default(),
        &script,
        relay_to(&socket),
    );
    let (exit, lines) = run(&ProcessSandbox::default(), &job, CancellationToken::new()).await;
    let exit = exit.unwrap();
    host_service.abort();
    let stdout = out(&lines, Stream::Stdout);
    assert_eq!(exit.status, ExitStatus::Exited(4), "{lines:?}");
    if !namespaces_work("process-relay") {
        assert_eq!(
            out(&lines, Stream::Stderr),
            ["no network isolation: the kernel refused user namespaces"]
        );
        return;
    }
    assert!(
        stdout.contains(&format!("answer {ANSWER}").as_str()),
        "{lines:?}"
    );
    let reached: Vec<_> = stdout.iter().filter(|l| l.starts_with("reached")).collect();
    assert!(reached.is_empty(), "escaped the relay: {reached:?}");
    assert_eq!(
        stdout.iter().filter(|l| l.starts_with("refused")).count(),
        3,
        "{lines:?}"
    );
}

/// The processes whose command line is `sleep <seconds>` (the test's unique duration).
fn sleepers(seconds: &str) -> Vec<i32> {
    let wanted = format!("sleep\0{seconds}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|entry| {
            std::fs::read(entry.path().join("cmdline")).is_ok_and(|c| c == wanted.as_bytes())
        })
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .collect()
}

#[tokio::test]
async fn a_timeout_kills_everything_behind_the_relay_even_what_left_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let socket = http_socket(dir.path());
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let seconds = format!("3600.{nanos}");
    let script =
        format!("sleep {seconds} & setsid sleep {seconds} & echo started; sleep {seconds}");
    let mut job = job(
        dir.path(),
        "r",
        Profile::default(),
        &script,
        relay_to(&socket),
    );
    job.timeout = Some(Duration::from_secs(2));
    let (exit, lines) = run(&ProcessSandbox::default(), &job, CancellationToken::new()).await;
    assert_eq!(exit.unwrap().status, ExitStatus::TimedOut, "{lines:?}");
    assert!(
        out(&lines, Stream::Stdout).contains(&"started"),
        "{lines:?}"
    );
    // The relay is the pid namespace's first process: with it, the kernel kills everything
    // in the namespace, setsid or not. Without namespaces the setsid one escapes (as it
    // always has in the process sandbox): kill it and check the rest.
    let mut left = sleepers(&seconds);
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        left = sleepers(&seconds);
    }
    for &pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    if namespaces_work("process-relay-timeout") {
        assert!(left.is_empty(), "{left:?} outlived the job");
    } else {
        assert!(left.len() <= 1, "{left:?} outlived the job");
    }
}

#[tokio::test]
async fn a_process_job_behind_the_relay_can_be_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let socket = http_socket(dir.path());
    let job = job(
        dir.path(),
        "r",
        Profile::default(),
        "echo up; sleep 60",
        relay_to(&socket),
    );
    let cancel = CancellationToken::new();
    let canceller = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            cancel.cancel();
        })
    };
    let started = std::time::Instant::now();
    let (exit, _) = run(&ProcessSandbox::default(), &job, cancel).await;
    canceller.await.unwrap();
    assert_eq!(exit.unwrap().status, ExitStatus::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn an_invalid_relay_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut relay = relay_to(&dir.path().join("s.sock"));
    relay.forwards.push(relay.forwards[0].clone());
    let marker = dir.path().join("ran");
    let script = format!("touch {}", marker.display());
    let job = job(dir.path(), "r", Profile::default(), &script, relay);
    let (exit, _) = run(&ProcessSandbox::default(), &job, CancellationToken::new()).await;
    let error = exit.unwrap_err().to_string();
    assert!(error.contains("forwards port 18080 twice"), "{error}");
    assert!(!marker.exists());
}
