//! Signing people in with GitHub (an OAuth App's authorization-code flow): the address
//! that asks GitHub to authorize, and the exchange of the code GitHub sends back for the
//! login of whoever authorized. Against `web_url` (where people sign in: github.com or an
//! Enterprise Server) and `api_url`; the user's token is used once, for `GET /user`, and
//! then dropped.

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::json;

use crate::GithubError;
use crate::client::builder;
use crate::transport::call;

/// An OAuth App people sign in through.
#[derive(Clone)]
pub struct OAuthApp {
    web_url: String,
    api_url: String,
    client_id: String,
    client_secret: SecretString,
}

impl OAuthApp {
    pub fn new(web_url: &str, api_url: &str, client_id: &str, client_secret: SecretString) -> Self {
        Self {
            web_url: web_url.trim_end_matches('/').to_owned(),
            api_url: api_url.trim_end_matches('/').to_owned(),
            client_id: client_id.to_owned(),
            client_secret,
        }
    }

    /// Where to send the browser: GitHub asks the person to authorize, then redirects to
    /// `redirect_uri` with a code and `state`. No scope is asked for: the login is public.
    pub fn authorize_url(&self, state: &str, redirect_uri: &str) -> String {
        let query = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("client_id", &self.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("state", state)
            .append_pair("allow_signup", "false")
            .finish();
        format!("{}/login/oauth/authorize?{query}", self.web_url)
    }

    /// The GitHub login of whoever authorized, from the code GitHub redirected with.
    pub async fn login(&self, code: &str, redirect_uri: &str) -> Result<String, GithubError> {
        #[derive(Deserialize)]
        struct Exchanged {
            access_token: Option<String>,
            error: Option<String>,
            error_description: Option<String>,
        }
        #[derive(Deserialize)]
        struct User {
            login: String,
        }
        let web = builder(&self.web_url)?
            .add_header(http::header::ACCEPT, "application/json".into())
            .build()
            .map_err(|e| GithubError::Setup(e.to_string()))?;
        let body = json!({
            "client_id": self.client_id,
            "client_secret": self.client_secret.expose_secret(),
            "code": code,
            "redirect_uri": redirect_uri,
        });
        let exchanged: Exchanged = call(
            &web,
            http::Method::POST,
            "/login/oauth/access_token",
            Some(body),
        )
        .await?;
        let token = match (exchanged.access_token, exchanged.error) {
            (Some(token), None) => SecretString::from(token),
            (_, error) => {
                return Err(GithubError::Api {
                    status: http::StatusCode::UNAUTHORIZED,
                    message: exchanged
                        .error_description
                        .or(error)
                        .unwrap_or_else(|| "GitHub gave no access token".into()),
                });
            }
        };
        let api = builder(&self.api_url)?
            .user_access_token(token)
            .build()
            .map_err(|e| GithubError::Setup(e.to_string()))?;
        let user: User = call(&api, http::Method::GET, "/user", None).await?;
        Ok(user.login)
    }
}
