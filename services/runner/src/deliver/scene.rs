//! What delivery tests stand on: the fake forge every test level shares (bare repositories
//! standing in for GitHub's git, and the fake GitHub API) with a run's directory beside it
//! and a deliverer between them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use gatehouse_events::{DeliverMode, DeliverSpec, RepositoryCheckout, RepositoryMode};
use gatehouse_fake_forge::Forge;

use super::approval::Approval;
use super::checkouts::{self, Checkout};
use super::prepare::Layout;
use super::*;

pub(crate) const TOKEN: &str = "ghs_never-seen-by-the-workspace";
pub(crate) const BRANCH: &str = "gatehouse/1-fix-it";

/// The one git helper of the tests, for setting the scene.
pub(crate) use gatehouse_fake_forge::git::git;

/// The forge's remotes and fake GitHub, a run's directory under `runs/r/` beside them, and
/// a deliverer between the two. The forge's verbs (`remote`, `bare`, `someone_else`,
/// `path`, `github`) are the scene's.
pub(crate) struct Scene {
    pub forge: Forge,
    pub deliverer: Deliverer,
    /// The plan of the last preparation, which the record is held to.
    planned: Mutex<Vec<checkouts::Planned>>,
    /// Who delivers: a run, unless a test says a conversation.
    pub by: By,
    /// The secrets a delivery looks for; none unless a test says.
    pub secrets: crate::secrets::Secrets,
}

impl std::ops::Deref for Scene {
    type Target = Forge;

    fn deref(&self) -> &Forge {
        &self.forge
    }
}

impl Scene {
    pub(crate) async fn new() -> Self {
        let forge = Forge::start().await;
        let deliverer = Deliverer {
            github: Some(GithubClient::new(&forge.github.url, TOKEN.into()).unwrap()),
            git_url: forge.git_url(),
            remotes: crate::remotes::Remotes::default(),
            author_name: "Gatehouse".into(),
            author_email: "gatehouse@localhost".into(),
            mirrors: Some(super::Mirrors::new(
                forge.path("mirrors"),
                super::MIRROR_LIMIT,
            )),
        };
        Self {
            forge,
            deliverer,
            planned: Mutex::default(),
            by: By::Run(uuid::Uuid::nil()),
            secrets: crate::secrets::Secrets::default(),
        }
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

    /// The runner's record of the workspace's files.
    pub(crate) fn local(&self) -> PathBuf {
        self.path("runs/r/checkpoint.json")
    }

    /// Prepares the workspace with `repositories` (auto branch [`BRANCH`]).
    pub(crate) async fn prepare(
        &self,
        repositories: &[RepositoryCheckout],
    ) -> Result<Vec<Checkout>, String> {
        let planned = checkouts::plan(repositories, BRANCH)?;
        *self.planned.lock().unwrap() = planned.clone();
        let (workspace, record, scratch) = (self.workspace(), self.record(), self.scratch());
        let local = self.local();
        let layout = Layout {
            workspace: &workspace,
            record: &record,
            scratch: &scratch,
            local: &local,
        };
        let mut log = Vec::new();
        let prepared = self.deliverer.prepare(&planned, &layout, &mut log).await;
        assert!(!log.join("\n").contains(TOKEN));
        prepared.map(|prepared| prepared.checkouts)
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
            answer: None,
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

    /// Delivers the prepared workspace answering `feedback` by [`Deliverer::answer`], as
    /// the work named `by` that replied `reply`; `recorded`: the head recorded as pushed.
    pub(crate) async fn answer(
        &self,
        feedback: &gatehouse_events::Feedback,
        by: &str,
        reply: &str,
        recorded: Option<&str>,
    ) -> (Result<answer::Answered, String>, Vec<String>) {
        let checkouts = self.checkouts().expect("prepared");
        let spec = DeliverSpec {
            mode: DeliverMode::Pr,
            branch: None,
            answer: Some(feedback.clone()),
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
            approval: None,
            spec: &spec,
            draft: false,
            secrets: &self.secrets,
        };
        let answer = answer::Answer {
            by: by.to_owned(),
            reply,
            recorded_head: recorded,
        };
        let mut log = Vec::new();
        let answered = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            self.deliverer.answer(&delivery, &answer, &mut log),
        )
        .await
        .expect("delivery hung");
        assert!(!log.join("\n").contains(TOKEN), "{log:?}");
        (answered, log)
    }

    /// The approval of the workspace's trees as they are now, by gate `review`.
    pub(crate) async fn approve(&self) -> Approval {
        let checkouts = self.checkouts().unwrap();
        let mut trees = BTreeMap::new();
        for checkout in &checkouts {
            let dir = checkout.path(&self.workspace());
            let shared = self.deliverer.shared_objects(checkout);
            let tree = trees::tree(
                &dir,
                &self.scratch(),
                trees::Objects::Scratch,
                shared.as_deref(),
            )
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
        url: None,
        forge: None,
        path: None,
        history: Default::default(),
    }
}

pub(crate) fn auto(repo: &str) -> RepositoryCheckout {
    checkout(repo, RepositoryMode::Auto, None)
}
