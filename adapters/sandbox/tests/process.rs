//! The local-process sandbox with real processes.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use gatehouse_sandbox::{
    ExitStatus, Job, JobLabels, LogLine, ProcessSandbox, Profile, Sandbox, SandboxError,
    SandboxKind, Stream,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn job(dir: &Path, script: &str) -> Job {
    Job {
        script: script.into(),
        env: BTreeMap::from([("GATEHOUSE_RUN_ID".into(), "r1".into())]),
        workspace: dir.join("workspace"),
        artifacts: dir.join("artifacts"),
        inputs: dir.join("inputs"),
        timeout: None,
        profile: Profile::default(),
        labels: JobLabels {
            run: "r1".into(),
            node: "n".into(),
            attempt: 1,
        },
        stdout_tail: 0,
        relay: None,
        home: None,
    }
}

/// Runs a job, collecting its output.
async fn run(job: &Job, cancel: CancellationToken) -> (gatehouse_sandbox::Exit, Vec<LogLine>) {
    let (tx, mut rx) = mpsc::channel(1024);
    let exit = ProcessSandbox::default()
        .run(job, tx, cancel)
        .await
        .unwrap();
    let mut lines = Vec::new();
    while let Ok(line) = rx.try_recv() {
        lines.push(line);
    }
    (exit, lines)
}

fn out(lines: &[LogLine], stream: Stream) -> Vec<&str> {
    lines
        .iter()
        .filter(|l| l.stream == stream)
        .map(|l| l.line.as_str())
        .collect()
}

/// Whether a process still runs (a zombie waiting to be reaped by init does not).
fn alive(pid: &str) -> bool {
    for _ in 0..50 {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return false,
            // The state follows the parenthesised command name.
            Ok(stat)
                if stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z') =>
            {
                return false;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    true
}

#[tokio::test]
async fn the_environment_holds_only_what_was_declared() {
    // SAFETY: set before any process is spawned by this test binary's tests that read it.
    unsafe { std::env::set_var("GATEHOUSE_HOST_SECRET", "must-not-leak") };
    let dir = tempfile::tempdir().unwrap();
    let (exit, lines) = run(&job(dir.path(), "env | sort"), CancellationToken::new()).await;
    assert!(exit.succeeded());
    let names: Vec<&str> = out(&lines, Stream::Stdout)
        .iter()
        .map(|l| l.split('=').next().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "GATEHOUSE_ARTIFACTS",
            "GATEHOUSE_INPUTS",
            "GATEHOUSE_RUN_ID",
            "GATEHOUSE_WORKSPACE",
            "HOME",
            "PATH",
            "PWD"
        ]
    );
}

#[tokio::test]
async fn the_path_variables_are_the_host_directories_and_inputs_exist() {
    let dir = tempfile::tempdir().unwrap();
    let j = job(
        dir.path(),
        "echo \"$GATEHOUSE_WORKSPACE\"; echo \"$GATEHOUSE_ARTIFACTS\"; echo \"$GATEHOUSE_INPUTS\"; test -d \"$GATEHOUSE_INPUTS\"",
    );
    let (exit, lines) = run(&j, CancellationToken::new()).await;
    assert!(exit.succeeded(), "{exit:?}");
    let expected: Vec<String> = [&j.workspace, &j.artifacts, &j.inputs]
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(out(&lines, Stream::Stdout), expected);
}

#[tokio::test]
async fn long_lines_are_cut_floods_never_block_and_the_stdout_tail_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = job(
        dir.path(),
        "head -c 1000000 /dev/zero | tr '\\0' x; echo; yes | head -c 20000000; printf 'usage: 42 tokens'",
    );
    j.stdout_tail = 16;
    // A receiver that never reads until the end: the job must still finish.
    let (tx, mut rx) = mpsc::channel(16);
    let exit = ProcessSandbox::default()
        .run(&j, tx.clone(), CancellationToken::new())
        .await;
    drop(tx);
    let exit = exit.unwrap();
    assert!(exit.succeeded(), "{exit:?}");
    assert_eq!(exit.stdout_tail, b"usage: 42 tokens");
    let first = rx.recv().await.unwrap().line;
    assert!(
        first.starts_with(&"x".repeat(64 * 1024))
            && first.ends_with(&format!(
                " … [line cut: {} more bytes]",
                1_000_000 - 64 * 1024
            )),
        "{}…",
        &first[first.len() - 60..]
    );
}

#[tokio::test]
async fn a_docker_profile_is_never_run_as_a_plain_process() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = job(dir.path(), "touch ran");
    j.profile = Profile {
        kind: SandboxKind::Docker,
        image: Some("gatehouse-sandbox:busybox".into()),
        ..Profile::default()
    };
    let (tx, _rx) = mpsc::channel(1);
    let err = ProcessSandbox::default()
        .run(&j, tx, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, SandboxError::WrongSandbox { .. }), "{err}");
    assert!(!dir.path().join("workspace/ran").exists());
}

