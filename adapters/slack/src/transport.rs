//! One Web API call over slack-morphism's hyper connector: rate limits waited out as Slack
//! asks, passing failures (network, 5xx, Slack's own transient errors) retried with a
//! doubling pause, everything else final.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::de::DeserializeOwned;
use serde_json::Value;
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::{
    SlackApiToken, SlackApiTokenValue, SlackClientApiCallContext, SlackClientHttpConnector,
    SlackClientHyperConnector, SlackHyperHttpsConnector,
};

use crate::error::SlackError;

/// Rate-limit retries per call, and the longest total wait for them: a notifier stuck
/// longer than this is better off retrying the whole delivery later.
const MAX_RATE_LIMITED: u32 = 3;
const RATE_LIMIT_BUDGET: Duration = Duration::from_secs(60);
/// Used when a 429 comes without `Retry-After`.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);
/// Retries after a network failure or a 5xx, with a doubling pause from `BACKOFF`.
pub(crate) const MAX_FAILURES: u32 = 2;
pub(crate) const BACKOFF: Duration = Duration::from_millis(250);
/// A hung connection must not hold a notifier forever.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Slack's own answers for a passing failure on its side.
const TRANSIENT_ERRORS: [&str; 4] = [
    "internal_error",
    "fatal_error",
    "service_unavailable",
    "request_timeout",
];

/// One request's parameters.
pub(crate) enum Request<'a> {
    /// A JSON body.
    Post(&'a Value),
    /// Query parameters, for the read methods that take no JSON.
    Get(&'a [(&'a str, Option<String>)]),
}

/// How one attempt failed, deciding whether to try again.
pub(crate) enum Failure {
    /// Do not retry.
    Final(SlackError),
    /// The network or Slack failed; Slack may or may not have acted.
    Transient(String),
}

/// The connection to the Web API and the token calls are made with.
pub(crate) struct Transport {
    connector: SlackClientHyperConnector<SlackHyperHttpsConnector>,
    pub(crate) api_url: String,
    token: SecretString,
}

