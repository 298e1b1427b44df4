//! GitLab's merge requests (`/api/v4`): a project is named by its path, url-encoded as one
//! segment; an open merge request is found by its source branch; a second one from the
//! same branch is refused with 409, which sends this back to find and update the first.

use serde::Deserialize;
use serde_json::json;

use crate::{Forge, ForgeError, NewRequest, WorkRequest, encode};

/// The fields of GitLab's merge request read here.
#[derive(Debug, Deserialize)]
struct MergeRequest {
    iid: u64,
    #[serde(default)]
    web_url: String,
    #[serde(default)]
    title: String,
}

/// GitLab marks a draft by its title.
const DRAFT: &str = "Draft: ";

pub(crate) async fn open_or_update(
    forge: &Forge,
    path: &str,
    wanted: &NewRequest<'_>,
) -> Result<WorkRequest, ForgeError> {
    if let Some(found) = find(forge, path, wanted.head).await? {
        return update(forge, path, found, wanted).await;
    }
    let title = if wanted.draft {
        format!("{DRAFT}{}", wanted.title)
    } else {
        wanted.title.to_owned()
    };
    let create = forge
        .http
        .post(forge.url(&format!("/projects/{}/merge_requests", encode(path))))
        .json(&json!({
            "source_branch": wanted.head,
            "target_branch": wanted.base,
            "title": title,
            "description": wanted.body,
        }));
    match forge.json::<MergeRequest>(create).await {
        Ok(opened) => Ok(WorkRequest {
            number: opened.iid,
            url: opened.web_url,
            opened: true,
        }),
        // Opened meanwhile (another attempt of the same delivery): update that one.
        Err(ForgeError::Api { status: 409, .. }) => match find(forge, path, wanted.head).await? {
            Some(found) => update(forge, path, found, wanted).await,
            None => Err(ForgeError::Unexpected(format!(
                "GitLab refused a second merge request from `{}` but lists none open",
                wanted.head
            ))),
        },
        Err(other) => Err(other),
    }
}

async fn find(forge: &Forge, path: &str, branch: &str) -> Result<Option<MergeRequest>, ForgeError> {
    let url = forge.url(&format!(
        "/projects/{}/merge_requests?state=opened&source_branch={}",
        encode(path),
        encode(branch)
    ));
    let open: Vec<MergeRequest> = forge.json(forge.http.get(url)).await?;
    Ok(open.into_iter().next())
}

async fn update(
    forge: &Forge,
    path: &str,
    found: MergeRequest,
    wanted: &NewRequest<'_>,
) -> Result<WorkRequest, ForgeError> {
    let title = if found.title.starts_with(DRAFT) {
        format!("{DRAFT}{}", wanted.title)
    } else {
        wanted.title.to_owned()
    };
    let url = forge.url(&format!(
        "/projects/{}/merge_requests/{}",
        encode(path),
        found.iid
    ));
    let put = forge
        .http
        .put(url)
        .json(&json!({ "title": title, "description": wanted.body }));
    let updated: MergeRequest = forge.json(put).await?;
    Ok(WorkRequest {
        number: updated.iid,
        url: if updated.web_url.is_empty() {
            found.web_url
        } else {
            updated.web_url
        },
        opened: false,
    })
}

pub(crate) async fn default_branch(forge: &Forge, path: &str) -> Result<String, ForgeError> {
    #[derive(Deserialize)]
    struct Project {
        default_branch: Option<String>,
    }
    let url = forge.url(&format!("/projects/{}", encode(path)));
    let project: Project = forge.json(forge.http.get(url)).await?;
    project
        .default_branch
        .filter(|b| !b.is_empty())
        .ok_or_else(|| {
            ForgeError::Unexpected(format!(
                "GitLab names no default branch of {path} (an empty repository?)"
            ))
        })
}
