//! The Docker sandbox against the real engine, with the image built by
//! deploy/sandbox/build-images.sh. Without an engine each test says why and passes, unless
//! DOCKER_TESTS=required (CI), where that is a failure.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bollard::Docker;
use bytesize::ByteSize;
use gatehouse_sandbox::{
    DockerSandbox, Exit, ExitStatus, Job, JobLabels, LogLine, Mount, ProcessSandbox, Profile,
    ProfileError, Sandbox, SandboxError, SandboxKind, Sandboxes, Stream,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const IMAGE: &str = "gatehouse-sandbox:busybox";

/// What a test runs against: its own owner, run and directories, cleaned up on drop
/// (containers and volumes too, so a failed test leaves nothing behind).
struct Fixture {
    sandbox: DockerSandbox,
    owner: String,
    run: String,
    dir: tempfile::TempDir,
}

/// A fixture, or `None` (having said why) when Docker or the image is not there.
async fn fixture(test: &str) -> Option<Fixture> {
    let owner = unique(test);
    let sandbox = match DockerSandbox::connect(owner.clone()).await {
        Ok(sandbox) => sandbox,
        Err(e) => return skip(test, &e.to_string()),
    };
    if let Err(e) = sandbox.check_image(IMAGE).await {
        return skip(test, &e.to_string());
    }
    Some(Fixture {
        sandbox,
        run: format!("run-{owner}"),
        owner,
        dir: tempfile::tempdir().unwrap(),
    })
}

/// Docker is optional for a developer, required where DOCKER_TESTS=required (CI).
fn skip<T>(test: &str, why: &str) -> Option<T> {
    if std::env::var("DOCKER_TESTS").as_deref() == Ok("required") {
        panic!("{test}: DOCKER_TESTS=required but Docker cannot be used: {why}");
    }
    eprintln!("{test}: skipped, Docker cannot be used: {why}");
    None
}

/// A name no other test, parallel or earlier, uses.
fn unique(test: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("t{}-{nanos:x}-{test}", std::process::id())
}

impl Fixture {
    fn job(&self, node: &str, script: &str) -> Job {
        let dir = self.dir.path();
        Job {
            script: script.into(),
            env: BTreeMap::from([("GATEHOUSE_RUN_ID".into(), self.run.clone())]),
            workspace: dir.join("workspace"),
            artifacts: dir.join("artifacts").join(node),
            inputs: dir.join("inputs").join(node),
            timeout: Some(Duration::from_secs(60)),
            profile: Profile {
                kind: SandboxKind::Docker,
                image: Some(IMAGE.into()),
                ..Profile::default()
            },
            labels: JobLabels {
                run: self.run.clone(),
                node: node.into(),
                attempt: 1,
            },
            stdout_tail: 0,
            relay: None,
            home: None,
        }
    }

    async fn run(&self, job: &Job) -> (Exit, Vec<LogLine>) {
        let (exit, lines) = run(&self.sandbox, job, CancellationToken::new()).await;
        (exit.unwrap(), lines)
    }

    async fn containers(&self) -> usize {
        self.sandbox.containers().await.unwrap().len()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let (owner, run) = (self.owner.clone(), self.run.clone());
        // Drop cannot await; a thread with its own runtime can.
        let cleaned = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let sandbox = DockerSandbox::connect(owner).await?;
                sandbox.reap_orphans().await?;
                sandbox.remove_run_volume(&run).await
            })
        })
        .join();
        if let Ok(Err(e)) = cleaned {
            eprintln!("cleaning up after the test failed: {e}");
        }
    }
}

/// Runs `job`, collecting its lines while it runs.
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

fn docker() -> Docker {
    Docker::connect_with_local_defaults().unwrap()
}

fn running_as_root() -> bool {
    nix::unistd::Uid::effective().is_root()
}

