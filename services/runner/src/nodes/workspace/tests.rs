//! The runner's side of workspaces on a real (SQLite) store: a run's frozen workspace
//! checked out and its project's settings in the environment, a run on an issue without
//! one, the trees recorded after attempts, and a delivery held to the approval the store
//! bound — refused when the work changed, merged and recorded with its gate when not.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use gatehouse_events::{
    DeliverMode, DeliverSpec, NodeDispatch, NodeOutcome, NodeSpec, RepositoryMode,
    RequirementSource, RequirementState, RunStatus, RunWorkspace, ScriptSpec,
};
use gatehouse_store::{DecisionRow, RequirementRow, RunRow, Store};
use uuid::Uuid;

use super::super::Nodes;
use crate::deliver::Deliverer;
use crate::deliver::checkouts::{issue_branch, requirement_branch};
use crate::deliver::scene::{Scene, auto, checkout, git};
use crate::files::RunDirs;
use crate::runner::{Runner, RunnerOptions};

/// A store with one run on `source` (a requirement) and `workspace`, and a runner that can
/// clone the scene's remotes (or not: `delivery: false`).
struct Stage {
    scene: Scene,
    store: Store,
    runner: Runner,
    /// The runner's node jobs, whose steps the tests take one by one.
    nodes: Nodes,
    run: Uuid,
    requirement: Uuid,
}

impl Stage {
    async fn new(
        source: RequirementSource,
        workspace: Option<RunWorkspace>,
        delivery: bool,
    ) -> Self {
        let scene = Scene::new().await;
        let url = format!("sqlite:{}", scene.path("gatehouse.db").display());
        let store = Store::connect(&url, backon::ExponentialBuilder::default())
            .await
            .unwrap();
        store.migrate().await.unwrap();
        let (run, requirement) = (Uuid::now_v7(), Uuid::now_v7());
        let now = chrono_now();
        let mut tx = store.begin().await.unwrap();
        tx.save_sop_version("v1", "ship", "test", "name: ship")
            .await
            .unwrap();
        tx.insert_requirement(&RequirementRow {
            id: requirement,
            source_key: format!("test:{requirement}"),
            source: serde_json::to_string(&source).unwrap(),
            title: "Checkout 500s on Safari".into(),
            body: String::new(),
            url: None,
            state: RequirementState::Open,
            requested_by: "ana".into(),
            source_updated_at: String::new(),
            project: None,
            created_at: now,
            updated_at: now,
        })
        .await
        .unwrap();
        tx.create_run(&RunRow {
            id: run,
            sop: "ship".into(),
            sop_version: "v1".into(),
            params: "{}".into(),
            requested_by: Some("ana".into()),
            status: RunStatus::Running,
            state: "{}".into(),
            revision: 0,
            parent_run: None,
            parent_node: None,
            parent_attempt: None,
            requirement_id: Some(requirement),
            schedule: None,
            scheduled_ms: None,
            project: workspace.as_ref().map(|w| w.project.clone()),
            workspace: workspace.map(|w| serde_json::to_string(&w).unwrap()),
            created_at: now,
            updated_at: now,
            conversation: None,
        })
        .await
        .unwrap();
        tx.commit().await.unwrap();
        let mut options = RunnerOptions::new(scene.path("data"));
        if delivery {
            options.delivery = Some(Arc::new(Deliverer {
                github: scene.deliverer.github.clone(),
                git_url: scene.deliverer.git_url.clone(),
                remotes: crate::remotes::Remotes::default(),
                author_name: "Gatehouse".into(),
                author_email: "gatehouse@localhost".into(),
                mirrors: scene.deliverer.mirrors.clone(),
            }));
        }
        let sandbox = Arc::new(gatehouse_sandbox::ProcessSandbox::default());
        let runner = Runner::new(store.clone(), sandbox, options);
        Self {
            scene,
            store,
            nodes: Nodes::new(&runner),
            runner,
            run,
            requirement,
        }
    }

    fn dirs(&self) -> RunDirs {
        RunDirs::new(&self.scene.path("data"), self.run)
    }

