//! Anything a node wrote is untrusted, end to end on the process sandbox: an artifact that
//! is a link (to the runner's own environment, to a host file, through a linked directory),
//! a FIFO, a hard link to a host file or a file over the size limit fails its node with a
//! reason naming the artifact, and nothing of the attempt is read or stored; a stored
//! artifact swapped for a link afterwards is not copied to the next node, and nothing
//! planted in a node's inputs reaches its agent's prompt.

use std::collections::BTreeMap;
use std::sync::Arc;

use gatehouse_agent::{Executor, Role};
use gatehouse_sandbox::ProcessSandbox;
use gatehouse_tests::{Backend, Gatehouse, TestDb, on_both_backends};
use uuid::Uuid;

const REGULAR: &str = "artifacts must be regular files inside the artifact directory";

on_both_backends!(
    an_artifact_linked_to_the_runners_environment_fails_and_nothing_is_stored,
    an_artifact_under_a_linked_directory_fails,
    a_fifo_artifact_fails_without_hanging_the_runner,
    an_artifact_hard_linked_to_a_host_file_fails,
    an_oversized_artifact_is_refused_before_it_is_read,
    a_stored_artifact_swapped_for_a_link_does_not_change_the_next_nodes_input,
    nothing_planted_in_the_inputs_reaches_the_prompt,
);

/// One script node `node` that runs `run` and declares `artifacts`.
fn script(name: &str, run: &str, artifacts: &[&str]) -> String {
    format!(
        "name: {name}\nnodes:\n  node: {{ kind: script, run: {run:?}, artifacts: [{}] }}\n",
        artifacts.join(", ")
    )
}

/// Runs `sop` to its end and returns its failure and its stored artifacts.
async fn failure(backend: Backend, sop: &str) -> (String, usize) {
    let stack = Gatehouse::builder(backend)
        .sops(&[("sop", sop)])
        .start()
        .await;
    let run = stack.request("sop").await;
    let state = stack.wait_run(run, "failed").await;
    let stored = stack.db.store.artifacts(run).await.unwrap().len();
    stack.stop().await;
    (
        state["failure"].as_str().unwrap_or_default().to_owned(),
        stored,
    )
}

async fn an_artifact_linked_to_the_runners_environment_fails_and_nothing_is_stored(
    backend: Backend,
) {
    let run = "echo fine > $GATEHOUSE_ARTIFACTS/ok.md; ln -s /proc/self/environ $GATEHOUSE_ARTIFACTS/report.md";
    let (failure, stored) = failure(backend, &script("sop", run, &["ok.md", "report.md"])).await;
    assert_eq!(
        failure,
        format!("node `node` failed: artifact `report.md` is a symbolic link; {REGULAR}")
    );
    assert_eq!(stored, 0, "nothing of the attempt is stored");
}

async fn an_artifact_under_a_linked_directory_fails(backend: Backend) {
    let host = tempfile::tempdir().unwrap();
    std::fs::write(host.path().join("secret.txt"), "host secret").unwrap();
    let run = format!("ln -s {} $GATEHOUSE_ARTIFACTS/logs", host.path().display());
    let (failure, stored) = failure(backend, &script("sop", &run, &["logs/secret.txt"])).await;
    assert_eq!(
        failure,
        format!(
            "node `node` failed: artifact `logs/secret.txt` is under a symbolic link (`logs`); {REGULAR}"
        )
    );
    assert_eq!(stored, 0);
}

async fn a_fifo_artifact_fails_without_hanging_the_runner(backend: Backend) {
    let run = "mkfifo $GATEHOUSE_ARTIFACTS/report.md";
    let (failure, stored) = failure(backend, &script("sop", run, &["report.md"])).await;
    assert_eq!(
        failure,
        format!("node `node` failed: artifact `report.md` is a FIFO; {REGULAR}")
    );
    assert_eq!(stored, 0);
}

/// The process sandbox cannot stop a node from hard-linking a file of the runner's user;
/// the runner refuses a file that has another name.
async fn an_artifact_hard_linked_to_a_host_file_fails(backend: Backend) {
    let host = tempfile::tempdir().unwrap();
    let secret = host.path().join("secret.txt");
    std::fs::write(&secret, "host secret").unwrap();
    let run = format!("ln {} $GATEHOUSE_ARTIFACTS/report.md", secret.display());
    let (failure, stored) = failure(backend, &script("sop", &run, &["report.md"])).await;
    assert!(
        failure.starts_with("node `node` failed: artifact `report.md` has 2 names (hard links)"),
        "{failure}"
    );
    assert_eq!(stored, 0);
}

