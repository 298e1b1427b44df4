//! What a job works on, whichever kind of work it is: a run's scope (its project and
//! repositories as frozen with the run, or — for a run on a GitHub issue frozen without
//! them — the issue's repository alone, and its requirement), the requirement as delivery
//! names it and prompts read it, and the project's settings as a job's environment.
//!
//! The repositories come from the run, never from the configuration the runner happens to
//! have: a project edited while a run waits changes nothing the run checks out or pushes.

use std::collections::BTreeMap;

use gatehouse_bus::HandlerError;
use gatehouse_events::{RepositoryCheckout, RepositoryMode, RunWorkspace};
use gatehouse_store::Store;
use uuid::Uuid;

use crate::deliver::checkouts::{self, Planned, issue_branch, requirement_branch, run_branch};
use crate::deliver::{By, Subject};

/// What a run works on.
pub(crate) struct RunScope {
    pub run: Uuid,
    pub sop: String,
    /// What a run on no requirement delivers under: `<sop> (Gatehouse run <id>)`.
    title: String,
    pub requirement: Option<Requirement>,
    /// Its project, repositories and settings (no repositories: an empty workspace).
    pub workspace: RunWorkspace,
}

/// The run's requirement, as delivery names it and prompts read it.
pub(crate) struct Requirement {
    pub id: Uuid,
    pub title: String,
    pub body: String,
    pub url: Option<String>,
    /// The GitHub issue it is: `owner/name` and number.
    pub issue: Option<(String, u64)>,
}

impl RunScope {
    /// The project as a prompt template reads it (`{{ project.name }}` and its settings);
    /// none for a run on no project.
    pub(crate) fn prompt_project(&self) -> Option<BTreeMap<String, String>> {
        if self.workspace.project.is_empty() {
            return None;
        }
        let mut project = self.workspace.settings.clone();
        project.insert("name".to_owned(), self.workspace.project.clone());
        Some(project)
    }

    /// The requirement as a prompt template reads it.
    pub(crate) fn prompt_requirement(&self) -> Option<gatehouse_agent::RequirementView> {
        self.requirement
            .as_ref()
            .map(|r| gatehouse_agent::RequirementView {
                title: r.title.clone(),
                body: r.body.clone(),
                url: r.url.clone(),
            })
    }
    /// Where the run's repositories go in its workspace and on which branches: what its
    /// checkouts are made by, and what their record is held to.
    pub(crate) fn plan(&self) -> Result<Vec<Planned>, String> {
        checkouts::plan(&self.workspace.repositories, &self.auto_branch())
    }

    /// The `auto` work branch: named after the issue, else the requirement, else the run.
    fn auto_branch(&self) -> String {
        match &self.requirement {
            Some(r) => r.auto_branch(),
            None => run_branch(self.run, &self.sop),
        }
    }

    /// The project's variables: see [`project_environment`].
    pub(crate) fn environment(&self) -> BTreeMap<String, String> {
        project_environment(&self.workspace)
    }

    /// What commits and pull requests say they deliver: the requirement (its title and
    /// issue), or without one the run.
    pub(crate) fn subject(&self) -> Subject<'_> {
        match &self.requirement {
            Some(r) => Subject {
                by: By::Run(self.run),
                title: &r.title,
                issue: r.issue.as_ref().map(|(repo, n)| (repo.as_str(), *n)),
            },
            None => Subject {
                by: By::Run(self.run),
                title: &self.title,
                issue: None,
            },
        }
    }
}

impl Requirement {
    /// The requirement as its row has it (a GitHub issue's repository and number read from
    /// its source).
    pub(crate) fn from_row(r: gatehouse_store::RequirementRow) -> Self {
        Self {
            id: r.id,
            issue: match serde_json::from_str(&r.source) {
                Ok(gatehouse_events::RequirementSource::Github { repo, number, .. }) => {
                    Some((repo, number))
                }
                _ => None,
            },
            title: r.title,
            body: r.body,
            url: r.url,
        }
    }

    /// Its `auto` work branch: named after the issue it is, else after itself.
    pub(crate) fn auto_branch(&self) -> String {
        match &self.issue {
            Some((_, number)) => issue_branch(*number, &self.title),
            None => requirement_branch(self.id, &self.title),
        }
    }
}

/// `GATEHOUSE_PROJECT`, `GATEHOUSE_PROJECT_<SETTING>` for each setting, and
/// `GATEHOUSE_REPOSITORIES` (the repositories, space-separated, in the workspace's order).
pub(crate) fn project_environment(workspace: &RunWorkspace) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    if !workspace.project.is_empty() {
        env.insert("GATEHOUSE_PROJECT".to_owned(), workspace.project.clone());
    }
    for (key, value) in &workspace.settings {
        // Projects allow `[a-z0-9_]` only; anything else never becomes a variable.
        if !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            env.insert(
                format!("GATEHOUSE_PROJECT_{}", key.to_ascii_uppercase()),
                value.clone(),
            );
        }
    }
    if !workspace.repositories.is_empty() {
        let repos: Vec<&str> = workspace
            .repositories
            .iter()
            .map(|r| r.repo.as_str())
            .collect();
        env.insert("GATEHOUSE_REPOSITORIES".to_owned(), repos.join(" "));
    }
    env
}

impl RunScope {
    /// What `run` works on, read from `store`; a runner that `clones` repositories gives
    /// a run on an issue without a frozen workspace the issue's repository.
    /// `Ok(Err(reason))`: its frozen workspace cannot be read.
    pub(crate) async fn read(
        store: &Store,
        clones: bool,
        run: Uuid,
    ) -> Result<Result<Self, String>, HandlerError> {
        let Some(row) = store.run(run).await? else {
            return Ok(Ok(Self {
                run,
                sop: String::new(),
                title: format!("Gatehouse run {run}"),
                requirement: None,
                workspace: empty(String::new()),
            }));
        };
        let requirement = match row.requirement_id {
            Some(id) => store.requirement(id).await?.map(Requirement::from_row),
            None => None,
        };
        let workspace = match &row.workspace {
            Some(json) => match serde_json::from_str::<RunWorkspace>(json) {
                Ok(workspace) => workspace,
                Err(e) => return Ok(Err(format!("the run's workspace cannot be read: {e}"))),
            },
            None => {
                let mut workspace = empty(row.project.clone().unwrap_or_default());
                // As before projects: a run on an issue works on its repository, when this
                // runner can clone it.
                if let (
                    true,
                    Some(Requirement {
                        issue: Some((repo, _)),
                        ..
                    }),
                ) = (clones, &requirement)
                {
                    workspace.repositories.push(RepositoryCheckout {
                        repo: repo.clone(),
                        branch: None,
                        mode: RepositoryMode::Auto,
                        branch_name: None,
                        url: None,
                        forge: None,
                        path: None,
                        history: Default::default(),
                    });
                }
                workspace
            }
        };
        Ok(Ok(Self {
            run,
            title: format!("{} (Gatehouse run {run})", row.sop),
            sop: row.sop,
            requirement,
            workspace,
        }))
    }
}

fn empty(project: String) -> RunWorkspace {
    RunWorkspace {
        project,
        repositories: Vec::new(),
        settings: BTreeMap::new(),
    }
}
