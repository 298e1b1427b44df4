//! From what a request names — a project, repositories, an issue — to the workspace its run
//! is frozen with.

use std::collections::BTreeSet;

use gatehouse_events::RunWorkspace;

use crate::error::ResolveError;
use gatehouse_commands::is_repo_name;

use crate::projects::{Project, Projects};

/// What a request names. Every part is optional: a project alone checks out all of its
/// repositories; repositories or an issue alone find the one project that lists them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Request<'a> {
    pub project: Option<&'a str>,
    /// `owner/name`s to check out (a subset of the project's).
    pub repositories: &'a [String],
    /// The repository of the GitHub issue the run works on; always checked out.
    pub issue_repo: Option<&'a str>,
    /// The SOP the run uses, when one is asked for (the project must allow it).
    pub sop: Option<&'a str>,
}

impl Projects {
    /// The workspace `request` names; `None` when it names no code (a run without
    /// repositories), or names only an issue while no projects are configured (a run on
    /// the issue's repository alone, as before projects existed).
    pub fn resolve(&self, request: Request<'_>) -> Result<Option<RunWorkspace>, ResolveError> {
        for repo in request
            .repositories
            .iter()
            .map(String::as_str)
            .chain(request.issue_repo)
        {
            if !is_repo_name(repo) {
                return Err(ResolveError::NotARepository(repo.to_owned()));
            }
        }
        let named: BTreeSet<String> = request
            .repositories
            .iter()
            .map(String::as_str)
            .chain(request.issue_repo)
            .map(str::to_ascii_lowercase)
            .collect();
        if self.is_empty() {
            return match (request.project, request.repositories.is_empty()) {
                (Some(name), _) => Err(ResolveError::UnknownProject {
                    name: name.to_owned(),
                    known: self.names(),
                }),
                (None, false) => Err(ResolveError::NoProjects),
                (None, true) => Ok(None),
            };
        }
        let project = match request.project {
            Some(name) => self.get(name).ok_or_else(|| ResolveError::UnknownProject {
                name: name.to_owned(),
                known: self.names(),
            })?,
            None => match named.iter().next() {
                Some(first) => self.only_project_of(first, &named).map_err(|e| match e {
                    ResolveError::InNoProject(repo) => {
                        ResolveError::InNoProject(shown(request, &repo))
                    }
                    other => other,
                })?,
                None => return Ok(None),
            },
        };
        for repo in &named {
            if project.repository(repo).is_none() {
                return Err(ResolveError::OutsideProject {
                    repo: shown(request, repo),
                    project: project.name().to_owned(),
                    known: project.repository_names(),
                });
            }
        }
        if let Some(sop) = request.sop {
            check_sop(project, sop)?;
        }
        let selected = (!request.repositories.is_empty()).then_some(&named);
        Ok(Some(project.workspace(selected)))
    }

    /// The one project listing `first`, which must list every one of `named` too.
    fn only_project_of(
        &self,
        first: &str,
        named: &BTreeSet<String>,
    ) -> Result<&Project, ResolveError> {
        let candidates: Vec<&Project> = self
            .of_repo(first)
            .into_iter()
            .filter(|p| named.iter().all(|r| p.repository(r).is_some()))
            .collect();
        match candidates.as_slice() {
            [one] => Ok(one),
            [] => {
                let missing = named
                    .iter()
                    .find(|r| self.of_repo(r).is_empty())
                    .unwrap_or(&first.to_owned())
                    .clone();
                Err(ResolveError::InNoProject(missing))
            }
            several => Err(ResolveError::Ambiguous {
                repo: first.to_owned(),
                projects: several
                    .iter()
                    .map(|p| p.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }
}

/// Refuses `sop` unless `project` allows it.
pub fn check_sop(project: &Project, sop: &str) -> Result<(), ResolveError> {
    if project.allows_sop(sop) {
        return Ok(());
    }
    Err(ResolveError::SopNotAllowed {
        project: project.name().to_owned(),
        sop: sop.to_owned(),
        allowed: project.config().sops.join(", "),
    })
}

/// `repo` as the request spelled it.
fn shown(request: Request<'_>, lower: &str) -> String {
    request
        .repositories
        .iter()
        .map(String::as_str)
        .chain(request.issue_repo)
        .find(|r| r.eq_ignore_ascii_case(lower))
        .unwrap_or(lower)
        .to_owned()
}
