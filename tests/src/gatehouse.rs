//! The one end-to-end harness, as rust-lang/bors has `BorsTester`: a whole Gatehouse built
//! with the same [`Fleet`] as `gatehouse up`, on a test database and data directory, with
//! fake GitHub, Slack and Discord beside it, and verbs that act as the outside world does
//! (request a run, decide a gate, deliver a webhook, mention the bot, click a button) and
//! wait for what should follow. The API client is in `gatehouse/api.rs`, the chat verbs in
//! `gatehouse/chat.rs`, the GitHub ones in `gatehouse/github.rs`.
//!
//! ```ignore
//! let gh = Gatehouse::builder(Backend::Sqlite).sop("review", REVIEW).chat().start().await;
//! gh.slack_mention("Ev1", REQUESTS, ANA, "<@U0GATEHOUSE> fix the login page").await;
//! let run = gh.run_with_status("waiting").await;
//! gh.stop().await;
//! ```

pub mod api;
pub mod chat;
pub mod console;
pub mod github;

use std::sync::Arc;
use std::time::Duration;

use ed25519_dalek::SigningKey;
use gatehouse_blobs::LocalBlobs;
use gatehouse_bus::{Bus, InProcessBus, RelayOptions};
use gatehouse_events::{
    Actor, Channel, Envelope, Event, GateDecision, GateDecisionKind, RunCommand, RunCommandKind,
};
use gatehouse_fleet::Fleet;
use gatehouse_github::{GithubClient, OAuthApp};
use gatehouse_ingest::{
    ApiState, BOOTSTRAP_ADMIN, ConsoleSettings, People, Person, Scope, Scopes, Trigger,
};
use gatehouse_notifier::Notifier;
use gatehouse_project::{ProjectConfig, Projects};
use gatehouse_runner::{Runner, RunnerOptions};
use gatehouse_sandbox::{ProcessSandbox, Sandbox};
use gatehouse_scheduler::AssistantSettings;
use gatehouse_sop::{Catalog, Library};
use gatehouse_store::RunRow;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::fake_discord::FakeDiscord;
use crate::fake_slack::FakeSlack;
use crate::{Backend, TestDb};
use gatehouse_fake_forge::github::FakeGithub;

/// Gatehouse running for one test. The fakes always run; the services talk to them only
/// when the builder asked for [`GatehouseBuilder::chat`] or [`GatehouseBuilder::github`].
pub struct Gatehouse {
    pub db: TestDb,
    /// The data directory: SOP files, runs' workspaces and artifacts, bare repositories.
    pub data: tempfile::TempDir,
    /// Ingest's state, for tests that call it directly (reconciliation).
    pub api: ApiState,
    /// Ingest's routes on loopback, without the `/api/v1` suffix.
    pub url: String,
    pub http: reqwest::Client,
    pub github: FakeGithub,
    /// A client of the fake GitHub, as the services use it.
    pub client: GithubClient,
    pub slack: FakeSlack,
    pub discord: FakeDiscord,
    /// Signs Discord interactions; ingest knows its public key.
    pub key: SigningKey,
    shutdown: CancellationToken,
    fleet: Fleet,
}

/// An adjustment of the runner's options.
type Configure = Box<dyn FnOnce(&mut RunnerOptions)>;

/// Configuration of a [`Gatehouse`] before it starts.
pub struct GatehouseBuilder {
    backend: Backend,
    on: Option<(TestDb, tempfile::TempDir)>,
    bus: Option<Arc<dyn Bus>>,
    sops: Vec<(String, String)>,
    people: Vec<Person>,
    projects: Vec<ProjectConfig>,
    chat: bool,
    triggers: Option<Vec<Trigger>>,
    process_deliveries: bool,
    slack: Option<FakeSlack>,
    discord: Option<FakeDiscord>,
    fake_github: Option<FakeGithub>,
    sandbox: Arc<dyn Sandbox>,
    lease: Duration,
    options: Vec<Configure>,
    assistant: Option<AssistantSettings>,
    github_sign_in: bool,
    public_url: bool,
    scheduler: bool,
}

/// Where the console says it is reached when GitHub sign-in is on: GitHub's redirect
/// back goes there; tests follow it to `url` themselves.
pub const CONSOLE_PUBLIC_URL: &str = "http://console.test";

