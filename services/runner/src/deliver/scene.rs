//! What delivery tests stand on: bare repositories in a temporary directory standing in for
//! GitHub's git, a small fake of the GitHub API calls delivery makes (the repository's
//! default branch; pull requests listed, opened and edited), and a run's directory.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use gatehouse_events::{DeliverMode, DeliverSpec, RepositoryCheckout, RepositoryMode};
use serde_json::{Value, json};

use super::approval::Approval;
use super::checkouts::{self, Checkout};
use super::prepare::Layout;
use super::*;

pub(crate) const TOKEN: &str = "ghs_never-seen-by-the-workspace";
pub(crate) const BRANCH: &str = "gatehouse/1-fix-it";

/// Git for setting the scene, untouched by the machine's configuration.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@localhost"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A pull request the fake holds.
#[derive(Debug, Clone)]
pub(crate) struct Pull {
    pub repo: String,
    pub number: u64,
    pub head: String,
    pub base: String,
    pub body: String,
}

/// The GitHub API calls delivery makes, on loopback.
#[derive(Clone, Default)]
pub(crate) struct FakeGithub {
    pub pulls: Arc<Mutex<Vec<Pull>>>,
}

impl FakeGithub {
    /// Starts one; returns its URL.
    pub(crate) fn start(&self) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let pulls = self.pulls.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let pulls = pulls.clone();
                std::thread::spawn(move || serve(stream, &pulls));
            }
        });
        url
    }

    pub(crate) fn pulls(&self) -> Vec<Pull> {
        self.pulls.lock().unwrap().clone()
    }
}

fn serve(mut stream: std::net::TcpStream, pulls: &Mutex<Vec<Pull>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut head = String::new();
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
        head.push_str(&line);
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut words = head.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (status, answer) = match (method, parts.as_slice()) {
        ("GET", ["repos", owner, name]) => (
            200,
            json!({"full_name": format!("{owner}/{name}"), "default_branch": "main"}),
        ),
        ("GET", ["repos", owner, name, "pulls"]) => {
            let repo = format!("{owner}/{name}");
            let wanted = query
                .split('&')
                .find_map(|q| q.strip_prefix("head="))
                .unwrap_or("");
            let wanted = wanted.replace("%3A", ":").replace("%2F", "/");
            let found: Vec<Value> = pulls
                .lock()
                .unwrap()
                .iter()
                .filter(|p| p.repo == repo && format!("{owner}:{}", p.head) == wanted)
                .map(|p| json!({"number": p.number}))
                .collect();
            (200, Value::Array(found))
        }
        ("POST", ["repos", owner, name, "pulls"]) => {
            let mut pulls = pulls.lock().unwrap();
            let number = 100 + pulls.len() as u64 + 1;
            pulls.push(Pull {
                repo: format!("{owner}/{name}"),
                number,
                head: body["head"].as_str().unwrap_or_default().into(),
                base: body["base"].as_str().unwrap_or_default().into(),
                body: body["body"].as_str().unwrap_or_default().into(),
            });
            (201, json!({"number": number}))
        }
        ("PATCH", ["repos", _, _, "pulls", number]) => {
            let number: u64 = number.parse().unwrap_or(0);
            let mut pulls = pulls.lock().unwrap();
            if let Some(pull) = pulls.iter_mut().find(|p| p.number == number) {
                pull.body = body["body"].as_str().unwrap_or_default().into();
            }
            (200, json!({"number": number}))
        }
        _ => (404, json!({"message": "Not Found"})),
    };
    let text = answer.to_string();
    let reason = if status < 300 { "OK" } else { "Not Found" };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}

/// Remotes under `git/`, a run's directory under `runs/r/`, and a deliverer between them.
pub(crate) struct Scene {
    pub tmp: tempfile::TempDir,
    pub deliverer: Deliverer,
    pub github: FakeGithub,
    /// The plan of the last preparation, which the record is held to.
    planned: Mutex<Vec<checkouts::Planned>>,
    /// Who delivers: a run, unless a test says a conversation.
    pub by: By,
    /// The secrets a delivery looks for; none unless a test says.
    pub secrets: crate::secrets::Secrets,
}