#[tokio::test]
async fn a_script_sees_its_directories_as_an_unprivileged_user_with_only_its_env() {
    let Some(f) = fixture("basics").await else {
        return;
    };
    // SAFETY: nothing else in this test binary reads or writes this variable.
    unsafe { std::env::set_var("GATEHOUSE_TEST_HOST_SECRET", "must-not-leak") };
    let mut job = f.job(
        "basics",
        r#"
        echo out-line; echo err-line >&2
        echo hello > "$GATEHOUSE_WORKSPACE/ws.txt"
        echo art > "$GATEHOUSE_ARTIFACTS/a.txt"
        cat "$GATEHOUSE_INPUTS/in.txt"
        echo "uid $(id -u)"
        echo "pwd $(pwd)"
        touch /etc/x 2>/dev/null && echo root-writable
        touch "$GATEHOUSE_INPUTS/y" 2>/dev/null && echo inputs-writable
        touch /tmp/t && echo tmp-writable
        for name in $(env | cut -d= -f1 | sort); do echo "env $name"; done
        exit 7
        "#,
    );
    job.env.insert("DECLARED".into(), "yes".into());
    std::fs::create_dir_all(&job.inputs).unwrap();
    std::fs::write(job.inputs.join("in.txt"), "from-an-earlier-node\n").unwrap();

    let (exit, lines) = f.run(&job).await;
    assert_eq!(exit.status, ExitStatus::Exited(7));
    assert_eq!(out(&lines, Stream::Stderr), ["err-line"]);
    let stdout = out(&lines, Stream::Stdout);
    let expected_uid = if running_as_root() {
        65534
    } else {
        nix::unistd::Uid::effective().as_raw()
    };
    let env: BTreeSet<&str> = stdout
        .iter()
        .filter_map(|l| l.strip_prefix("env "))
        .collect();
    let others: Vec<&str> = stdout
        .iter()
        .copied()
        .filter(|l| !l.starts_with("env "))
        .collect();
    assert_eq!(
        others,
        [
            "out-line",
            "from-an-earlier-node",
            &format!("uid {expected_uid}"),
            "pwd /workspace",
            "tmp-writable",
        ]
    );
    // HOSTNAME is Docker's, PWD and SHLVL the shell's; nothing comes from the host.
    assert_eq!(
        env,
        BTreeSet::from([
            "DECLARED",
            "GATEHOUSE_ARTIFACTS",
            "GATEHOUSE_INPUTS",
            "GATEHOUSE_RUN_ID",
            "GATEHOUSE_WORKSPACE",
            "HOME",
            "HOSTNAME",
            "PATH",
            "PWD",
            "SHLVL",
        ])
    );
    assert_eq!(
        std::fs::read_to_string(job.workspace.join("ws.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        std::fs::read_to_string(job.artifacts.join("a.txt")).unwrap(),
        "art\n"
    );
    assert_eq!(f.containers().await, 0, "the container is removed");
}

#[tokio::test]
async fn nodes_of_a_run_share_its_workspace_volume_until_it_is_removed() {
    let Some(f) = fixture("volume").await else {
        return;
    };
    let (first, _) = f.run(&f.job("first", "echo state > notes.txt")).await;
    assert!(first.succeeded(), "{first:?}");
    let (second, lines) = f.run(&f.job("second", "cat notes.txt")).await;
    assert!(second.succeeded(), "{second:?}");
    assert_eq!(out(&lines, Stream::Stdout), ["state"]);

    let volume = f.sandbox.run_volume(&f.run);
    let inspected = docker().inspect_volume(&volume).await.unwrap();
    assert_eq!(
        inspected.labels.get("gatehouse.owner"),
        Some(&f.owner),
        "{inspected:?}"
    );
    assert_eq!(inspected.labels.get("gatehouse.run"), Some(&f.run));

    f.sandbox.remove_run_volume(&f.run).await.unwrap();
    assert!(docker().inspect_volume(&volume).await.is_err());
    // The host directory stays; removing twice is fine.
    assert!(f.dir.path().join("workspace/notes.txt").exists());
    f.sandbox.remove_run_volume(&f.run).await.unwrap();
}

#[tokio::test]
async fn network_none_leaves_only_loopback_and_a_network_name_gives_one() {
    let Some(f) = fixture("network").await else {
        return;
    };
    let script = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '";
    let (exit, lines) = f.run(&f.job("none", script)).await;
    assert!(exit.succeeded(), "{exit:?}");
    assert_eq!(out(&lines, Stream::Stdout), ["lo"]);
    let (exit, _) = f
        .run(&f.job("wget", "wget -q -T 2 -O /dev/null http://172.17.0.1/"))
        .await;
    assert_ne!(exit.status, ExitStatus::Exited(0));

    let mut bridged = f.job("bridge", script);
    bridged.profile.network = "bridge".into();
    let (exit, lines) = f.run(&bridged).await;
    assert!(exit.succeeded(), "{exit:?}");
    assert!(out(&lines, Stream::Stdout).contains(&"eth0"), "{lines:?}");
}

#[tokio::test]
async fn a_fork_bomb_hits_the_pids_limit_and_it_is_reported() {
    let Some(f) = fixture("pids").await else {
        return;
    };
    // The bomb burns out quickly; the shell keeps the container up a few seconds after,
    // waiting on a sleep started before it (it could not fork one later).
    let mut job = f.job(
        "bomb",
        "sleep 4 & s=$!; (b() { b | b & }; b) 2>/dev/null; wait $s; exit 1",
    );
    job.profile.pids = Some(32);
    job.timeout = Some(Duration::from_secs(30));
    let (exit, _) = f.run(&job).await;
    assert_eq!(exit.status, ExitStatus::Exited(1));
    assert!(exit.pids_limit_reached, "{exit:?}");

    let (calm, _) = f
        .run(&{
            let mut calm = f.job("calm", "sleep 2");
            calm.profile.pids = Some(32);
            calm
        })
        .await;
    assert!(calm.succeeded());
    assert!(!calm.pids_limit_reached, "{calm:?}");
}

#[tokio::test]
async fn allocating_beyond_the_memory_limit_is_out_of_memory() {
    let Some(f) = fixture("memory").await else {
        return;
    };
    let mut job = f.job(
        "hog",
        "x=$(head -c 100000000 /dev/zero | tr '\\0' a); echo survived",
    );
    job.profile.memory = Some(ByteSize::mib(32));
    let (exit, lines) = f.run(&job).await;
    assert_eq!(exit.status, ExitStatus::OutOfMemory, "{lines:?}");
    assert!(!out(&lines, Stream::Stdout).contains(&"survived"));
}

#[tokio::test]
async fn a_timeout_kills_the_container_and_removes_it() {
    let Some(f) = fixture("timeout").await else {
        return;
    };
    let mut job = f.job("sleeper", "echo started; sleep 300");
    job.timeout = Some(Duration::from_secs(2));
    let started = Instant::now();
    let (exit, lines) = f.run(&job).await;
    assert_eq!(exit.status, ExitStatus::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(10), "{exit:?}");
    assert!(exit.duration >= Duration::from_secs(2));
    assert_eq!(out(&lines, Stream::Stdout), ["started"]);
    assert_eq!(f.containers().await, 0);
}

#[tokio::test]
async fn cancel_kills_the_container_and_removes_it() {
    let Some(f) = fixture("cancel").await else {
        return;
    };
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let (exit, _) = run(&f.sandbox, &f.job("sleeper", "sleep 300"), cancel).await;
    assert_eq!(exit.unwrap().status, ExitStatus::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(f.containers().await, 0);

    // Cancelled before it began: nothing runs at all.
    let cancel = CancellationToken::new();
    cancel.cancel();
    let job = f.job("never", "touch ran");
    let (exit, _) = run(&f.sandbox, &job, cancel).await;
    assert_eq!(exit.unwrap().status, ExitStatus::Cancelled);
    assert!(!job.workspace.join("ran").exists());
}

#[tokio::test]
async fn megabytes_of_output_pass_and_long_lines_are_cut() {
    let Some(f) = fixture("flood").await else {
        return;
    };
    let job = f.job(
        "flood",
        "yes 'a line of output that is about one hundred bytes long, repeated until fifty MB are out' \
         | head -c 50000000; echo; sleep 1; head -c 1000000 /dev/zero | tr '\\0' x; echo; echo end",
    );
    // Lines may be dropped while the receiver is megabytes behind; the pause lets it catch
    // up before the long line and the last one, which must then arrive.
    let (tx, mut rx) = mpsc::channel::<LogLine>(1024);
    // Counts rather than keeps: holding every line would be the test's own memory problem.
    let collector = tokio::spawn(async move {
        let (mut count, mut longest, mut cut, mut last) = (0usize, 0usize, None, String::new());
        while let Some(line) = rx.recv().await {
            count += 1;
            longest = longest.max(line.line.len());
            if line.line.contains("[line cut:") {
                cut = Some(line.line.clone());
            }
            last = line.line;
        }
        (count, longest, cut, last)
    });
    let exit = f
        .sandbox
        .run(&job, tx, CancellationToken::new())
        .await
        .unwrap();
    let (count, longest, cut, last) = collector.await.unwrap();
    assert!(exit.succeeded(), "{exit:?}");
    assert!(count > 1000, "{count} lines");
    let marker = format!(" … [line cut: {} more bytes]", 1_000_000 - 64 * 1024);
    assert!(longest <= 64 * 1024 + marker.len(), "{longest}");
    let cut = cut.unwrap();
    assert!(cut.ends_with(&marker), "{}", &cut[cut.len() - 60..]);
    assert_eq!(last, "end");
}

#[tokio::test]
async fn the_stdout_tail_holds_the_last_bytes() {
    let Some(f) = fixture("tail").await else {
        return;
    };
    let mut job = f.job(
        "agent",
        "seq 1 5000; echo 'to stderr' >&2; printf '{\"tokens\": 42}'",
    );
    job.stdout_tail = 20;
    let (exit, _) = f.run(&job).await;
    assert!(exit.succeeded());
    assert_eq!(exit.stdout_tail, b"\n5000\n{\"tokens\": 42}");
}

#[tokio::test]
async fn a_missing_image_or_impossible_limits_are_clear_errors() {
    let Some(f) = fixture("refused").await else {
        return;
    };
    let mut missing = f.job("missing", "true");
    missing.profile.image = Some("gatehouse-sandbox:no-such-tag".into());
    let started = Instant::now();
    let (err, _) = run(&f.sandbox, &missing, CancellationToken::new()).await;
    let err = err.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        err.to_string(),
        "image `gatehouse-sandbox:no-such-tag` is not on this Docker host; build it with \
         deploy/sandbox/build-images.sh or pull it"
    );

    let mut greedy = f.job("greedy", "true");
    greedy.profile.cpus = Some(64.0);
    let (err, _) = run(&f.sandbox, &greedy, CancellationToken::new()).await;
    match err.unwrap_err() {
        SandboxError::Refused { message } => assert!(message.contains("CPU"), "{message}"),
        other => panic!("expected Docker's refusal, got {other}"),
    }

    let mut lost = f.job("lost", "true");
    lost.profile.network = "gatehouse-no-such-network".into();
    let (err, _) = run(&f.sandbox, &lost, CancellationToken::new()).await;
    match err.unwrap_err() {
        SandboxError::Refused { message } => {
            assert!(message.contains("gatehouse-no-such-network"), "{message}");
        }
        other => panic!("expected Docker's refusal, got {other}"),
    }
    assert_eq!(f.containers().await, 0);
}

#[tokio::test]
async fn the_docker_socket_is_never_mounted_even_through_a_symlink() {
    let Some(f) = fixture("socket").await else {
        return;
    };
    let mut direct = f.job("direct", "true");
    direct.profile.mounts = vec![Mount {
        source: "/var/run/docker.sock".into(),
        target: "/var/run/docker.sock".into(),
    }];
    assert_eq!(
        direct.profile.check(),
        Err(ProfileError::DockerSocket("/var/run/docker.sock".into()))
    );
    let (err, _) = run(&f.sandbox, &direct, CancellationToken::new()).await;
    assert!(
        matches!(
            err,
            Err(SandboxError::Profile(ProfileError::DockerSocket(_)))
        ),
        "{err:?}"
    );

    let socket = Path::new("/var/run/docker.sock");
    if socket.exists() {
        let link: PathBuf = f.dir.path().join("innocent");
        std::os::unix::fs::symlink(socket, &link).unwrap();
        let mut linked = f.job("linked", "true");
        linked.profile.mounts = vec![Mount {
            source: link,
            target: "/innocent".into(),
        }];
        assert_eq!(
            linked.profile.check(),
            Ok(()),
            "a link passes the static check"
        );
        let (err, _) = run(&f.sandbox, &linked, CancellationToken::new()).await;
        assert!(
            matches!(
                err,
                Err(SandboxError::Profile(ProfileError::DockerSocket(_)))
            ),
            "{err:?}"
        );
    }
    assert_eq!(f.containers().await, 0);
}

#[tokio::test]
async fn a_new_sandbox_reaps_what_a_dead_one_left_and_only_that() {
    let Some(mine) = fixture("orphans-mine").await else {
        return;
    };
    let Some(theirs) = fixture("orphans-theirs").await else {
        return;
    };
    let crashed = tokio::spawn({
        let (sandbox, job) = (mine.sandbox.clone(), mine.job("long", "sleep 300"));
        async move {
            let (tx, _rx) = mpsc::channel(16);
            sandbox.run(&job, tx, CancellationToken::new()).await
        }
    });
    let other_cancel = CancellationToken::new();
    let other = tokio::spawn({
        let (sandbox, job, cancel) = (
            theirs.sandbox.clone(),
            theirs.job("long", "sleep 300"),
            other_cancel.clone(),
        );
        async move {
            let (tx, _rx) = mpsc::channel(16);
            sandbox.run(&job, tx, cancel).await
        }
    });
    for fixture in [&mine, &theirs] {
        let deadline = Instant::now() + Duration::from_secs(20);
        while fixture.containers().await == 0 {
            assert!(Instant::now() < deadline, "the container never appeared");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // The runner dies: its future is dropped, the container stays.
    crashed.abort();
    let _ = crashed.await;
    assert_eq!(mine.containers().await, 1, "the orphan is still there");

    let restarted = DockerSandbox::connect(mine.owner.clone()).await.unwrap();
    assert_eq!(restarted.reap_orphans().await.unwrap(), 1);
    assert_eq!(mine.containers().await, 0);
    assert_eq!(restarted.reap_orphans().await.unwrap(), 0);
    assert_eq!(
        theirs.sandbox.containers().await.unwrap(),
        [JobLabels {
            run: theirs.run.clone(),
            node: "long".into(),
            attempt: 1,
        }],
        "another owner's container is left alone"
    );
    other_cancel.cancel();
    assert_eq!(other.await.unwrap().unwrap().status, ExitStatus::Cancelled);
}

#[tokio::test]
async fn sandboxes_run_each_job_where_its_profile_says() {
    let Some(f) = fixture("dispatch").await else {
        return;
    };
    let sandboxes = Sandboxes::new(ProcessSandbox::default(), Ok(f.sandbox.clone()));
    let in_docker = f.job("docker", "echo $GATEHOUSE_WORKSPACE");
    let (exit, lines) = run(&sandboxes, &in_docker, CancellationToken::new()).await;
    assert!(exit.unwrap().succeeded());
    assert_eq!(out(&lines, Stream::Stdout), ["/workspace"]);

    let mut local = f.job("process", "echo $GATEHOUSE_WORKSPACE");
    local.profile = Profile::default();
    let (exit, lines) = run(&sandboxes, &local, CancellationToken::new()).await;
    assert!(exit.unwrap().succeeded());
    assert_eq!(
        out(&lines, Stream::Stdout),
        [local.workspace.display().to_string()]
    );
}