    fn job(&self, node: &str, attempt: u32, spec: NodeSpec) -> NodeDispatch {
        NodeDispatch {
            run_id: self.run,
            node: node.into(),
            attempt,
            sandbox: "default".into(),
            spec,
            env: BTreeMap::new(),
            secrets: Vec::new(),
            timeout_secs: None,
        }
    }

    /// Prepares the workspace as a node's attempt does and records its trees after it.
    async fn attempt(&self, node: &str, attempt: u32) -> Result<(), String> {
        let scope = self.nodes.scope(self.run).await.unwrap()?;
        let job = self.job(node, attempt, NodeSpec::Script(ScriptSpec::default()));
        self.nodes
            .prepare_workspace(&job, &scope, &self.dirs())
            .await?;
        self.nodes
            .record_trees(&job, &scope, &self.dirs())
            .await
            .unwrap();
        Ok(())
    }

    /// `gate`'s attempt 1 approved, binding the trees as they stand (as the scheduler does).
    async fn approve(&self, gate: &str) {
        let mut tx = self.store.begin().await.unwrap();
        tx.bind_approved_trees(self.run, gate, 1).await.unwrap();
        tx.record_decision(&DecisionRow {
            run_id: self.run,
            node: gate.into(),
            attempt: 1,
            decision: "approve".into(),
            target: None,
            comment: None,
            person: "bo".into(),
            channel: "api".into(),
            outcome: "applied".into(),
            decided_at: chrono_now(),
        })
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }

    /// A `deliver` node's attempt merging into `main`: its failure reason, if it failed.
    async fn deliver(&self, attempt: u32) -> Option<String> {
        let scope = self.nodes.scope(self.run).await.unwrap().unwrap();
        let spec = DeliverSpec {
            mode: DeliverMode::Direct,
            branch: Some("main".into()),
            answer: None,
        };
        let job = self.job("deliver", attempt, NodeSpec::Deliver(spec.clone()));
        let ended = self
            .nodes
            .deliver(&job, &spec, &scope, &self.dirs(), Instant::now())
            .await
            .unwrap();
        match ended.finished.outcome {
            NodeOutcome::Succeeded => None,
            NodeOutcome::Failed { reason } => Some(reason),
            other => panic!("{other:?}"),
        }
    }
}

fn chrono_now<T: From<std::time::SystemTime>>() -> T {
    std::time::SystemTime::now().into()
}

fn slack() -> RequirementSource {
    RequirementSource::Slack {
        channel: "C1".into(),
        thread_ts: "1.2".into(),
    }
}

fn project(repositories: Vec<gatehouse_events::RepositoryCheckout>) -> RunWorkspace {
    RunWorkspace {
        project: "shop".into(),
        repositories,
        settings: BTreeMap::from([("test_command".into(), "cargo test".into())]),
    }
}

