//! The harness of the after-the-pull-request tests: Gatehouse with the `loop` SOP, run once
//! on issue #1 to its pull request, and verbs that shape GitHub's real payloads about it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use gatehouse_agent::{Executor, Role};
use gatehouse_sandbox::ProcessSandbox;
use gatehouse_scheduler::AssistantSettings;

use gatehouse_fake_forge::git::git;
use gatehouse_ingest::{Person, Trigger};
use gatehouse_tests::gatehouse::github::REPO;
use gatehouse_tests::{Backend, Gatehouse, GatehouseBuilder};
use serde_json::{Value, json};
use uuid::Uuid;

/// The project: the fixtures' repository; ana and the lead may run, bob may only read.
pub const PROJECT: &str = r#"
[[projects]]
name = "hello"
repositories = [{ repo = "Codertocat/Hello-World" }]
run = ["ana", "lead"]
read = ["ana", "bob"]
"#;

/// Appends what it is told to `WORK.md` (waiting first while `$HOLD` exists), and
/// delivers; reviews, failing checks and conflicts go back to `implement`.
fn sop(hold: &std::path::Path) -> String {
    format!(
        r#"name: loop
nodes:
  implement:
    kind: script
    run: 'while [ -e {hold} ]; do sleep 0.05; done; printf "%s\n---\n" "${{GATEHOUSE_REWORK_COMMENT:-first pass}}" >> WORK.md'
  deliver:
    kind: deliver
    needs: [implement]
    on_review: {{ send_back: implement, max: 2 }}
    on_checks_failed: {{ send_back: implement, max: 1, approvers: [ana] }}
    on_conflict: {{ send_back: implement, max: 1 }}
"#,
        hold = hold.display()
    )
}

/// The people: ana is Codertocat (the fixtures' author), bob is bob-gh, the lead lead-gh.
pub fn people() -> Vec<Person> {
    let person = |id: &str, login: &str| Person {
        id: id.into(),
        github: Some(login.into()),
        slack: None,
        discord: None,
        groups: Vec::new(),
    };
    vec![
        person("ana", "Codertocat"),
        person("bob", "bob-gh"),
        person("lead", "lead-gh"),
    ]
}

pub use gatehouse_tests::gatehouse::github::reported_fixture as fixture;

/// Gatehouse on a fresh database and data directory, with an assistant whose CLI is the
/// shell script `script` (given its prompt file; `env` beside `PATH`), run in the process
/// sandbox.
pub async fn with_script_assistant(
    backend: Backend,
    script: &str,
    env: &[(&str, String)],
) -> GatehouseBuilder {
    let data = tempfile::tempdir().unwrap();
    let file = data.path().join("assistant.sh");
    std::fs::write(&file, script).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut vars = BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())]);
    vars.extend(env.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
    let assistant = Role {
        command: vec![file.display().to_string(), "{prompt_file}".into()],
        env: vars,
        ..Role::new(Executor::Command)
    };
    Gatehouse::builder_on(gatehouse_tests::TestDb::new(backend).await, data)
        .sandbox(Arc::new(ProcessSandbox::default()))
        .runner(move |options| {
            options.roles = BTreeMap::from([("assistant".to_owned(), assistant)]);
        })
        .assistant(AssistantSettings::new("assistant"))
}

/// The real `issues.labeled` payload, labelled `label` by the lead (who, having asked
/// for the work, may not approve it).
pub fn labeled(label: &str) -> Value {
    let mut payload = fixture("issues.labeled");
    payload["label"]["name"] = json!(label);
    payload["sender"]["login"] = json!("lead-gh");
    payload
}

/// Gatehouse with `loop` on the label `loop`, the project and its people.
fn builder(builder: GatehouseBuilder, hold: &std::path::Path) -> GatehouseBuilder {
    let trigger = Trigger::new("loop", "loop", &["Codertocat/*".into()], false, false).unwrap();
    builder
        .sop("loop", &sop(hold))
        .people(people())
        .projects(PROJECT)
        .github(vec![trigger])
}

/// Gatehouse after `loop` ran on issue #1 and opened its pull request.
pub struct Hub {
    pub gh: Gatehouse,
    pub run: Uuid,
    /// The pull request's number.
    pub pull: u64,
    /// Its work branch.
    branch: String,
    /// The bare repository delivered to.
    bare: PathBuf,
    /// While this file exists, `implement` waits.
    hold: PathBuf,
    _dir: tempfile::TempDir,
}