impl Transport {
    /// The Web API at `api_url`, acting with `bot_token`; see [`crate::SlackClient::new`].
    pub(crate) fn new(api_url: &str, bot_token: SecretString) -> Result<Self, SlackError> {
        let parsed = url::Url::parse(api_url)
            .map_err(|e| SlackError::Setup(format!("api_url `{api_url}` is not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "https" | "http") {
            return Err(SlackError::Setup(format!(
                "api_url `{api_url}` must be an https:// (or, for tests, http://) URL"
            )));
        }
        if bot_token.expose_secret().trim().is_empty() {
            return Err(SlackError::Setup("the Slack bot token is empty".into()));
        }
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(|e| {
                SlackError::Setup(format!(
                    "cannot load the system's root certificates for TLS: {e}"
                ))
            })?
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .build();
        let api_url = api_url.trim_end_matches('/').to_owned();
        Ok(Self {
            connector: SlackClientHyperConnector::with_connector(https)
                .with_slack_api_url(&api_url),
            api_url,
            token: bot_token,
        })
    }

    /// One call, retried after passing failures; for methods that are safe to repeat.
    pub(crate) async fn call(
        &self,
        method: &str,
        request: &Request<'_>,
    ) -> Result<Value, SlackError> {
        let mut failures = 0;
        loop {
            match self.attempt(method, request).await {
                Ok(answer) => return Ok(answer),
                Err(Failure::Final(error)) => return Err(error),
                Err(Failure::Transient(why)) if failures < MAX_FAILURES => {
                    tracing::debug!(method, %why, "retrying a Slack call");
                    tokio::time::sleep(BACKOFF * 2u32.pow(failures)).await;
                    failures += 1;
                }
                Err(Failure::Transient(why)) => return Err(SlackError::Unavailable(why)),
            }
        }
    }

    /// One call, waiting out rate limits as Slack asks: a 429 means Slack did nothing, so
    /// repeating is always safe.
    pub(crate) async fn attempt(
        &self,
        method: &str,
        request: &Request<'_>,
    ) -> Result<Value, Failure> {
        let mut limited = 0;
        let mut waited = Duration::ZERO;
        loop {
            match self.send(method, request).await {
                None => {
                    return Err(Failure::Transient(format!(
                        "{method}: no answer within {}s",
                        REQUEST_TIMEOUT.as_secs()
                    )));
                }
                Some(Err(SlackClientError::RateLimitError(limit))) => {
                    let after = limit.retry_after.unwrap_or(DEFAULT_RETRY_AFTER);
                    if limited >= MAX_RATE_LIMITED || waited + after > RATE_LIMIT_BUDGET {
                        return Err(Failure::Final(SlackError::Unavailable(format!(
                            "{method}: still rate-limited after waiting {}s; Slack asks for {}s more",
                            waited.as_secs(),
                            after.as_secs()
                        ))));
                    }
                    tracing::debug!(
                        method,
                        retry_after = after.as_secs(),
                        "rate-limited by Slack"
                    );
                    tokio::time::sleep(after).await;
                    limited += 1;
                    waited += after;
                }
                Some(result) => return self.judge(method, result),
            }
        }
    }

    /// One HTTP exchange; `None` when Slack did not answer in time.
    async fn send(
        &self,
        method: &str,
        request: &Request<'_>,
    ) -> Option<Result<Value, SlackClientError>> {
        let token = SlackApiToken::new(SlackApiTokenValue(self.token.expose_secret().to_owned()));
        let span = tracing::debug_span!("slack_api", method);
        let context = SlackClientApiCallContext {
            rate_control_params: None,
            token: Some(&token),
            tracing_span: &span,
            is_sensitive_url: false,
        };
        let sent = match request {
            Request::Post(body) => self.connector.http_post(method, *body, context),
            Request::Get(params) => self.connector.http_get(method, &params.to_vec(), context),
        };
        tokio::time::timeout(REQUEST_TIMEOUT, sent).await.ok()
    }

    /// Sorts an answer into success, a refusal for good, or a passing failure.
    fn judge(
        &self,
        method: &str,
        result: Result<Value, SlackClientError>,
    ) -> Result<Value, Failure> {
        let refused = |error: &str| {
            if TRANSIENT_ERRORS.contains(&error) {
                Failure::Transient(format!("{method}: Slack answered {error}"))
            } else {
                Failure::Final(SlackError::Api {
                    method: method.to_owned(),
                    error: error.to_owned(),
                })
            }
        };
        match result {
            Ok(answer) => match answer.get("ok").and_then(Value::as_bool) {
                Some(true) => Ok(answer),
                Some(false) => Err(refused(answer["error"].as_str().unwrap_or("unknown_error"))),
                None => Err(Failure::Transient(format!(
                    "{method}: {} answered without Slack's `ok` field",
                    self.api_url
                ))),
            },
            Err(SlackClientError::ApiError(e)) => Err(refused(&e.code)),
            Err(SlackClientError::HttpError(e))
                if e.status_code.is_server_error() || e.status_code.as_u16() == 408 =>
            {
                Err(Failure::Transient(format!(
                    "{method}: HTTP {}",
                    e.status_code
                )))
            }
            Err(SlackClientError::HttpError(e)) => Err(Failure::Final(SlackError::Setup(format!(
                "{method}: HTTP {} from {}; is api_url right?",
                e.status_code, self.api_url
            )))),
            Err(other) => Err(Failure::Transient(format!("{method}: {other}"))),
        }
    }
}

pub(crate) fn read<T: DeserializeOwned>(method: &str, answer: Value) -> Result<T, SlackError> {
    serde_json::from_value(answer).map_err(|e| {
        SlackError::Unavailable(format!("{method}: unexpected answer from Slack: {e}"))
    })
}