/// 100 MiB that take no space (sparse): refused from their size, not read.
async fn an_oversized_artifact_is_refused_before_it_is_read(backend: Backend) {
    let run = "truncate -s 100M $GATEHOUSE_ARTIFACTS/big.bin";
    let (failure, stored) = failure(backend, &script("sop", run, &["big.bin"])).await;
    assert_eq!(
        failure,
        "node `node` failed: artifact `big.bin` is 100.0 MiB, over the 64.0 MiB limit"
    );
    assert_eq!(stored, 0);
}

/// `swap` replaces the artifact `plan` stored with a link (a process-sandbox node can reach
/// the data directory); `read`, which has `plan`'s artifacts as inputs, still gets what was
/// recorded: inputs come from the blob store, by digest, never from the directory a node
/// could change.
const SWAP: &str = r#"
name: swap
nodes:
  plan: { kind: script, run: "echo plan > $GATEHOUSE_ARTIFACTS/plan.md", artifacts: [plan.md] }
  swap:
    kind: script
    needs: [plan]
    run: 'set -e; p=$GATEHOUSE_ARTIFACTS/../../plan/1/plan.md; rm $p; ln -s /proc/self/environ $p'
  read: { kind: script, needs: [swap], run: "cat $GATEHOUSE_INPUTS/plan/plan.md" }
"#;

async fn a_stored_artifact_swapped_for_a_link_does_not_change_the_next_nodes_input(
    backend: Backend,
) {
    let stack = Gatehouse::builder(backend)
        .sops(&[("swap", SWAP)])
        .start()
        .await;
    let run = stack.request("swap").await;
    stack.wait_run(run, "succeeded").await;
    let planted = stack
        .data
        .path()
        .join(format!("runs/{run}/artifacts/plan/1/plan.md"));
    let planted = std::fs::symlink_metadata(&planted).unwrap();
    assert!(planted.is_symlink(), "the link was planted");
    let copy = stack
        .data
        .path()
        .join(format!("runs/{run}/inputs/read/1/plan/plan.md"));
    let meta = std::fs::symlink_metadata(&copy).unwrap();
    assert!(meta.is_file(), "a regular file, not the planted link");
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), "plan\n");
    let logs = stack.db.store.logs(run, 0, 1000).await.unwrap();
    let read: Vec<&str> = logs
        .iter()
        .filter(|l| l.node == "read" && !l.line.starts_with("[gatehouse]"))
        .map(|l| l.line.as_str())
        .collect();
    assert_eq!(read, ["plan"]);
    stack.stop().await;
}

/// `plant` puts a link to the runner's environment into the inputs directory the agent
/// node `code` will get; the prompt (which the fake CLI keeps as an artifact) quotes
/// `plan`'s own artifact only.
const PLANT: &str = r#"
name: plant
nodes:
  plan: { kind: script, run: "echo 'split the lexer' > $GATEHOUSE_ARTIFACTS/plan.md", artifacts: [plan.md] }
  plant:
    kind: script
    needs: [plan]
    run: 'i=$GATEHOUSE_ARTIFACTS/../../../inputs/code/1/plan; mkdir -p $i; ln -s /proc/self/environ $i/notes.md'
  code:
    kind: agent
    needs: [plant]
    role: coder
    prompt: "{% for name, text in inputs.plan|items %}[{{ name }}: {{ text }}]{% endfor %}"
    artifacts: [prompt.md]
"#;

const FAKE_CLAUDE: &str = r#"#!/bin/sh
cat > "$GATEHOUSE_ARTIFACTS/prompt.md"
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","usage":{"input_tokens":1,"output_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"modelUsage":{}}'
"#;

async fn nothing_planted_in_the_inputs_reaches_the_prompt(backend: Backend) {
    use std::os::unix::fs::PermissionsExt;
    let data = tempfile::tempdir().unwrap();
    let bin = data.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("claude"), FAKE_CLAUDE).unwrap();
    std::fs::set_permissions(bin.join("claude"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let coder = Role {
        env: BTreeMap::from([("PATH".into(), format!("{}:/usr/bin:/bin", bin.display()))]),
        ..Role::new(Executor::ClaudeCode)
    };
    let stack = Gatehouse::builder_on(TestDb::new(backend).await, data)
        .sops(&[("plant", PLANT)])
        .sandbox(Arc::new(ProcessSandbox::default()))
        .runner(move |options| {
            options.roles = BTreeMap::from([("coder".to_owned(), coder)]);
        })
        .start()
        .await;
    let run: Uuid = stack.request("plant").await;
    stack.wait_run(run, "succeeded").await;
    let prompt = stack.artifact(run, "code", 1, "prompt.md");
    assert!(prompt.contains("[plan.md: split the lexer\n]"), "{prompt}");
    assert!(
        !prompt.contains("notes.md") && !prompt.contains("PATH="),
        "{prompt}"
    );
    stack.stop().await;
}
