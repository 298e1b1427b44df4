//! Forges other than GitHub, through their REST APIs: GitLab's merge requests and Gitea's
//! (and Forgejo's) pull requests, opened from a work branch or found open and updated, so
//! a delivery run again leaves one per branch; and a repository's default branch.
//!
//! Each forge is in its own file ([`gitlab`], [`gitea`]); [`Forge`] is the one client the
//! runner holds, whichever it is. The token goes in the header each forge reads
//! (`PRIVATE-TOKEN`, `Authorization: token …`), to the configured API only: redirects are
//! not followed.

mod error;
mod gitea;
mod gitlab;

use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

pub use error::ForgeError;

/// Which API a forge speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ForgeKind {
    /// GitLab (`/api/v4`): merge requests.
    Gitlab,
    /// Gitea or Forgejo (`/api/v1`): pull requests.
    Gitea,
}

impl ForgeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Gitlab => "gitlab",
            Self::Gitea => "gitea",
        }
    }
}

/// A merge request (pull request) to open from a work branch.
#[derive(Debug, Clone, Copy)]
pub struct NewRequest<'a> {
    /// The work branch.
    pub head: &'a str,
    /// The branch it merges into.
    pub base: &'a str,
    pub title: &'a str,
    pub body: &'a str,
    /// Opened as a draft (`Draft:` on GitLab, `WIP:` on Gitea, as each marks one). An
    /// open one found instead keeps its own title prefix.
    pub draft: bool,
}

/// A work branch's open merge request (pull request), as [`Forge::open_or_update`] left
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkRequest {
    /// GitLab's `iid` (the `!N`), Gitea's `number` (the `#N`).
    pub number: u64,
    /// Its page.
    pub url: String,
    /// `true` when this call opened it; `false` when it was open already and was updated.
    pub opened: bool,
}

/// One forge's API: where it is, what it speaks, its token.
#[derive(Clone)]
pub struct Forge {
    kind: ForgeKind,
    api_url: String,
    token: SecretString,
    http: reqwest::Client,
}

impl std::fmt::Debug for Forge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forge")
            .field("kind", &self.kind)
            .field("api_url", &self.api_url)
            .finish_non_exhaustive()
    }
}

impl Forge {
    /// A client for the API at `api_url` (`https://gitlab.example.com/api/v4`,
    /// `https://gitea.example.com/api/v1`). `Err`: the url is not http(s), or the client
    /// cannot be built.
    pub fn new(kind: ForgeKind, api_url: &str, token: SecretString) -> Result<Self, ForgeError> {
        let parsed = url::Url::parse(api_url)
            .map_err(|e| ForgeError::Config(format!("api_url `{api_url}`: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(ForgeError::Config(format!(
                "api_url `{api_url}` is not an http(s) address"
            )));
        }
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .user_agent("gatehouse")
            .build()
            .map_err(|e| ForgeError::Config(format!("an HTTP client: {e}")))?;
        Ok(Self {
            kind,
            api_url: api_url.trim_end_matches('/').to_owned(),
            token,
            http,
        })
    }

    pub fn kind(&self) -> ForgeKind {
        self.kind
    }

    /// What the forge calls what it opens: `merge request` or `pull request`.
    pub fn request_noun(&self) -> &'static str {
        match self.kind {
            ForgeKind::Gitlab => "merge request",
            ForgeKind::Gitea => "pull request",
        }
    }

    /// The user name git sends with the token over https: GitLab's `oauth2`; Gitea reads
    /// the token from the password, whatever the name.
    pub fn git_user(&self) -> &'static str {
        match self.kind {
            ForgeKind::Gitlab => "oauth2",
            ForgeKind::Gitea => "gatehouse",
        }
    }

    /// Where git reaches the forge's repositories when the configuration does not say:
    /// the API's host, without `/api/v4` or `/api/v1`.
    pub fn derived_git_url(&self) -> String {
        let api = self.api_url.as_str();
        api.strip_suffix("/api/v4")
            .or_else(|| api.strip_suffix("/api/v1"))
            .unwrap_or(api)
            .to_owned()
    }

    /// Opens a merge request (pull request) from `wanted.head` into `wanted.base` on the
    /// repository at `path` (`group/app`), or updates the title and body of the one open
    /// from `wanted.head` already: one per work branch.
    pub async fn open_or_update(
        &self,
        path: &str,
        wanted: &NewRequest<'_>,
    ) -> Result<WorkRequest, ForgeError> {
        match self.kind {
            ForgeKind::Gitlab => gitlab::open_or_update(self, path, wanted).await,
            ForgeKind::Gitea => gitea::open_or_update(self, path, wanted).await,
        }
    }

    /// The repository's default branch, as the forge says.
    pub async fn default_branch(&self, path: &str) -> Result<String, ForgeError> {
        match self.kind {
            ForgeKind::Gitlab => gitlab::default_branch(self, path).await,
            ForgeKind::Gitea => gitea::default_branch(self, path).await,
        }
    }

    /// Sends `request` with the forge's token header; the body of a 2xx answer, else the
    /// status and what the forge said.
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ForgeError> {
        use secrecy::ExposeSecret;
        let request = match self.kind {
            ForgeKind::Gitlab => request.header("PRIVATE-TOKEN", self.token.expose_secret()),
            ForgeKind::Gitea => request.header(
                "Authorization",
                format!("token {}", self.token.expose_secret()),
            ),
        };
        let response = request
            .header("Accept", "application/json")
            .send()
            .await
            .map_err(|e| ForgeError::Unreachable(e.without_url().to_string()))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = response.text().await.unwrap_or_default();
        Err(ForgeError::Api {
            status: status.as_u16(),
            message: error::message(&body),
        })
    }

    async fn json<T: serde::de::DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, ForgeError> {
        self.send(request)
            .await?
            .json()
            .await
            .map_err(|e| ForgeError::Unexpected(e.without_url().to_string()))
    }

    fn url(&self, tail: &str) -> String {
        format!("{}{tail}", self.api_url)
    }
}

/// `text` with every character a URL path segment or query value cannot hold as it is
/// percent-encoded (GitLab's `:id` is the project path so encoded, `/` included).
pub(crate) fn encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_git_host_is_the_apis_without_its_root() {
        let gitlab = Forge::new(
            ForgeKind::Gitlab,
            "https://gitlab.example.com/api/v4/",
            "t".to_owned().into(),
        )
        .unwrap();
        assert_eq!(gitlab.derived_git_url(), "https://gitlab.example.com");
        let gitea = Forge::new(
            ForgeKind::Gitea,
            "http://127.0.0.1:3000/api/v1",
            "t".to_owned().into(),
        )
        .unwrap();
        assert_eq!(gitea.derived_git_url(), "http://127.0.0.1:3000");
        assert_eq!(gitea.git_user(), "gatehouse");
        assert_eq!(gitlab.git_user(), "oauth2");
        let refused = Forge::new(ForgeKind::Gitea, "file:///x", "t".to_owned().into());
        assert!(refused.is_err());
    }

    #[test]
    fn a_project_path_is_one_segment() {
        assert_eq!(
            encode("group/sub project/app"),
            "group%2Fsub%20project%2Fapp"
        );
        assert_eq!(encode("gatehouse/1-fix"), "gatehouse%2F1-fix");
    }
}