impl Scene {
    pub(crate) fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let github = FakeGithub::default();
        let deliverer = Deliverer {
            github: GithubClient::new(&github.start(), TOKEN.into()).unwrap(),
            git_url: format!("file://{}", tmp.path().join("git").display()),
            author_name: "Gatehouse".into(),
            author_email: "gatehouse@localhost".into(),
        };
        Self {
            tmp,
            deliverer,
            github,
            planned: Mutex::default(),
            by: By::Run(uuid::Uuid::nil()),
            secrets: crate::secrets::Secrets::default(),
        }
    }

    pub(crate) fn path(&self, relative: &str) -> PathBuf {
        self.tmp.path().join(relative)
    }

    /// The bare repository standing in for `repo` on GitHub.
    pub(crate) fn bare(&self, repo: &str) -> PathBuf {
        self.path(&format!("git/{repo}.git"))
    }

    /// A remote `repo` with a `README.md` on `main`, and `files` more.
    pub(crate) fn remote(&self, repo: &str, files: usize) -> PathBuf {
        let bare = self.bare(repo);
        std::fs::create_dir_all(&bare).unwrap();
        git(&bare, &["init", "--quiet", "--bare"]);
        let seed = self.path(&format!("seed/{repo}"));
        std::fs::create_dir_all(&seed).unwrap();
        git(&seed, &["init", "--quiet"]);
        std::fs::write(seed.join("README.md"), format!("{repo}\n")).unwrap();
        for n in 0..files {
            let file = seed.join(format!("src/{}/file{n}.txt", n % 10));
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, format!("{repo} {n}\n").repeat(20)).unwrap();
        }
        git(&seed, &["add", "--all"]);
        git(&seed, &["commit", "--quiet", "-m", "seed"]);
        git(&seed, &["push", "--quiet", &bare.to_string_lossy(), "main"]);
        bare
    }

    /// A clone of the remote `repo` for pushing to it as someone else would.
    pub(crate) fn someone_else(&self, repo: &str) -> PathBuf {
        let other = self.path(&format!("others/{repo}"));
        std::fs::create_dir_all(other.parent().unwrap()).unwrap();
        let (bare, dest) = (self.bare(repo), other.to_string_lossy().into_owned());
        git(
            self.tmp.path(),
            &["clone", "--quiet", &bare.to_string_lossy(), &dest],
        );
        other
    }

    pub(crate) fn workspace(&self) -> PathBuf {
        self.path("runs/r/workspace")
    }

    pub(crate) fn record(&self) -> PathBuf {
        self.path("runs/r/checkouts.json")
    }

    pub(crate) fn scratch(&self) -> PathBuf {
        self.path("runs/r/scratch")
    }

    /// Prepares the workspace with `repositories` (auto branch [`BRANCH`]).
    pub(crate) async fn prepare(
        &self,
        repositories: &[RepositoryCheckout],
    ) -> Result<Vec<Checkout>, String> {
        let planned = checkouts::plan(repositories, BRANCH)?;
        *self.planned.lock().unwrap() = planned.clone();
        let (workspace, record, scratch) = (self.workspace(), self.record(), self.scratch());
        let layout = Layout {
            workspace: &workspace,
            record: &record,
            scratch: &scratch,
        };
        let mut log = Vec::new();
        let prepared = self.deliverer.prepare(&planned, &layout, &mut log).await;
        assert!(!log.join("\n").contains(TOKEN));
        prepared
    }

    /// The record of the prepared workspace, held to its plan.
    pub(crate) fn checkouts(&self) -> Result<Vec<Checkout>, String> {
        let planned = self.planned.lock().unwrap().clone();
        checkouts::load(&self.record(), &planned).map(|loaded| loaded.expect("prepared"))
    }

    /// Delivers the prepared workspace in `mode`, into `main` when `direct`.
    pub(crate) async fn deliver(
        &self,
        mode: DeliverMode,
        approval: Option<&Approval>,
    ) -> (Result<Vec<Delivered>, String>, Vec<String>) {
        let checkouts = match self.checkouts() {
            Ok(checkouts) => checkouts,
            Err(reason) => return (Err(reason), Vec::new()),
        };
        let spec = DeliverSpec {
            mode,
            branch: (mode == DeliverMode::Direct).then(|| "main".to_owned()),
        };
        let (workspace, scratch) = (self.workspace(), self.scratch());
        let delivery = Delivery {
            workspace: &workspace,
            scratch: &scratch,
            checkouts: &checkouts,
            subject: Subject {
                by: self.by,
                title: "Fix it",
                issue: Some(("acme/api", 1)),
            },
            approval,
            spec: &spec,
            draft: false,
            secrets: &self.secrets,
        };
        let mut log = Vec::new();
        let delivered = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            self.deliverer.deliver(&delivery, &mut log),
        )
        .await
        .expect("delivery hung");
        assert!(!log.join("\n").contains(TOKEN), "{log:?}");
        (delivered, log)
    }

    /// The approval of the workspace's trees as they are now, by gate `review`.
    pub(crate) async fn approve(&self) -> Approval {
        let checkouts = self.checkouts().unwrap();
        let mut trees = BTreeMap::new();
        for checkout in &checkouts {
            let dir = checkout.path(&self.workspace());
            let tree = trees::tree(&dir, &self.scratch(), trees::Objects::Scratch)
                .await
                .unwrap();
            trees.insert(checkout.repo.clone(), tree);
        }
        Approval {
            gate: "review".into(),
            attempt: 1,
            trees,
        }
    }
}

pub(crate) fn checkout(
    repo: &str,
    mode: RepositoryMode,
    branch_name: Option<&str>,
) -> RepositoryCheckout {
    RepositoryCheckout {
        repo: repo.into(),
        branch: None,
        mode,
        branch_name: branch_name.map(Into::into),
    }
}

pub(crate) fn auto(repo: &str) -> RepositoryCheckout {
    checkout(repo, RepositoryMode::Auto, None)
}
