//! The GitHub REST client, through octocrab, against `api_url` (GitHub, GitHub Enterprise
//! Server, or a test's fake), as a token or as a GitHub App. Routes are given relative to
//! `api_url`: octocrab joins them to it (Enterprise Server's `/api/v3` included) and only
//! then adds credentials, which it never sends to another host. The calls themselves are in
//! [`crate::comments`], [`crate::pulls`], [`crate::reviews`], [`crate::checks`] and
//! [`crate::search`]; retries in [`crate::transport`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use octocrab::Octocrab;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use crate::GithubError;
use crate::transport::call;

/// GitHub's REST API, as a token or as a GitHub App acting through the installation that
/// covers each repository.
#[derive(Clone)]
pub struct GithubClient {
    auth: Auth,
    /// Where requests go, for messages about it.
    api_url: String,
}

#[derive(Clone)]
enum Auth {
    /// One token for everything (its own for git too).
    Token { octo: Octocrab, token: SecretString },
    /// An app (JWT) client, and installation clients by repository owner: octocrab mints
    /// and refreshes each installation's token.
    App {
        app: Octocrab,
        installations: Arc<Mutex<HashMap<String, Octocrab>>>,
    },
}

impl GithubClient {
    /// A client for `api_url` (e.g. `https://api.github.com`) with a token.
    pub fn new(api_url: &str, token: SecretString) -> Result<Self, GithubError> {
        let api = api_url.trim_end_matches('/').to_owned();
        let octo = builder(&api)?
            .personal_token(token.clone())
            .build()
            .map_err(|e| GithubError::Setup(e.to_string()))?;
        Ok(Self {
            auth: Auth::Token { octo, token },
            api_url: api,
        })
    }

    /// Where the client sends its requests (`https://api.github.com`).
    pub fn api_url(&self) -> &str {
        &self.api_url
    }

    /// A client acting as GitHub App `app_id` with its private key (PEM).
    pub fn app(
        api_url: &str,
        app_id: u64,
        private_key: &SecretString,
    ) -> Result<Self, GithubError> {
        let api = api_url.trim_end_matches('/').to_owned();
        let key = octocrab::EncodingKey::from_rsa_pem(private_key.expose_secret().as_bytes())
            .map_err(|e| GithubError::Setup(format!("github.private_key: {e}")))?;
        let app = builder(&api)?
            .app(octocrab::models::AppId(app_id), key)
            .build()
            .map_err(|e| GithubError::Setup(e.to_string()))?;
        Ok(Self {
            auth: Auth::App {
                app,
                installations: Arc::default(),
            },
            api_url: api,
        })
    }

    /// The client that may act on `repo`: the token's, or the app's installation on the
    /// repository's owner (looked up once per owner).
    pub(crate) async fn client_for(&self, repo: &str) -> Result<Octocrab, GithubError> {
        let (app, installations) = match &self.auth {
            Auth::Token { octo, .. } => return Ok(octo.clone()),
            Auth::App { app, installations } => (app, installations),
        };
        let owner = repo.split('/').next().unwrap_or_default().to_owned();
        if let Some(found) = lock(installations).get(&owner) {
            return Ok(found.clone());
        }
        #[derive(Deserialize)]
        struct Installation {
            id: u64,
        }
        let url = format!("/repos/{repo}/installation");
        let found: Installation = call(app, http::Method::GET, &url, None).await?;
        let client = app
            .installation(octocrab::models::InstallationId(found.id))
            .map_err(|e| GithubError::Setup(e.to_string()))?;
        lock(installations).insert(owner, client.clone());
        Ok(client)
    }

    /// A token git can push `repo` with: the configured token, or a fresh installation
    /// token (valid for at least a few minutes).
    pub async fn git_token(&self, repo: &str) -> Result<SecretString, GithubError> {
        match &self.auth {
            Auth::Token { token, .. } => Ok(token.clone()),
            Auth::App { .. } => self
                .client_for(repo)
                .await?
                .installation_token_with_buffer(chrono::Duration::minutes(5))
                .await
                .map_err(|e| GithubError::Unavailable(crate::transport::causes(&e))),
        }
    }

    /// The clients a search runs with: the token's, or one per installation of the app.
    pub(crate) async fn search_clients(&self) -> Result<Vec<Octocrab>, GithubError> {
        Ok(match &self.auth {
            Auth::Token { octo, .. } => vec![octo.clone()],
            Auth::App { app, .. } => {
                #[derive(Deserialize)]
                struct Installation {
                    id: u64,
                }
                let url = "/app/installations?per_page=100";
                let found: Vec<Installation> = call(app, http::Method::GET, url, None).await?;
                found
                    .into_iter()
                    .map(|i| app.installation(octocrab::models::InstallationId(i.id)))
                    .collect::<Result<_, _>>()
                    .map_err(|e| GithubError::Setup(e.to_string()))?
            }
        })
    }
}

/// An octocrab builder for `api` without octocrab's own retries (see the module docs).
pub(crate) fn builder(
    api: &str,
) -> Result<
    octocrab::OctocrabBuilder<
        octocrab::NoSvc,
        octocrab::DefaultOctocrabBuilderConfig,
        octocrab::NoAuth,
        octocrab::NotLayerReady,
    >,
    GithubError,
> {
    Ok(Octocrab::builder()
        .base_uri(api)
        .map_err(|e| GithubError::Setup(format!("api_url `{api}`: {e}")))?
        .add_retry_config(octocrab::service::middleware::retry::RetryConfig::None)
        .set_connect_timeout(Some(Duration::from_secs(10)))
        .set_read_timeout(Some(Duration::from_secs(30))))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
