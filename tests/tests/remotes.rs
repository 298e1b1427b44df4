//! Projects whose repositories are not on GitHub, end to end with no `[github]` at all: a
//! run on a repository of its own `file://` remote clones it, and its `deliver` node pushes
//! the work branch and records it (the run shows "pushed branch X at SHA to URL"); a run on
//! a GitLab and on a Gitea repository opens one merge request (pull request) there, which a
//! second delivery to the same branch updates rather than opening another.

use std::path::Path;
use std::sync::Arc;

use gatehouse_fake_forge::git::{bare_repository, git};
use gatehouse_fake_forge::gitea::FakeGitea;
use gatehouse_fake_forge::gitlab::FakeGitlab;
use gatehouse_forges::{Forge, ForgeKind};
use gatehouse_ingest::Scope;
use gatehouse_runner::{Deliverer, ForgeAccess, Remotes};
use gatehouse_tests::gatehouse::person;
use gatehouse_tests::{Backend, Gatehouse, on_both_backends};
use secrecy::SecretString;
use serde_json::json;
use uuid::Uuid;

const FIX: &str = "name: fix\nnodes:\n  work: { kind: script, run: 'echo fixed >> FIX.md' }\n  deliver: { kind: deliver, needs: [work] }\n";
/// `fix`, in a workspace of two repositories.
const FIX_BOTH: &str = "name: fix-both\nnodes:\n  work: { kind: script, run: 'echo fixed >> lab/FIX.md; echo fixed >> tea/FIX.md' }\n  deliver: { kind: deliver, needs: [work] }\n";

on_both_backends!(
    a_run_on_its_own_remote_delivers_without_github,
    runs_on_a_gitlab_and_a_gitea_repository_open_one_request_each,
);

/// A deliverer with no GitHub: the projects' own remotes and the `forges`.
fn without_github(forges: Vec<(&str, ForgeAccess)>) -> Arc<Deliverer> {
    let mut remotes = Remotes::default();
    for (name, access) in forges {
        remotes.forges.insert(name.to_owned(), access);
    }
    Arc::new(Deliverer {
        github: None,
        git_url: String::new(),
        remotes,
        author_name: "Gatehouse".into(),
        author_email: "gatehouse@localhost".into(),
        // These runs clone whole, as with `storage.mirror_limit = 0`; the other suites
        // prepare workspaces from mirrors.
        mirrors: None,
    })
}

async fn hub(backend: Backend, projects: &str, deliverer: Arc<Deliverer>) -> Gatehouse {
    Gatehouse::builder(backend)
        .sops(&[("fix", FIX), ("fix-both", FIX_BOTH)])
        .people(vec![person("ana", &[])])
        .projects(projects)
        .runner(move |options| options.delivery = Some(deliverer))
        .start()
        .await
}

/// Starts `sop` on `project` through the API as ana and waits for it to end.
async fn run_fix(hub: &Gatehouse, sop: &str, project: &str) -> (Uuid, String, serde_json::Value) {
    let token = hub.stored_token("ana", &Scope::ALL, None).await;
    let accepted = hub
        .api_as(&token)
        .post("/runs", json!({ "sop": sop, "project": project }))
        .await
        .is(202);
    let run: Uuid = accepted["run_id"].as_str().unwrap().parse().unwrap();
    let state = hub
        .wait(run, "the run to end", |r, _| {
            ["succeeded", "failed", "cancelled"].contains(&r.status.as_str())
        })
        .await;
    let row = hub.db.store.run(run).await.unwrap().unwrap();
    (run, row.status.to_string(), state)
}

fn file_url(bare: &Path) -> String {
    format!("file://{}", bare.display())
}