/// `server.public_url` otherwise: the notifier links cards to it, and with chat wired,
/// ingest knows it too (`@gatehouse login` sends links there). Nothing serves it; tests take
/// the path and follow it to `url`.
pub const PUBLIC_URL: &str = "https://gatehouse.test";

impl Gatehouse {
    /// A Gatehouse on a new database of `backend`, to be configured.
    pub fn builder(backend: Backend) -> GatehouseBuilder {
        GatehouseBuilder {
            backend,
            on: None,
            bus: None,
            sops: Vec::new(),
            people: Vec::new(),
            projects: Vec::new(),
            chat: false,
            triggers: None,
            process_deliveries: true,
            slack: None,
            discord: None,
            fake_github: None,
            sandbox: Arc::new(ProcessSandbox::default()),
            lease: Duration::from_secs(2),
            options: Vec::new(),
            assistant: None,
            github_sign_in: false,
            public_url: true,
            scheduler: true,
        }
    }

    /// A Gatehouse on an existing database and data directory, as a restart finds them.
    pub fn builder_on(db: TestDb, data: tempfile::TempDir) -> GatehouseBuilder {
        let mut builder = Self::builder(Backend::Sqlite);
        builder.on = Some((db, data));
        builder
    }

    /// Writes `event` to the outbox, as a service would emit it.
    pub async fn emit(&self, event: Event) {
        let mut tx = self.db.store.begin().await.unwrap();
        tx.append_outbox(&Envelope::new("test", &event, None).unwrap())
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }

    /// A token for `person` with `scopes` (expiring at `expires_at`), written to the store as
    /// `gatehouse token create` would have it made by the administrator; returns its secret.
    pub async fn stored_token(
        &self,
        person: &str,
        scopes: &[Scope],
        expires_at: Option<chrono::DateTime<chrono::Utc>>,
    ) -> String {
        let secret = gatehouse_ingest::new_token();
        let hash = gatehouse_ingest::hash_token(&secret);
        let name = format!("{person}-{}", &hash[..8]);
        let scopes = Scopes::of(scopes.iter().copied()).to_stored();
        self.db
            .store
            .create_token(&gatehouse_store::NewToken {
                name: &name,
                person,
                created_by: BOOTSTRAP_ADMIN,
                scopes: &scopes,
                expires_at,
                hash: &hash,
                for_agent: false,
            })
            .await
            .expect("the store")
            .expect("a new token name");
        secret
    }

    /// Requests a run of `sop` as bob.
    pub async fn request(&self, sop: &str) -> Uuid {
        crate::request_runs(&self.db.store, sop, 1, "bob").await[0]
    }

    /// Decides a gate as ana (a lead).
    pub async fn decide(
        &self,
        run_id: Uuid,
        node: &str,
        attempt: u32,
        decision: GateDecisionKind,
        comment: Option<&str>,
    ) {
        self.emit(Event::GateDecision(GateDecision {
            run_id,
            node: node.into(),
            attempt,
            decision,
            comment: comment.map(Into::into),
            actor: actor("ana"),
            groups: vec!["leads".into()],
        }))
        .await;
    }

    /// Sends a run command as ana.
    pub async fn command(&self, run_id: Uuid, command: RunCommandKind) {
        self.emit(Event::RunCommand(RunCommand {
            run_id,
            command,
            actor: actor("ana"),
        }))
        .await;
    }

