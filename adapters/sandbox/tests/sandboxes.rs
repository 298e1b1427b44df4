//! Dispatching by profile when the Docker engine was away at start.

use std::collections::BTreeMap;

use gatehouse_sandbox::{
    Job, JobLabels, ProcessSandbox, Profile, Sandbox, SandboxError, SandboxKind, Sandboxes,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn job(dir: &std::path::Path, profile: Profile) -> Job {
    Job {
        script: "echo ran > ran.txt".into(),
        env: BTreeMap::new(),
        workspace: dir.join("workspace"),
        artifacts: dir.join("artifacts"),
        inputs: dir.join("inputs"),
        timeout: None,
        profile,
        labels: JobLabels {
            run: "r".into(),
            node: "n".into(),
            attempt: 1,
        },
        stdout_tail: 0,
        relay: None,
        home: None,
    }
}

#[tokio::test]
async fn without_docker_process_jobs_run_and_docker_jobs_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let sandboxes = Sandboxes::new(
        ProcessSandbox::default(),
        Err(SandboxError::Unreachable(
            bollard::errors::Error::SocketNotFoundError("/nowhere/docker.sock".into()),
        )),
    );
    assert!(sandboxes.docker().is_none());

    let (tx, _rx) = mpsc::channel(16);
    let exit = sandboxes
        .run(
            &job(dir.path(), Profile::default()),
            tx,
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(exit.succeeded());
    assert!(dir.path().join("workspace/ran.txt").exists());

    let docker = Profile {
        kind: SandboxKind::Docker,
        image: Some("gatehouse-sandbox:busybox".into()),
        ..Profile::default()
    };
    let (tx, _rx) = mpsc::channel(16);
    let err = sandboxes
        .run(&job(dir.path(), docker), tx, CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "profile uses docker but the Docker engine was not reachable at start: \
         the Docker engine is not reachable: Socket not found: /nowhere/docker.sock"
    );
}