#[tokio::test]
async fn a_runs_frozen_workspace_is_checked_out_with_its_settings_and_its_trees_recorded() {
    let workspace = project(vec![
        auto("acme/api"),
        checkout("acme/shared", RepositoryMode::ReadOnly, None),
    ]);
    let stage = Stage::new(slack(), Some(workspace), true).await;
    stage.scene.remote("acme/api", 2);
    stage.scene.remote("acme/shared", 2);
    let scope = stage.nodes.scope(stage.run).await.unwrap().unwrap();
    let env = scope.environment();
    assert_eq!(env["GATEHOUSE_PROJECT"], "shop");
    assert_eq!(env["GATEHOUSE_PROJECT_TEST_COMMAND"], "cargo test");
    assert_eq!(env["GATEHOUSE_REPOSITORIES"], "acme/api acme/shared");

    stage.attempt("fix", 1).await.unwrap();
    let ws = stage.dirs().workspace();
    let branch = requirement_branch(stage.requirement, "Checkout 500s on Safari");
    assert_eq!(
        git(&ws.join("api"), &["symbolic-ref", "--short", "HEAD"]).trim(),
        branch
    );
    let logs = stage.store.logs(stage.run, 0, 1000).await.unwrap();
    let said = |line: &str| logs.iter().any(|l| l.line == line);
    assert!(
        said(&format!(
            "[gatehouse] acme/api checked out in `api`, on `{branch}` (auto)"
        )),
        "{logs:?}"
    );
    assert!(
        said("[gatehouse] acme/shared checked out in `shared`, read-only (read-only)"),
        "{logs:?}"
    );

    let trees = stage.store.workspace_trees(stage.run).await.unwrap();
    let head = git(&ws.join("api"), &["rev-parse", "HEAD^{tree}"]);
    assert_eq!(
        (trees[0].repo.as_str(), trees[0].tree.as_str()),
        ("acme/api", head.trim())
    );
    std::fs::write(ws.join("api/NEW.md"), "new\n").unwrap();
    stage.attempt("fix", 2).await.unwrap();
    let again = stage.store.workspace_trees(stage.run).await.unwrap();
    assert_ne!(
        again[0].tree, trees[0].tree,
        "an untracked file changes the tree"
    );
    assert_eq!((again[0].node.as_str(), again[0].attempt), ("fix", 2));
    assert_eq!(again[1].tree, trees[1].tree);

    // A tampered `.git` is recorded as a tree no approval can match. (Alternates naming
    // another store are rewritten to the mirror's before each node: that is covered by
    // the deliverer's tests of hostile workspaces.)
    std::fs::write(ws.join("shared/.git/commondir"), "/elsewhere\n").unwrap();
    stage.attempt("fix", 3).await.unwrap();
    let tampered = stage.store.workspace_trees(stage.run).await.unwrap();
    assert!(
        tampered[1].tree.starts_with("unverifiable: "),
        "{}",
        tampered[1].tree
    );
}

#[tokio::test]
async fn a_run_on_an_issue_without_a_workspace_works_on_the_issues_repository() {
    let issue = RequirementSource::Github {
        repo: "acme/api".into(),
        number: 7,
        pull_request: false,
    };
    let stage = Stage::new(issue, None, true).await;
    stage.scene.remote("acme/api", 1);
    stage.attempt("fix", 1).await.unwrap();
    let ws = stage.dirs().workspace();
    let head = git(&ws, &["symbolic-ref", "--short", "HEAD"]);
    assert_eq!(head.trim(), issue_branch(7, "Checkout 500s on Safari"));
}

#[tokio::test]
async fn a_runner_that_cannot_clone_says_so() {
    let stage = Stage::new(slack(), Some(project(vec![auto("acme/api")])), false).await;
    let reason = stage.attempt("fix", 1).await.unwrap_err();
    assert!(
        reason.starts_with("the run works on acme/api, but this runner cannot clone repositories"),
        "{reason}"
    );
}

#[tokio::test]
async fn delivery_is_held_to_the_stored_approval_and_recorded_with_its_gate() {
    let stage = Stage::new(slack(), Some(project(vec![auto("acme/api")])), true).await;
    let bare = stage.scene.remote("acme/api", 1);
    let main = git(&bare, &["rev-parse", "main"]);
    stage.attempt("fix", 1).await.unwrap();
    let ws = stage.dirs().workspace();
    std::fs::write(ws.join("FIX.md"), "fixed\n").unwrap();
    stage.attempt("fix", 2).await.unwrap();
    stage.approve("review").await;

    std::fs::write(ws.join("FIX.md"), "changed after the review\n").unwrap();
    let reason = stage.deliver(1).await.expect("refused");
    assert!(
        reason.starts_with("the workspace changed after gate `review` approved it: acme/api is not what was approved"),
        "{reason}"
    );
    assert_eq!(git(&bare, &["rev-parse", "main"]), main, "nothing pushed");

    std::fs::write(ws.join("FIX.md"), "fixed\n").unwrap();
    assert_eq!(stage.deliver(2).await, None);
    assert_eq!(git(&bare, &["show", "main:FIX.md"]), "fixed\n");
    let merges = stage
        .store
        .direct_merges_of_requirement(stage.requirement)
        .await
        .unwrap();
    assert_eq!(merges.len(), 1);
    assert_eq!(merges[0].approved_by.as_deref(), Some("review"));
    assert_eq!(
        merges[0].commit_sha,
        git(&bare, &["rev-parse", "main"]).trim()
    );
}

