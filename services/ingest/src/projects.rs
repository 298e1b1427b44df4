//! The one place a request's project and repositories are checked: the
//! API's run start, chat, comments, label triggers and schedules all bind their runs here,
//! with the project's `run` list checked for the person asking; commands on a run or a
//! schedule (cancel, pause, resume, retry, trigger, backfill, delete) check the same list
//! of the project it belongs to ([`may_act`]). Who may read a project's work is decided
//! here too ([`may_read`]), for every list and page that shows it.

use gatehouse_events::{RequirementSource, RunWorkspace};
use gatehouse_project::{Project, Request, Right};
use gatehouse_store::{RequirementRow, Tx};

use crate::rights::{ADMINS, Caller};
use crate::{ApiError, ApiState};

/// The workspace `request` names, refused (422) when it names a repository the
/// configuration names nowhere ([`require_named`]), an unknown project, a repository
/// outside it or in none, or an SOP the project does not allow, and (403) when `person`
/// may not run on the project (someone Gatehouse does not know may only where the project
/// names nobody).
pub(crate) fn bind(
    api: &ApiState,
    request: Request<'_>,
    person: Option<&str>,
    groups: &[String],
) -> Result<Option<RunWorkspace>, ApiError> {
    let workspace = api
        .projects
        .resolve(request)
        .map_err(|e| ApiError::Unprocessable(e.to_string()))?;
    // Once projects are configured, resolving found each repository in one; without them
    // an issue's repository still has to be one the configuration names.
    let named = request.repositories.iter().map(String::as_str);
    for repo in named.chain(request.issue_repo) {
        require_named(api, repo)?;
    }
    if let Some(workspace) = &workspace
        && let Some(project) = api.projects.get(&workspace.project)
    {
        require(project, Right::Run, person, groups)?;
    }
    Ok(workspace)
}

/// Whether the configuration names `repo` (`owner/name`): a project lists it, or a
/// trigger's `repos` or `[github] repositories` matches it. Gatehouse acts on no other
/// repository, whoever asks and however.
pub(crate) fn is_named(api: &ApiState, repo: &str) -> bool {
    !api.projects.of_repo(repo).is_empty()
        || api.github.as_ref().is_some_and(|g| g.allows_repo(repo))
}

/// Refuses (422) a repository the configuration names nowhere ([`is_named`]): the one
/// check the API, chat, comments, label triggers and schedules share.
pub(crate) fn require_named(api: &ApiState, repo: &str) -> Result<(), ApiError> {
    if is_named(api, repo) {
        return Ok(());
    }
    Err(ApiError::Unprocessable(format!(
        "Gatehouse works only on the repositories its configuration names, and `{repo}` is not one of them (an administrator adds it to a project's repositories, a trigger's `repos` or [github] repositories)"
    )))
}

/// The repository of the GitHub issue or pull request a requirement is, if it is one.
pub(crate) fn issue_repo(requirement: Option<&RequirementRow>) -> Option<String> {
    let source = serde_json::from_str(&requirement?.source).ok()?;
    match source {
        RequirementSource::Github { repo, .. } => Some(repo),
        _ => None,
    }
}

/// The project a new requirement from `repo` belongs to: the one project listing it.
pub(crate) fn project_of_repo(api: &ApiState, repo: &str) -> Option<String> {
    match api.projects.of_repo(repo).as_slice() {
        [one] => Some(one.name().to_owned()),
        _ => None,
    }
}

/// Records the run's project on its requirement, when the requirement has none yet.
pub(crate) async fn claim_for_requirement(
    tx: &mut Tx,
    requirement: Option<uuid::Uuid>,
    workspace: Option<&RunWorkspace>,
) -> Result<(), ApiError> {
    if let (Some(id), Some(workspace)) = (requirement, workspace) {
        tx.claim_requirement_project(id, &workspace.project).await?;
    }
    Ok(())
}

/// Refuses (403) unless `person`, in `groups`, has `right` on `project`; `None`, someone
/// Gatehouse does not know, has it only where the project names nobody for it.
pub(crate) fn require(
    project: &Project,
    right: Right,
    person: Option<&str>,
    groups: &[String],
) -> Result<(), ApiError> {
    let granted = match person {
        Some(person) => project.grants(right, person, groups),
        None => project.people(right).is_empty(),
    };
    if granted {
        return Ok(());
    }
    Err(ApiError::Forbidden(format!(
        "{} may not {} on project `{}`; its {} list is {}",
        person.unwrap_or("someone Gatehouse does not know"),
        match right {
            Right::Run => "start runs",
            Right::Converse => "talk to the assistant",
            Right::Approve => "decide gates",
            Right::Read => "read what was done",
        },
        project.name(),
        right.as_str(),
        project.people(right).join(", ")
    )))
}