impl Hub {
    /// Labels issue #1 `loop` and waits for its run to open the pull request.
    pub async fn delivered(backend: Backend) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let hold = dir.path().join("hold");
        let gh = builder(Gatehouse::builder(backend), &hold).start().await;
        gh.github.follow_git(&gh.data.path().join("git"));
        gh.deliver_github("issues", "label-loop", &labeled("loop"))
            .await;
        let run = gh.runs(1, "succeeded", 1).await[0].id;
        let pulls = gh.github.pulls();
        assert_eq!(pulls.len(), 1, "{pulls:?}");
        let bare = gh.data.path().join(format!("git/{REPO}.git"));
        Self {
            run,
            pull: pulls[0].number,
            branch: pulls[0].head.clone(),
            bare,
            hold,
            gh,
            _dir: dir,
        }
    }

    /// Kills every service at once, as kill -9 would, and starts them again on the same
    /// database, data directory and GitHub.
    pub async fn crash_and_restart(self) -> Self {
        let github = self.gh.github.clone();
        let (db, data) = self.gh.crash();
        let gh = builder(Gatehouse::builder_on(db, data), &self.hold)
            .fake_github(github)
            .start()
            .await;
        Self { gh, ..self }
    }

    /// `WORK.md` on the pull request's branch, as last pushed.
    pub fn work(&self) -> String {
        git(&self.bare, &["show", &format!("{}:WORK.md", self.branch)])
    }

    /// The pull request's head commit.
    pub fn head(&self) -> String {
        git(&self.bare, &["rev-parse", &self.branch])
            .trim()
            .to_owned()
    }

    /// The base branch's commit.
    pub fn base(&self) -> String {
        git(&self.bare, &["rev-parse", "main"]).trim().to_owned()
    }

    /// `implement` waits until [`Hub::release_rework`].
    pub fn hold_rework(&self) {
        std::fs::write(&self.hold, "").unwrap();
    }

    pub fn release_rework(&self) {
        std::fs::remove_file(&self.hold).unwrap();
    }

    /// The real `pull_request_review.submitted` payload: review `id` by `login` in
    /// `state` on the pull request.
    pub fn review(&self, id: u64, login: &str, state: &str, body: &str) -> Value {
        let mut payload = fixture("pull_request_review.submitted");
        payload["review"]["id"] = json!(id);
        payload["review"]["state"] = json!(state);
        payload["review"]["body"] = json!(body);
        payload["review"]["user"]["login"] = json!(login);
        payload["sender"]["login"] = json!(login);
        self.on_pull(&mut payload["pull_request"]);
        payload
    }

    /// The real `pull_request_review_comment.created` payload: line comment `id` (of
    /// review `review`) by `login` on the pull request.
    pub fn review_comment(&self, id: u64, review: u64, login: &str, body: &str) -> Value {
        let mut payload = fixture("pull_request_review_comment.created");
        payload["comment"]["id"] = json!(id);
        payload["comment"]["pull_request_review_id"] = json!(review);
        payload["comment"]["body"] = json!(body);
        payload["comment"]["user"]["login"] = json!(login);
        payload["sender"]["login"] = json!(login);
        self.on_pull(&mut payload["pull_request"]);
        payload
    }

    /// The real `check_suite.completed` payload for `head`, concluding `conclusion`.
    pub fn check_suite(&self, head: &str, conclusion: &str) -> Value {
        let mut payload = fixture("check_suite.completed");
        payload["check_suite"]["head_sha"] = json!(head);
        payload["check_suite"]["conclusion"] = json!(conclusion);
        payload["check_suite"]["pull_requests"] = json!([self.check_pull(head)]);
        payload
    }

    /// The real `workflow_run.completed` payload for `head`.
    pub fn workflow_run(&self, head: &str, conclusion: &str) -> Value {
        let mut payload = fixture("workflow_run.completed.with-pull-requests");
        payload["workflow_run"]["head_sha"] = json!(head);
        payload["workflow_run"]["conclusion"] = json!(conclusion);
        payload["workflow_run"]["pull_requests"] = json!([self.check_pull(head)]);
        // The fixture's run is in octo-org's repository.
        payload["repository"]["full_name"] = json!(REPO);
        payload
    }

    /// The real `push` payload: `branch` moved to `after`.
    pub fn push(&self, branch: &str, after: &str) -> Value {
        let mut payload = fixture("push.with-new-branch");
        payload["ref"] = json!(format!("refs/heads/{branch}"));
        payload["after"] = json!(after);
        payload["created"] = json!(false);
        payload
    }

    /// The requirement as `GET /requirements/{id}` shows it to ana.
    pub async fn requirement_shown(&self) -> Value {
        let id = self.gh.requirement(1).await.id;
        self.get(&format!("/requirements/{id}")).await
    }

    /// The run as `GET /runs/{id}` shows it to ana.
    pub async fn run_shown(&self) -> Value {
        self.get(&format!("/runs/{}", self.run)).await
    }

    /// GET `path` as ana.
    pub async fn get(&self, path: &str) -> Value {
        let ana = self
            .gh
            .stored_token("ana", &gatehouse_ingest::Scope::ALL, None)
            .await;
        self.gh.api_as(&ana).get(path).await.is(200)
    }

    fn on_pull(&self, pull: &mut Value) {
        pull["number"] = json!(self.pull);
        pull["head"]["ref"] = json!(self.branch);
        pull["head"]["sha"] = json!(self.head());
        pull["base"]["ref"] = json!("main");
        pull["base"]["sha"] = json!(self.base());
    }

    fn check_pull(&self, head: &str) -> Value {
        json!({
            "url": format!("https://api.github.com/repos/{REPO}/pulls/{}", self.pull),
            "id": 1,
            "number": self.pull,
            "head": { "ref": self.branch, "sha": head, "repo": { "id": 1, "url": "", "name": "Hello-World" } },
            "base": { "ref": "main", "sha": self.base(), "repo": { "id": 1, "url": "", "name": "Hello-World" } },
        })
    }
}
