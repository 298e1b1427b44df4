//! Gitea's (and Forgejo's) pull requests (`/api/v1`): a repository is `owner/name`; the
//! open pull requests are listed page by page and the work branch's found by its head
//! ref; a second one from the same branch is refused (409, or 422 on older versions),
//! which sends this back to find and update the first.

use serde::Deserialize;
use serde_json::json;

use crate::{Forge, ForgeError, NewRequest, WorkRequest, encode};

/// The fields of Gitea's pull request read here.
#[derive(Debug, Deserialize)]
struct PullRequest {
    number: u64,
    #[serde(default)]
    html_url: String,
    #[serde(default)]
    title: String,
    head: Option<Branch>,
}

#[derive(Debug, Deserialize)]
struct Branch {
    #[serde(rename = "ref", default)]
    name: String,
}

/// Gitea marks a work in progress by its title.
const DRAFT: &str = "WIP: ";

/// Pages of open pull requests looked through for the work branch's.
const PAGES: u32 = 20;
const PER_PAGE: usize = 50;

/// `owner` and `name` of `path`; Gitea has no deeper paths.
fn repository(path: &str) -> Result<(String, String), ForgeError> {
    match path.split('/').collect::<Vec<_>>().as_slice() {
        [owner, name] if !owner.is_empty() && !name.is_empty() => Ok((encode(owner), encode(name))),
        _ => Err(ForgeError::Config(format!(
            "`{path}` is not owner/name, which a Gitea repository is"
        ))),
    }
}

pub(crate) async fn open_or_update(
    forge: &Forge,
    path: &str,
    wanted: &NewRequest<'_>,
) -> Result<WorkRequest, ForgeError> {
    let (owner, name) = repository(path)?;
    if let Some(found) = find(forge, &owner, &name, wanted.head).await? {
        return update(forge, &owner, &name, found, wanted).await;
    }
    let title = if wanted.draft {
        format!("{DRAFT}{}", wanted.title)
    } else {
        wanted.title.to_owned()
    };
    let create = forge
        .http
        .post(forge.url(&format!("/repos/{owner}/{name}/pulls")))
        .json(&json!({
            "head": wanted.head,
            "base": wanted.base,
            "title": title,
            "body": wanted.body,
        }));
    match forge.json::<PullRequest>(create).await {
        Ok(opened) => Ok(WorkRequest {
            number: opened.number,
            url: opened.html_url,
            opened: true,
        }),
        Err(ForgeError::Api {
            status: 409 | 422, ..
        }) => match find(forge, &owner, &name, wanted.head).await? {
            Some(found) => update(forge, &owner, &name, found, wanted).await,
            None => Err(ForgeError::Unexpected(format!(
                "Gitea refused a pull request from `{}` but lists none open",
                wanted.head
            ))),
        },
        Err(other) => Err(other),
    }
}

async fn find(
    forge: &Forge,
    owner: &str,
    name: &str,
    branch: &str,
) -> Result<Option<PullRequest>, ForgeError> {
    for page in 1..=PAGES {
        let url = forge.url(&format!(
            "/repos/{owner}/{name}/pulls?state=open&page={page}&limit={PER_PAGE}"
        ));
        let open: Vec<PullRequest> = forge.json(forge.http.get(url)).await?;
        let last = open.len() < PER_PAGE;
        if let Some(found) = open
            .into_iter()
            .find(|p| p.head.as_ref().is_some_and(|h| h.name == branch))
        {
            return Ok(Some(found));
        }
        if last {
            break;
        }
    }
    Ok(None)
}

async fn update(
    forge: &Forge,
    owner: &str,
    name: &str,
    found: PullRequest,
    wanted: &NewRequest<'_>,
) -> Result<WorkRequest, ForgeError> {
    let title = if found.title.starts_with(DRAFT) {
        format!("{DRAFT}{}", wanted.title)
    } else {
        wanted.title.to_owned()
    };
    let url = forge.url(&format!("/repos/{owner}/{name}/pulls/{}", found.number));
    let patch = forge
        .http
        .patch(url)
        .json(&json!({ "title": title, "body": wanted.body }));
    let updated: PullRequest = forge.json(patch).await?;
    Ok(WorkRequest {
        number: updated.number,
        url: if updated.html_url.is_empty() {
            found.html_url
        } else {
            updated.html_url
        },
        opened: false,
    })
}

pub(crate) async fn default_branch(forge: &Forge, path: &str) -> Result<String, ForgeError> {
    #[derive(Deserialize)]
    struct Repository {
        #[serde(default)]
        default_branch: String,
    }
    let (owner, name) = repository(path)?;
    let url = forge.url(&format!("/repos/{owner}/{name}"));
    let repo: Repository = forge.json(forge.http.get(url)).await?;
    Some(repo.default_branch)
        .filter(|b| !b.is_empty())
        .ok_or_else(|| ForgeError::Unexpected(format!("Gitea names no default branch of {path}")))
}