/// Refuses (403) a gate decision by someone the run's project does not let decide. A run
/// of a project no longer configured is held to its gates' approvers alone.
pub(crate) fn may_decide(
    api: &ApiState,
    project: Option<&str>,
    person: &str,
    groups: &[String],
) -> Result<(), ApiError> {
    may_act(api, project, Right::Approve, Some(person), groups)
}

/// Refuses (403) an action on a run or schedule of `project` (the name it was bound to)
/// by someone that project's `right` list leaves out: cancelling, pausing, resuming or
/// retrying a run and operating a schedule need [`Right::Run`]. Work of no project, or of
/// a project no longer configured, answers to the token's scope and the SOP's starters
/// alone.
pub(crate) fn may_act(
    api: &ApiState,
    project: Option<&str>,
    right: Right,
    person: Option<&str>,
    groups: &[String],
) -> Result<(), ApiError> {
    match project.and_then(|name| api.projects.get(name)) {
        Some(project) => require(project, right, person, groups),
        None => Ok(()),
    }
}

/// Someone reading: the person a token, a console session or a chat account acts for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reader<'a> {
    pub(crate) person: &'a str,
    pub(crate) groups: &'a [String],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(person: &'a str, groups: &'a [String]) -> Self {
        Self { person, groups }
    }
}

impl Caller {
    /// The caller as a reader of projects.
    pub(crate) fn reader(&self) -> Reader<'_> {
        Reader::new(&self.person, &self.groups)
    }
}

/// Whether `reader` may read what was done on `project` (its runs, their logs and
/// artifacts, its requirements, conversations and schedules, its share of reports): the
/// one decision every read path asks. People in `admins` read everything, whatever their
/// token's scopes (a console session never has `admin`, and reading is what `read` is
/// for); anyone else reads a project its `read` list names them in, or, when it has none,
/// one they may run, converse or approve on. What belongs to no project, or to a project
/// no longer configured, is read as it always was: by anyone.
pub(crate) fn may_read(api: &ApiState, project: Option<&str>, reader: Reader<'_>) -> bool {
    if reader.groups.iter().any(|g| g == ADMINS) {
        return true;
    }
    match project.and_then(|name| api.projects.get(name)) {
        Some(project) => project.grants(Right::Read, reader.person, reader.groups),
        None => true,
    }
}

/// Whether `reader` may see a webhook or chat delivery concerning `project`: an
/// administrator (`admin`) sees every one; anyone else only those concerning a configured
/// project they may read ([`may_read`]). A delivery concerning no project (an unknown
/// repository, a direct message) holds what nobody was asked to share, so it is for
/// administrators alone.
pub(crate) fn may_see_delivery(
    api: &ApiState,
    project: Option<&str>,
    reader: Reader<'_>,
    admin: bool,
) -> bool {
    if admin {
        return true;
    }
    project
        .and_then(|name| api.projects.get(name))
        .is_some_and(|project| may_read(api, Some(project.name()), reader))
}

/// The projects whose deliveries `reader` may see ([`may_see_delivery`]); `None` for
/// every delivery, those concerning no project too.
pub(crate) fn delivery_projects(
    api: &ApiState,
    reader: Reader<'_>,
    admin: bool,
) -> Option<Vec<String>> {
    (!admin).then(|| {
        api.projects
            .iter()
            .map(Project::name)
            .filter(|name| may_see_delivery(api, Some(name), reader, admin))
            .map(str::to_owned)
            .collect()
    })
}

/// The configured projects `reader` may not read: what lists leave out, in their queries
/// (so a page of them is never short).
pub(crate) fn hidden(api: &ApiState, reader: Reader<'_>) -> Vec<String> {
    api.projects
        .iter()
        .map(Project::name)
        .filter(|name| !may_read(api, Some(name), reader))
        .map(str::to_owned)
        .collect()
}

/// Refuses what `reader` may not read as `missing`, the answer had it not existed: an
/// unreadable run, requirement or conversation is not confirmed to exist.
pub(crate) fn readable(
    api: &ApiState,
    project: Option<&str>,
    reader: Reader<'_>,
    missing: impl FnOnce() -> ApiError,
) -> Result<(), ApiError> {
    if may_read(api, project, reader) {
        Ok(())
    } else {
        Err(missing())
    }
}
