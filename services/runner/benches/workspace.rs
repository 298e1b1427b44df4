//! Workspace preparation against its floor: a run's three repositories checked out as a
//! node's attempt does it (hardened git, a scratch clone per repository moved into place,
//! the work branch, the checkout record) beside three plain `git clone`s of the same
//! repositories from the same `file://` remotes, interleaved in the same process so noise
//! hits both alike. The repositories are bare, with `BENCH_FILES` files (default 300) over
//! `BENCH_COMMITS` commits (default 20) each.
//!
//! `cargo bench -p gatehouse-runner --bench workspace`. `BENCH_ROUNDS` (default 7) sets
//! the rounds. The medians and their ratio are printed, and written as JSON to the file
//! `GATEHOUSE_BENCH_JSON` names, when set.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{env_usize, git, median};
use gatehouse_events::{RepositoryCheckout, RepositoryMode};
use gatehouse_github::GithubClient;
use gatehouse_runner::Deliverer;
use gatehouse_runner::bench::prepare_workspace;

const REPOS: [&str; 3] = ["acme/api", "acme/web", "acme/shared"];

/// A bare repository `repo` under `root/git` with `files` files over `commits` commits.
fn remote(root: &Path, repo: &str, files: usize, commits: usize) {
    let bare = root.join(format!("git/{repo}.git"));
    std::fs::create_dir_all(&bare).expect("bare");
    git(&bare, &["init", "--quiet", "--bare"]);
    let seed = root.join(format!("seed/{repo}"));
    std::fs::create_dir_all(&seed).expect("seed");
    git(&seed, &["init", "--quiet"]);
    for commit in 0..commits.max(1) {
        for n in (commit..files).step_by(commits.max(1)) {
            let path = seed.join(format!("src/m{}/f{n}.rs", n % 17));
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("dir");
            let line = format!("pub fn f{n}_{commit}() -> usize {{ {n} }}\n");
            std::fs::write(path, line.repeat(40)).expect("file");
        }
        git(&seed, &["add", "--all"]);
        git(
            &seed,
            &["commit", "--quiet", "-m", &format!("commit {commit}")],
        );
    }
    git(&seed, &["push", "--quiet", &bare.to_string_lossy(), "main"]);
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() {
    let (files, commits, rounds) = (
        env_usize("BENCH_FILES", 300),
        env_usize("BENCH_COMMITS", 20),
        env_usize("BENCH_ROUNDS", 7).max(1),
    );
    let root = tempfile::tempdir().expect("a temporary directory");
    let setup = Instant::now();
    for repo in REPOS {
        remote(root.path(), repo, files, commits);
    }
    let setup = setup.elapsed();
    let git_url = format!("file://{}", root.path().join("git").display());
    let deliverer = Deliverer {
        github: Some(
            GithubClient::new("http://127.0.0.1:9", "unused".to_owned().into()).expect("a client"),
        ),
        git_url: git_url.clone(),
        remotes: gatehouse_runner::Remotes::default(),
        author_name: "Gatehouse".into(),
        author_email: "gatehouse@localhost".into(),
        mirrors: None,
    };
    let repositories: Vec<RepositoryCheckout> = REPOS
        .iter()
        .map(|repo| RepositoryCheckout {
            repo: (*repo).into(),
            branch: None,
            mode: RepositoryMode::Auto,
            branch_name: None,
            url: None,
            forge: None,
            path: None,
            history: Default::default(),
        })
        .collect();

    let (mut prepared, mut cloned) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let run = root.path().join(format!("runs/{round}"));
        let begun = Instant::now();
        prepare_workspace(&deliverer, &run, &repositories, "gatehouse/1-bench")
            .await
            .expect("prepared");
        prepared.push(begun.elapsed());

        let plain = root.path().join(format!("plain/{round}"));
        std::fs::create_dir_all(&plain).expect("dir");
        let begun = Instant::now();
        for repo in REPOS {
            let url = format!("{git_url}/{repo}.git");
            let name = repo.rsplit('/').next().unwrap_or(repo);
            git(&plain, &["clone", "--quiet", &url, name]);
        }
        cloned.push(begun.elapsed());
        // Each round on a clean slate: the page cache stays warm for both.
        let _ = std::fs::remove_dir_all(&run);
        let _ = std::fs::remove_dir_all(&plain);
    }
    let (prepare, clone) = (median(prepared), median(cloned));
    let ratio = prepare.as_secs_f64() / clone.as_secs_f64();
    println!(
        "workspace preparation, 3 repositories of {files} files over {commits} commits, {rounds} rounds (remotes made in {:.1} s):",
        setup.as_secs_f64()
    );
    println!("  3 × git clone (baseline)   p50 {:>8.1} ms", millis(clone));
    println!(
        "  workspace preparation      p50 {:>8.1} ms   ratio {ratio:.2}×",
        millis(prepare)
    );
    if let Ok(path) = std::env::var("GATEHOUSE_BENCH_JSON") {
        let figures = serde_json::json!({
            "bench": "workspace",
            "repositories": REPOS.len(),
            "files": files,
            "commits": commits,
            "rounds": rounds,
            "clone_p50_ms": millis(clone),
            "prepare_p50_ms": millis(prepare),
            "ratio": ratio,
        });
        std::fs::write(&path, format!("{figures:#}\n")).expect("writing the figures");
    }
}