/// The run's latest checkpoint with its checkouts record changed by `forge`, restored on
/// this runner as any runner taking the run's next node would.
async fn restore_forged(
    stage: &Stage,
    taken: &gatehouse_blobs::Digest,
    forge: impl FnOnce(&mut [serde_json::Value]),
) {
    let blobs = &stage.runner.blobs;
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&blobs.get_bytes(taken, 1 << 30).await.unwrap()).unwrap();
    let mut record: serde_json::Value =
        serde_json::from_str(manifest["checkouts"].as_str().unwrap()).unwrap();
    forge(record["repositories"].as_array_mut().unwrap());
    manifest["checkouts"] = record.to_string().into();
    let forged = blobs
        .put_bytes(manifest.to_string().into_bytes().into())
        .await
        .unwrap();
    let place = stage.dirs().place();
    stage
        .runner
        .checkpoints
        .restore(&forged.digest, &place)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_restored_checkouts_record_is_held_to_the_runs_repositories() {
    let workspace = project(vec![
        auto("acme/api"),
        checkout("acme/shared", RepositoryMode::ReadOnly, None),
    ]);
    let stage = Stage::new(slack(), Some(workspace), true).await;
    let api = stage.scene.remote("acme/api", 1);
    let shared = stage.scene.remote("acme/shared", 1);
    let web = stage.scene.remote("acme/web", 1);
    stage.attempt("fix", 1).await.unwrap();
    let ws = stage.dirs().workspace();
    std::fs::write(ws.join("api/FIX.md"), "fixed\n").unwrap();
    std::fs::write(ws.join("shared/FIX.md"), "not to be pushed\n").unwrap();
    stage.attempt("fix", 2).await.unwrap();
    let place = stage.dirs().place();
    let taken = stage
        .runner
        .checkpoints
        .take(&place)
        .await
        .unwrap()
        .manifest;

    // Another run's workspace on the same runner, a clone of its own.
    let other = stage.scene.path("data/runs/other/workspace");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    let dest = other.to_string_lossy().into_owned();
    git(
        stage.scene.tmp.path(),
        &["clone", "--quiet", &api.to_string_lossy(), &dest],
    );
    std::fs::write(other.join("OTHER.md"), "the other run's work\n").unwrap();
    let other_config = std::fs::read_to_string(other.join(".git/config")).unwrap();

    let heads = || [&api, &shared, &web].map(|bare| git(bare, &["rev-parse", "main"]));
    let before = heads();
    type Forgery = fn(&mut [serde_json::Value]);
    let forgeries: [(&str, Forgery); 5] = [
        ("another repository", |r| r[0]["repo"] = "acme/web".into()),
        ("another run's workspace", |r| {
            r[0]["dir"] = "../../../runs/other/workspace".into();
        }),
        ("a folder of two parts", |r| r[0]["dir"] = "api/..".into()),
        ("another branch", |r| r[0]["branch"] = "release".into()),
        ("a read-only repository made writable", |r| {
            r[1]["mode"] = "auto".into();
            r[1]["branch"] = r[0]["branch"].clone();
        }),
    ];
    for (n, (what, forgery)) in forgeries.into_iter().enumerate() {
        restore_forged(&stage, &taken, forgery).await;
        let attempt = u32::try_from(n).unwrap() + 1;
        let reason = stage.deliver(attempt).await.unwrap_or_default();
        assert!(
            reason.starts_with("the workspace's record of its checkouts is not what was planned"),
            "{what}: {reason}"
        );
        assert_eq!(heads(), before, "{what}: something was pushed");
        assert_eq!(
            std::fs::read_to_string(other.join(".git/config")).unwrap(),
            other_config,
            "{what}: another run's clone was touched"
        );
    }

    // The record as the runner wrote it delivers.
    stage
        .runner
        .checkpoints
        .restore(&taken, &place)
        .await
        .unwrap();
    assert_eq!(stage.deliver(9).await, None);
    assert_eq!(git(&api, &["show", "main:FIX.md"]), "fixed\n");
    assert_eq!(git(&shared, &["rev-parse", "main"]), before[1]);
}
