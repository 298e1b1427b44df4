//! The HTTP API for the harness: requests as a token (or a raw `Authorization` header, or
//! none) to `/api/v1`, and answers that say which request they answer when they are not
//! what a test expected.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::Gatehouse;

/// Requests sent with one `Authorization` header (or none).
pub struct As<'a> {
    gh: &'a Gatehouse,
    authorization: Option<String>,
}

/// An answer, with the request it answers for messages.
pub struct Reply {
    /// `METHOD /path`.
    pub request: String,
    pub status: StatusCode,
    /// The body as JSON (`null` when it is not JSON).
    pub body: Value,
    pub text: String,
}

impl Gatehouse {
    /// Requests with `token` as the bearer.
    pub fn api_as(&self, token: &str) -> As<'_> {
        self.api_with(Some(format!("Bearer {token}")))
    }

    /// Requests without an `Authorization` header.
    pub fn anonymous(&self) -> As<'_> {
        self.api_with(None)
    }

    /// Requests with this `Authorization` header as it is (a malformed one, say).
    pub fn api_with(&self, authorization: Option<String>) -> As<'_> {
        As {
            gh: self,
            authorization,
        }
    }
}

impl As<'_> {
    pub async fn get(&self, path: &str) -> Reply {
        self.send(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.send(Method::POST, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> Reply {
        self.send(Method::DELETE, path, None).await
    }

    /// `method` on `/api/v1{path}`, with `body` as JSON.
    pub async fn send(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        let request = format!("{method} {path}");
        let mut builder = self
            .gh
            .http
            .request(method, format!("{}/api/v1{path}", self.gh.url));
        if let Some(authorization) = &self.authorization {
            builder = builder.header(reqwest::header::AUTHORIZATION, authorization);
        }
        if let Some(body) = body {
            builder = builder.json(&body);
        }
        let response = builder.send().await.expect("the API answers");
        let status = response.status();
        let text = response.text().await.expect("a body");
        Reply {
            request,
            status,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
            text,
        }
    }
}

impl Reply {
    /// The JSON body, after checking the status.
    pub fn is(self, status: u16) -> Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "{} answered {}",
            self.request,
            self.text
        );
        self.body
    }

    /// The error message, after checking the status and that it says `words`.
    pub fn refused(self, status: u16, words: &str) -> String {
        assert!(
            self.status.as_u16() == status && self.error().contains(words),
            "{} answered {} {} (expected {status} saying `{words}`)",
            self.request,
            self.status,
            self.text
        );
        self.error().to_owned()
    }

    /// The `error` of an error body (empty for any other).
    pub fn error(&self) -> &str {
        self.body["error"].as_str().unwrap_or_default()
    }
}