#[tokio::test]
async fn output_streams_line_by_line_and_the_exit_code_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (exit, lines) = run(
        &job(
            dir.path(),
            "echo one; echo oops >&2; printf 'two\\r\\nno newline'; exit 3",
        ),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(exit.status, ExitStatus::Exited(3));
    assert_eq!(out(&lines, Stream::Stdout), ["one", "two", "no newline"]);
    assert_eq!(out(&lines, Stream::Stderr), ["oops"]);
}

#[tokio::test]
async fn the_workspace_is_kept_between_jobs_and_artifacts_land_where_declared() {
    let dir = tempfile::tempdir().unwrap();
    let (first, _) = run(
        &job(
            dir.path(),
            "echo state > notes.txt; echo hi > \"$GATEHOUSE_ARTIFACTS/a.md\"",
        ),
        CancellationToken::new(),
    )
    .await;
    assert!(first.succeeded());
    let (second, lines) = run(
        &job(dir.path(), "cat notes.txt; pwd"),
        CancellationToken::new(),
    )
    .await;
    assert!(second.succeeded());
    let workspace = dir.path().join("workspace").canonicalize().unwrap();
    assert_eq!(
        out(&lines, Stream::Stdout),
        ["state", workspace.to_str().unwrap()]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("artifacts/a.md")).unwrap(),
        "hi\n"
    );
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let mut j = job(
        dir.path(),
        "sleep 300 & echo $! > bg.pid; echo $$ > sh.pid; sleep 300",
    );
    j.timeout = Some(Duration::from_millis(500));
    let (exit, _) = run(&j, CancellationToken::new()).await;
    assert_eq!(exit.status, ExitStatus::TimedOut);
    assert!(exit.duration >= Duration::from_millis(500) && exit.duration < Duration::from_secs(10));
    for file in ["bg.pid", "sh.pid"] {
        let pid = std::fs::read_to_string(dir.path().join("workspace").join(file)).unwrap();
        assert!(
            !alive(pid.trim()),
            "{file}: process {} survived the timeout",
            pid.trim()
        );
    }
}

#[tokio::test]
async fn cancel_kills_the_job_and_background_jobs_do_not_outlive_a_normal_exit() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let (exit, _) = run(&job(dir.path(), "echo $$ > sh.pid; sleep 300"), cancel).await;
    assert_eq!(exit.status, ExitStatus::Cancelled);
    let pid = std::fs::read_to_string(dir.path().join("workspace/sh.pid")).unwrap();
    assert!(!alive(pid.trim()));

    let (exit, _) = run(
        &job(dir.path(), "sleep 300 & echo $! > bg.pid; exit 0"),
        CancellationToken::new(),
    )
    .await;
    assert!(exit.succeeded());
    let pid = std::fs::read_to_string(dir.path().join("workspace/bg.pid")).unwrap();
    assert!(!alive(pid.trim()), "a background job outlived its node");
}

#[tokio::test]
async fn a_missing_workspace_parent_is_created_and_a_bad_one_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("file"), "").unwrap();
    let mut j = job(dir.path(), "true");
    j.workspace = dir.path().join("file/workspace");
    let (tx, _rx) = mpsc::channel(1);
    let err = ProcessSandbox::default()
        .run(&j, tx, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with("preparing workspace at "),
        "{err}"
    );
}

#[tokio::test]
async fn a_new_sandbox_reaps_the_process_groups_a_dead_one_left_running() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("groups");
    let j = job(dir.path(), "sleep 300 & echo $! > bg.pid; sleep 300");
    let crashed = tokio::spawn({
        let (sandbox, j) = (ProcessSandbox::with_registry(registry.clone()), j.clone());
        async move {
            let (tx, _rx) = mpsc::channel(16);
            sandbox.run(&j, tx, CancellationToken::new()).await
        }
    });
    let bg = dir.path().join("workspace/bg.pid");
    for _ in 0..200 {
        if std::fs::read_to_string(&bg).is_ok_and(|s| !s.trim().is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The runner dies: its future is dropped without the group being killed.
    crashed.abort();
    let _ = crashed.await;
    let pid = std::fs::read_to_string(&bg).unwrap().trim().to_owned();
    assert!(alive(&pid), "the orphan is still running before the reap");

    let reaped = ProcessSandbox::with_registry(registry.clone())
        .reap_orphans()
        .unwrap();
    assert_eq!(reaped, 1);
    assert!(!alive(&pid), "the orphan survived the reap");
    assert_eq!(
        std::fs::read_dir(&registry).unwrap().count(),
        0,
        "the registry is cleared"
    );
    assert_eq!(
        ProcessSandbox::with_registry(registry)
            .reap_orphans()
            .unwrap(),
        0
    );
}