async fn a_run_on_its_own_remote_delivers_without_github(backend: Backend) {
    let remotes = tempfile::tempdir().unwrap();
    let bare = remotes.path().join("app.git");
    bare_repository(&bare);
    let projects = format!(
        "[[projects]]\nname = \"local\"\nrepositories = [{{ repo = \"team/app\", url = \"{}\" }}]\n",
        file_url(&bare)
    );
    let hub = hub(backend, &projects, without_github(Vec::new())).await;
    let (run, status, state) = run_fix(&hub, "fix", "local").await;
    assert_eq!(status, "succeeded", "{state:#}");

    let branches = git(&bare, &["branch", "--format=%(refname:short)"]);
    let branch = branches
        .lines()
        .find(|b| b.starts_with("gatehouse/"))
        .unwrap_or_else(|| panic!("the work branch is pushed: {branches}"))
        .to_owned();
    let sha = git(&bare, &["rev-parse", &branch]).trim().to_owned();
    assert_eq!(
        git(&bare, &["show", &format!("{branch}:FIX.md")]),
        "fixed\n"
    );
    assert_eq!(
        git(&bare, &["rev-parse", "main"]).trim(),
        git(&bare, &["rev-parse", &format!("{branch}~1")]).trim(),
        "main is as it was; the work is on its branch"
    );

    let recorded = hub.db.store.pushed_branches_of_run(run).await.unwrap();
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(
        (
            recorded[0].repo.as_str(),
            recorded[0].branch.as_str(),
            recorded[0].commit_sha.as_str(),
            recorded[0].remote.as_str()
        ),
        (
            "team/app",
            branch.as_str(),
            sha.as_str(),
            file_url(&bare).as_str()
        )
    );
    let token = hub.stored_token("ana", &Scope::ALL, None).await;
    let detail = hub
        .api_as(&token)
        .get(&format!("/runs/{run}"))
        .await
        .is(200);
    let pushed = &detail["pushed_branches"][0];
    assert_eq!(pushed["branch"], json!(branch));
    assert_eq!(pushed["commit"], json!(sha));
    assert_eq!(pushed["remote"], json!(file_url(&bare)));
    let log = hub
        .api_as(&token)
        .get(&format!("/runs/{run}/logs"))
        .await
        .is(200)
        .to_string();
    assert!(
        log.contains(&format!(
            "delivered: pushed branch {branch} at {} to {}",
            &sha[..12],
            file_url(&bare)
        )),
        "{log}"
    );
}

async fn runs_on_a_gitlab_and_a_gitea_repository_open_one_request_each(backend: Backend) {
    let remotes = tempfile::tempdir().unwrap();
    for repo in ["team/lab", "team/tea"] {
        bare_repository(&remotes.path().join(format!("{repo}.git")));
    }
    let gitlab = FakeGitlab::start("glpat-x").await;
    let gitea = FakeGitea::start("tea-x").await;
    let access = |kind, api: String, token: &str| ForgeAccess {
        api: Forge::new(kind, &api, SecretString::from(token.to_owned())).unwrap(),
        git_url: format!("file://{}", remotes.path().display()),
        token: SecretString::from(token.to_owned()),
    };
    let deliverer = without_github(vec![
        (
            "lab",
            access(ForgeKind::Gitlab, gitlab.api_url(), "glpat-x"),
        ),
        ("tea", access(ForgeKind::Gitea, gitea.api_url(), "tea-x")),
    ]);
    // One work branch for every run: the second delivery finds the first's request open.
    let projects = "[[projects]]\nname = \"forged\"\nrepositories = [\n  { repo = \"team/lab\", forge = \"lab\", mode = \"new\", branch_name = \"fix-it\" },\n  { repo = \"team/tea\", forge = \"tea\", mode = \"new\", branch_name = \"fix-it\" },\n]\n";
    let hub = hub(backend, projects, deliverer).await;
    let mut runs = Vec::new();
    for _ in 0..2 {
        let (run, status, state) = run_fix(&hub, "fix-both", "forged").await;
        assert_eq!(status, "succeeded", "{state:#}");
        runs.push(run);
    }
    let requests = gitlab.merge_requests();
    assert_eq!(requests.len(), 1, "one merge request: {requests:?}");
    assert_eq!(
        (
            requests[0].project.as_str(),
            requests[0].source.as_str(),
            requests[0].target.as_str()
        ),
        ("team/lab", "fix-it", "main")
    );
    let pulls = gitea.pulls();
    assert_eq!(pulls.len(), 1, "one pull request: {pulls:?}");
    assert_eq!(pulls[0].source, "fix-it");

    let mut heads = Vec::new();
    for run in &runs {
        let recorded = hub.db.store.pushed_branches_of_run(*run).await.unwrap();
        heads.push(recorded[0].commit_sha.clone());
        let requests: Vec<(String, Option<String>, Option<i64>)> = recorded
            .into_iter()
            .map(|r| (r.repo, r.forge, r.request_number))
            .collect();
        assert_eq!(
            requests,
            [
                ("team/lab".to_owned(), Some("lab".to_owned()), Some(1)),
                ("team/tea".to_owned(), Some("tea".to_owned()), Some(1)),
            ]
        );
    }
    let lab = remotes.path().join("team/lab.git");
    assert_ne!(heads[0], heads[1], "each run pushed its own commit");
    assert_eq!(
        git(&lab, &["rev-parse", "fix-it"]).trim(),
        heads[1],
        "the branch is the second run's, its merge request the first's"
    );
    assert_eq!(git(&lab, &["show", "fix-it:FIX.md"]), "fixed\n");
}
