//! The state every handler shares. Handlers live with their resource (`runs`, `gates`,
//! `schedules`, `tokens`, `people`, `artifacts`) and the webhooks with their platform
//! (`github`, `chat`); they take this as `State(api)`.

use gatehouse_blobs::Blobs;
use std::path::PathBuf;
use std::sync::Arc;

use gatehouse_project::Projects;
use gatehouse_sop::Library;
use gatehouse_store::Store;

use crate::run_loader::RunLoader;
use crate::{Assistant, ChatSettings, ConsoleSettings, GithubSettings, People};

/// The API's shared state: cheap to clone.
#[derive(Clone)]
pub struct ApiState {
    pub(crate) store: Store,
    /// The SOPs requests may start, as their files say now.
    pub(crate) catalog: Arc<Library>,
    /// The configured projects: where runs may reach.
    pub(crate) projects: Arc<Projects>,
    /// The configured people; [`People::current`] adds the stored ones.
    pub(crate) people: Arc<People>,
    /// Absent: `/webhooks/github` answers 404 and no repository is acted on.
    pub(crate) github: Option<Arc<GithubSettings>>,
    /// GitHub's API, for what feedback on Gatehouse's pull requests needs (a review's
    /// comments, failing checks' logs); without it that feedback comes without them.
    pub(crate) github_client: Option<gatehouse_github::GithubClient>,
    pub(crate) chat: Arc<ChatSettings>,
    /// The blob store the runners put artifacts in, to serve them from.
    pub(crate) blobs: Option<Blobs>,
    /// The data directory, for artifacts recorded before the blob store (when runners
    /// wrote them there).
    pub(crate) data_dir: Option<PathBuf>,
    /// Wakes the delivery processor when a webhook was stored.
    pub(crate) deliveries: Arc<tokio::sync::Notify>,
    /// Held while a delivery is processed as it arrives: one at a time, so one arriving
    /// just behind another sees it (on Postgres, transactions run side by side).
    pub(crate) arrivals: Arc<tokio::sync::Mutex<()>>,
    /// Reads runs with the definitions they were frozen with.
    pub(crate) runs: RunLoader,
    /// `[assistant]`: when set, prose in chat goes to the thread's conversation.
    pub(crate) assistant: Option<Arc<Assistant>>,
    /// How the console signs people in and links to itself.
    pub(crate) console: Arc<ConsoleSettings>,
}

impl ApiState {
    /// An API over `store`, offering the SOPs of `catalog`.
    pub fn new(store: Store, catalog: Arc<Library>) -> Self {
        Self {
            runs: RunLoader::new(store.clone()),
            store,
            catalog,
            projects: Arc::default(),
            people: Arc::default(),
            github: None,
            github_client: None,
            chat: Arc::default(),
            blobs: None,
            data_dir: None,
            deliveries: Arc::default(),
            arrivals: Arc::default(),
            assistant: None,
            console: Arc::default(),
        }
    }

    /// Signs people in to the console with these settings.
    pub fn with_console(mut self, console: ConsoleSettings) -> Self {
        self.console = Arc::new(console);
        self
    }

    /// Talks with people in chat threads: prose is a turn of the assistant role.
    pub fn with_assistant(mut self, assistant: Assistant) -> Self {
        self.assistant = Some(Arc::new(assistant));
        self
    }

    /// Accepts GitHub webhooks at `/webhooks/github` with these settings.
    pub fn with_github(mut self, github: GithubSettings) -> Self {
        self.github = Some(Arc::new(github));
        self
    }

    /// Reads GitHub's API with `client` when feedback on a pull request needs more than
    /// its webhook says.
    pub fn with_github_client(mut self, client: gatehouse_github::GithubClient) -> Self {
        self.github_client = Some(client);
        self
    }

    /// Accepts Slack and Discord at `/webhooks/slack/*` and `/webhooks/discord/*`.
    pub fn with_chat(mut self, chat: ChatSettings) -> Self {
        self.chat = Arc::new(chat);
        self
    }

    /// Serves artifacts from `blobs`, the store the runners put them in.
    pub fn with_blobs(mut self, blobs: Blobs) -> Self {
        self.blobs = Some(blobs);
        self
    }

    /// Serves artifacts recorded before the blob store from `data_dir`, where runners
    /// sharing it wrote them then.
    pub fn with_data_dir(mut self, data_dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(data_dir.into());
        self
    }

    /// The projects runs may work on (`[[projects]]`).
    pub fn with_projects(mut self, projects: Arc<Projects>) -> Self {
        self.projects = projects;
        self
    }

    /// Who is who, for permissions (`[[people]]`).
    pub fn with_people(mut self, people: People) -> Self {
        self.people = Arc::new(people);
        self
    }
}