    /// Waits until the run's state satisfies `done`.
    pub async fn wait(
        &self,
        run_id: Uuid,
        what: &str,
        done: impl Fn(&RunRow, &serde_json::Value) -> bool,
    ) -> serde_json::Value {
        for _ in 0..1500 {
            if let Some(row) = self.db.store.run(run_id).await.unwrap() {
                let state: serde_json::Value = serde_json::from_str(&row.state).unwrap();
                if done(&row, &state) {
                    return state;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let row = self.db.store.run(run_id).await.unwrap();
        panic!("timed out waiting for {what}: {row:#?}");
    }

    /// Waits until the run has `status`.
    pub async fn wait_run(&self, run_id: Uuid, status: &str) -> serde_json::Value {
        self.wait(run_id, status, |row, _| row.status == status)
            .await
    }

    /// Polls `f` until it gives a value (ten seconds at most).
    pub async fn until<T>(&self, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        for _ in 0..1000 {
            if let Some(value) = f() {
                return value;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("timed out waiting for {what}");
    }

    /// Waits until the notifier has recorded `message_id` as a message a conversation
    /// posted on `platform` (ten seconds at most): only then does a reply to it continue
    /// that conversation. A person replies later than that; a test may not.
    pub async fn until_recorded(&self, platform: &str, message_id: &str) {
        for _ in 0..1000 {
            let mut tx = self.db.store.begin().await.unwrap();
            let recorded = tx
                .conversation_of_posted(platform, message_id)
                .await
                .unwrap();
            drop(tx);
            if recorded.is_some() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("timed out waiting for {platform} message {message_id} to be recorded as posted");
    }

    /// The newest run `matches` picks, once there is one.
    pub async fn until_run(&self, matches: impl Fn(&RunRow) -> bool) -> Uuid {
        for _ in 0..1000 {
            let runs = self.db.store.runs(None, &[], 100).await.unwrap();
            if let Some(run) = runs.iter().find(|r| matches(r)) {
                return run.id;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "no run matched: {:?}",
            self.db.store.runs(None, &[], 100).await.unwrap()
        );
    }

    /// The only run, once it has `status`.
    pub async fn run_with_status(&self, status: &str) -> RunRow {
        for _ in 0..1000 {
            let runs = self.db.store.runs(None, &[], 10).await.unwrap();
            if let [run] = runs.as_slice()
                && run.status == status
            {
                return run.clone();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "no single run became {status}: {:?}",
            self.db.store.runs(None, &[], 10).await.unwrap()
        );
    }

    /// The node's attempt in `run`, once it waits for approval (or the state `status`).
    pub async fn node(&self, run: Uuid, node: &str, status: &str, attempt: u32) {
        for _ in 0..1000 {
            // A run just requested may not be created yet.
            let Some(row) = self.db.store.run(run).await.unwrap() else {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            let state: serde_json::Value = serde_json::from_str(&row.state).unwrap();
            let n = &state["nodes"][node];
            if n["status"] == status && n["attempt"] == attempt {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{node} never became {status} at attempt {attempt}");
    }

    /// The text of a stored artifact.
    pub fn artifact(&self, run_id: Uuid, node: &str, attempt: u32, name: &str) -> String {
        std::fs::read_to_string(
            self.data
                .path()
                .join(format!("runs/{run_id}/artifacts/{node}/{attempt}/{name}")),
        )
        .unwrap()
    }

    /// Starts processing stored webhook deliveries, as a restarted process does at start
    /// (for a Gatehouse built with [`GatehouseBuilder::deliveries_later`]).
    pub fn process_deliveries(&self) {
        tokio::spawn(gatehouse_ingest::process_deliveries(
            self.api.clone(),
            self.shutdown.clone(),
        ));
    }

    /// Stops the services without cleaning up, as a crash would leave the database and
    /// the data directory, for [`Gatehouse::builder_on`] to start again.
    pub async fn halt(self) -> (TestDb, tempfile::TempDir) {
        self.fleet.stop().await;
        (self.db, self.data)
    }

    /// Ends the services at once, as kill -9 would: nothing in flight is finished or handed
    /// back. The database and data directory stay for [`Gatehouse::builder_on`].
    pub fn crash(self) -> (TestDb, tempfile::TempDir) {
        self.shutdown.cancel();
        self.fleet.abort();
        (self.db, self.data)
    }

    /// Stops the services and drops the database.
    pub async fn stop(self) {
        let (db, _) = self.halt().await;
        db.cleanup().await;
    }
}

impl GatehouseBuilder {
    /// Runs on `bus` rather than the in-process bus on the test database.
    pub fn bus(mut self, bus: Arc<dyn Bus>) -> Self {
        self.bus = Some(bus);
        self
    }

    /// An SOP file `NAME.yaml` in the data directory's `sops/`.
    pub fn sop(mut self, name: &str, text: &str) -> Self {
        self.sops.push((name.to_owned(), text.to_owned()));
        self
    }

    /// Several SOP files, as [`GatehouseBuilder::sop`].
    pub fn sops(self, sops: &[(&str, &str)]) -> Self {
        sops.iter().fold(self, |b, (name, text)| b.sop(name, text))
    }

    /// The projects of `[[projects]]`, written as the configuration file writes them.
    pub fn projects(mut self, toml: &str) -> Self {
        #[derive(serde::Deserialize)]
        struct File {
            projects: Vec<ProjectConfig>,
        }
        let file: File = toml::from_str(toml).expect("[[projects]] parse");
        self.projects = file.projects;
        self
    }

    /// The people of `[[people]]`.
    pub fn people(mut self, people: Vec<Person>) -> Self {
        self.people = people;
        self
    }

    /// Wires Slack and Discord: ingest verifies their requests, the notifier posts to the
    /// fakes (see [`chat`] for the channels and people).
    pub fn chat(mut self) -> Self {
        self.chat = true;
        self
    }

    /// Wires GitHub with `triggers`: webhooks, the notifier's comments and the runner's
    /// delivery to a bare repository of [`github::REPO`] (see [`github`]).
    pub fn github(mut self, triggers: Vec<Trigger>) -> Self {
        self.triggers = Some(triggers);
        self
    }

    /// Starts no processor for deliveries left pending until
    /// [`Gatehouse::process_deliveries`]: those a crash left (see
    /// [`Gatehouse::leave_github_pending`]) or that arrived behind them wait.
    pub fn deliveries_later(mut self) -> Self {
        self.process_deliveries = false;
        self
    }

    /// A fake Slack of the test's own making (one that fails, say).
    pub fn slack(mut self, slack: FakeSlack) -> Self {
        self.slack = Some(slack);
        self
    }

    /// A fake GitHub of the test's own making (the one a crashed Gatehouse used, say).
    pub fn fake_github(mut self, github: FakeGithub) -> Self {
        self.fake_github = Some(github);
        self
    }

    /// A fake Discord of the test's own making.
    pub fn discord(mut self, discord: FakeDiscord) -> Self {
        self.discord = Some(discord);
        self
    }

    /// Runs nodes on `sandbox` instead of local processes.
    pub fn sandbox(mut self, sandbox: Arc<dyn Sandbox>) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// The runner's lease on a job (2 s unless told: a killed runner's job comes back soon).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Talks in chat threads as `[assistant]` does (its role configured with
    /// [`GatehouseBuilder::runner`]); every configured role may be asked.
    pub fn assistant(mut self, settings: AssistantSettings) -> Self {
        self.assistant = Some(settings);
        self
    }

    /// People may sign in to the console with the fake GitHub's OAuth App.
    pub fn github_sign_in(mut self) -> Self {
        self.github_sign_in = true;
        self
    }

    /// Leaves `server.public_url` unset: the notifier links to no console page, and ingest
    /// cannot send sign-in links.
    pub fn no_public_url(mut self) -> Self {
        self.public_url = false;
        self
    }

    /// Runs no scheduler: what is asked for is recorded and sent, and nothing acts on it
    /// until a Gatehouse with one starts on the same database.
    pub fn without_scheduler(mut self) -> Self {
        self.scheduler = false;
        self
    }

    /// Adjusts the runner's options (roles, profiles, prices, limits). A `data_dir` of its
    /// own makes it another machine's runner: its disk apart, the blob store shared.
    pub fn runner(mut self, configure: impl FnOnce(&mut RunnerOptions) + 'static) -> Self {
        self.options.push(Box::new(configure));
        self
    }

    /// Starts everything and serves ingest on a free loopback port.
    pub async fn start(self) -> Gatehouse {
        let (db, data) = match self.on {
            Some(on) => on,
            None => (
                TestDb::new(self.backend).await,
                tempfile::tempdir().unwrap(),
            ),
        };
        let sop_dir = data.path().join("sops");
        std::fs::create_dir_all(&sop_dir).unwrap();
        for (name, text) in &self.sops {
            std::fs::write(sop_dir.join(format!("{name}.yaml")), text).unwrap();
        }
        // As `up` loads them: again when the files change ([`Gatehouse::write_sop`]).
        let read = vec![sop_dir.clone()];
        let catalog = Arc::new(Library::loading(
            read.clone(),
            Box::new(move || Catalog::load(&read)),
        ));
        let errors = catalog.invalid();
        assert!(errors.is_empty(), "{errors:?}");
        let bus = self
            .bus
            .unwrap_or_else(|| Arc::new(InProcessBus::in_place(db.store.clone())));
        let github = match self.fake_github {
            Some(github) => github,
            None => FakeGithub::start().await,
        };
        let client = GithubClient::new(&github.url, github::TOKEN.into()).unwrap();
        let slack = match self.slack {
            Some(slack) => slack,
            None => FakeSlack::start().await,
        };
        let discord = match self.discord {
            Some(discord) => discord,
            None => FakeDiscord::start().await,
        };
        let key = SigningKey::generate(&mut rand::rngs::OsRng);

        let mut api = ApiState::new(db.store.clone(), catalog.clone())
            .with_data_dir(data.path())
            .with_people(People::new(self.people));
        if self.github_sign_in {
            api = api.with_console(ConsoleSettings {
                public_url: Some(CONSOLE_PUBLIC_URL.into()),
                github: Some(OAuthApp::new(
                    &github.url,
                    &github.url,
                    gatehouse_fake_forge::github::oauth::CLIENT_ID,
                    gatehouse_fake_forge::github::oauth::CLIENT_SECRET.into(),
                )),
                ..ConsoleSettings::default()
            });
        } else if self.chat && self.public_url {
            api = api.with_console(ConsoleSettings {
                public_url: Some(PUBLIC_URL.into()),
                ..ConsoleSettings::default()
            });
        }
        let projects = Arc::new(Projects::new(self.projects).expect("valid [[projects]]"));
        api = api.with_projects(projects.clone());
        let mut options = RunnerOptions {
            concurrency: 2,
            ack_wait: self.lease,
            ..RunnerOptions::new(data.path().to_owned())
        };
        // The notifier runs where there is somewhere to post: GitHub, chat or both.
        let wired = self.chat || self.triggers.is_some();
        let github_client = self.triggers.is_some().then(|| client.clone());
        let mut notifier =
            Notifier::new(db.store.clone(), github_client).with_data_dir(data.path());
        if self.public_url {
            notifier = notifier.with_public_url(PUBLIC_URL);
        }
        let project_repos: Vec<&str> = projects.repositories().into_iter().collect();
        let delivers = self.triggers.is_some() || !projects.is_empty();
        if let Some(triggers) = self.triggers {
            api = api
                .with_github(github::settings(triggers, &project_repos))
                .with_github_client(client.clone());
        }
        if delivers {
            options.delivery = Some(github::deliverer(data.path(), &client, &project_repos));
        }
        if self.chat {
            api = api.with_chat(chat::settings(&slack, &key));
            notifier = notifier.with_chat(chat::outputs(&slack, &discord));
        }
        for configure in self.options {
            configure(&mut options);
        }
        let roles = options
            .roles
            .iter()
            .map(|(name, role)| (name.clone(), role.askable))
            .collect();
        // The data directory's blob store, wherever the runner keeps its own files: a runner
        // given a directory of its own (`options.data_dir`) is another machine's, reaching
        // the same store.
        let blobs = Arc::new(LocalBlobs::new(data.path().join("blobs")));
        let runner = Runner::new(db.store.clone(), self.sandbox, options).with_blobs(blobs);

        let shutdown = CancellationToken::new();
        let mut fleet = Fleet::builder(db.store.clone(), bus)
            .catalog(catalog)
            .projects(projects)
            .relay(RelayOptions {
                poll: Duration::from_millis(50),
                ..RelayOptions::default()
            })
            .runner(runner)
            .ingest(api.clone());
        if self.scheduler {
            fleet = fleet.scheduler();
        }
        if let Some(assistant) = self.assistant {
            fleet = fleet.assistant(assistant, roles);
        }
        if wired {
            fleet = fleet.notifier(notifier);
            if self.process_deliveries {
                fleet = fleet.process_deliveries();
            }
        }
        let fleet = fleet.spawn(shutdown.clone());
        let url = crate::serve_routes(fleet.routes().unwrap(), shutdown.clone()).await;
        // As served: what the test hands its own deliveries to (the Discord gateway's).
        let api = fleet.api().cloned().unwrap_or(api);
        Gatehouse {
            db,
            data,
            api,
            url,
            http: reqwest::Client::new(),
            github,
            client,
            slack,
            discord,
            key,
            shutdown,
            fleet,
        }
    }
}

/// An API actor who is the person `person`.
pub fn actor(person: &str) -> Actor {
    Actor {
        channel: Channel::Api,
        handle: person.into(),
        person: Some(person.into()),
    }
}

/// A person of `[[people]]` with no chat or GitHub identity.
pub fn person(id: &str, groups: &[&str]) -> Person {
    Person {
        id: id.into(),
        github: None,
        slack: None,
        discord: None,
        groups: groups.iter().map(|g| g.to_string()).collect(),
    }
}
