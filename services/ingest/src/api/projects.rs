//! `GET /projects`: the configured projects as the API shows them. Who may do what on a
//! project is decided in [`crate::projects`].

pub(crate) mod views;

use views::{ProjectRepositoryView, ProjectView};

use axum::Json;
use axum::extract::State;
use gatehouse_project::Project;

use crate::rights::Caller;
use crate::{ApiState, projects};

/// Lists the configured projects the caller may read: a project's repositories, channels
/// and people lists are its own, as its runs are.
#[utoipa::path(get, path = "/projects", responses((status = 200, body = [ProjectView])))]
pub async fn list(State(api): State<ApiState>, caller: Caller) -> Json<Vec<ProjectView>> {
    Json(
        api.projects
            .iter()
            .filter(|p| projects::may_read(&api, Some(p.name()), caller.reader()))
            .map(view)
            .collect(),
    )
}

fn view(project: &Project) -> ProjectView {
    let config = project.config();
    ProjectView {
        name: config.name.clone(),
        repositories: config
            .repositories
            .iter()
            .map(|r| ProjectRepositoryView {
                repo: r.repo.clone(),
                branch: r.branch.clone(),
                mode: r.mode.as_str().to_owned(),
                branch_name: r.branch_name.clone(),
                url: r.url.as_deref().map(gatehouse_project::remote::shown),
                forge: r.forge.clone(),
            })
            .collect(),
        channels: config.channels.clone(),
        sops: config.sops.clone(),
        default_sop: config.default_sop.clone(),
        settings: project.settings(),
        run: config.run.clone(),
        converse: config.converse.clone(),
        approve: config.approve.clone(),
        read: config.read.clone(),
    }
}
