//! One GitHub request, and its retries. Retries are done here rather than by octocrab's
//! retry policy (switched off in [`crate::GithubClient`]'s builder) because that policy
//! also repeats a `POST` that failed with 5xx at once, which can create a comment twice;
//! here a comment is created by [`crate::GithubClient::create_comment_once`], which looks
//! for the comment's marker before every attempt.

use std::time::Duration;

use http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;
use octocrab::Octocrab;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::GithubError;

/// Attempts per call before giving up (rate-limit waits included).
pub(crate) const ATTEMPTS: u32 = 5;
/// The longest wait for a rate limit Gatehouse sits through inside one call; longer waits
/// fail the call, and the caller tries again later.
const MAX_WAIT: Duration = Duration::from_secs(120);

/// An idempotent call (GET, PATCH), retried on 5xx, transport errors and rate limits.
pub(crate) async fn call<T: DeserializeOwned>(
    octo: &Octocrab,
    method: http::Method,
    url: &str,
    body: Option<Value>,
) -> Result<T, GithubError> {
    let text = retried(|| send(octo, method.clone(), url, body.clone())).await?;
    parse(&text)
}

/// `once` until it succeeds or fails for good: up to [`ATTEMPTS`] times while it is
/// `Unavailable`, backing off between attempts.
pub(crate) async fn retried<T, F, Fut>(mut once: F) -> Result<T, GithubError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, GithubError>>,
{
    let mut last = String::new();
    for attempt in 0..ATTEMPTS {
        match once().await {
            Err(GithubError::Unavailable(why)) => {
                last = why;
                tokio::time::sleep(backoff(attempt)).await;
            }
            done => return done,
        }
    }
    Err(GithubError::Unavailable(last))
}

/// One request. Rate limits are waited out here (then `Unavailable` so the caller
/// tries again); 5xx and transport errors are `Unavailable`; other errors are final.
pub(crate) async fn send(
    octo: &Octocrab,
    method: http::Method,
    url: &str,
    body: Option<Value>,
) -> Result<String, GithubError> {
    let response = match method {
        http::Method::POST => octo._post(url, body.as_ref()).await,
        http::Method::PATCH => octo._patch(url, body.as_ref()).await,
        _ => octo._get(url).await,
    }
    .map_err(|e| GithubError::Unavailable(causes(&e)))?;
    let status = response.status();
    let wait = rate_limit_wait(status, response.headers(), now_epoch());
    let text = octo
        .body_to_string(response)
        .await
        .map_err(|e| GithubError::Unavailable(causes(&e)))?;
    if status.is_success() {
        return Ok(text);
    }
    Err(refused(status, wait, text, url).await)
}

/// A GET of a body too large to hold whole (a job's log): only its last `max` bytes are
/// kept as it streams in. Redirects are followed (octocrab's client does, and drops the
/// credentials when the redirect leads to another origin, as GitHub's log downloads do).
pub(crate) async fn get_tail(
    octo: &Octocrab,
    url: &str,
    max: usize,
) -> Result<Vec<u8>, GithubError> {
    let response = octo
        ._get(url)
        .await
        .map_err(|e| GithubError::Unavailable(causes(&e)))?;
    let status = response.status();
    if !status.is_success() {
        let wait = rate_limit_wait(status, response.headers(), now_epoch());
        let text = octo
            .body_to_string(response)
            .await
            .map_err(|e| GithubError::Unavailable(causes(&e)))?;
        return Err(refused(status, wait, text, url).await);
    }
    let mut body = response.into_body();
    let mut kept: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| GithubError::Unavailable(causes(&e)))?;
        if let Ok(data) = frame.into_data() {
            kept.extend_from_slice(&data);
            // Trim now and then rather than per frame: at most twice `max` is held.
            if kept.len() > max.saturating_mul(2).max(64 * 1024) {
                kept.drain(..kept.len() - max);
            }
        }
    }
    if kept.len() > max {
        kept.drain(..kept.len() - max);
    }
    Ok(kept)
}

/// The error an unsuccessful answer makes. A rate limit is waited out here (then
/// `Unavailable`, so the caller tries again); 5xx is `Unavailable`; the rest is final.
async fn refused(
    status: StatusCode,
    wait: Option<Duration>,
    text: String,
    url: &str,
) -> GithubError {
    if let Some(wait) = wait {
        if wait > MAX_WAIT {
            return GithubError::Unavailable(format!("rate limited for {}s", wait.as_secs()));
        }
        tracing::warn!(%status, wait_s = wait.as_secs(), %url, "GitHub rate limit; waiting");
        tokio::time::sleep(wait).await;
        return GithubError::Unavailable(format!("rate limited ({status})"));
    }
    let message = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v["message"].as_str().map(str::to_owned))
        .unwrap_or(text);
    if status.is_server_error() {
        return GithubError::Unavailable(format!("{status}: {message}"));
    }
    GithubError::Api { status, message }
}

/// How long a rate-limited response asks to wait: `Retry-After` (secondary limits), or
/// until `X-RateLimit-Reset` when `X-RateLimit-Remaining` is 0 (primary limit), or a
/// minute for a 429 without either. `None` when the response is not a rate limit.
pub fn rate_limit_wait(
    status: StatusCode,
    headers: &HeaderMap,
    now_epoch: i64,
) -> Option<Duration> {
    if status != StatusCode::TOO_MANY_REQUESTS && status != StatusCode::FORBIDDEN {
        return None;
    }
    let number = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<i64>().ok())
    };
    if let Some(secs) = number("retry-after") {
        return Some(Duration::from_secs(secs.max(0).unsigned_abs()));
    }
    if number("x-ratelimit-remaining") == Some(0)
        && let Some(reset) = number("x-ratelimit-reset")
    {
        return Some(Duration::from_secs(
            (reset - now_epoch).max(1).unsigned_abs(),
        ));
    }
    (status == StatusCode::TOO_MANY_REQUESTS).then_some(Duration::from_secs(60))
}

pub(crate) fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(200 * 2u64.pow(attempt.min(6)))
}

fn now_epoch() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

pub(crate) fn parse<T: DeserializeOwned>(text: &str) -> Result<T, GithubError> {
    serde_json::from_str(text).map_err(|e| GithubError::Api {
        status: StatusCode::OK,
        message: format!("unexpected response ({e}): {text}"),
    })
}

pub(crate) fn urlencode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// An error and its causes on one line, each said once: `client error (Connect): tcp
/// connect error: Connection refused (os error 111)`, not just the outermost words.
pub(crate) fn causes(error: &dyn std::error::Error) -> String {
    let mut said: Vec<String> = vec![error.to_string()];
    let mut next = error.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !said.iter().any(|s| s.contains(&text)) {
            said.push(text);
        }
        next = cause.source();
    }
    said.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unavailable_github_is_named_by_its_deepest_cause() {
        let refused =
            std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
        #[derive(Debug, thiserror::Error)]
        #[error("client error (Connect)")]
        struct Outer(#[source] std::io::Error);
        assert_eq!(
            causes(&Outer(refused)),
            "client error (Connect): Connection refused"
        );
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn rate_limits_name_their_wait() {
        let forbidden = StatusCode::FORBIDDEN;
        assert_eq!(
            rate_limit_wait(forbidden, &headers(&[("retry-after", "30")]), 0),
            Some(Duration::from_secs(30)),
            "secondary limit"
        );
        assert_eq!(
            rate_limit_wait(
                forbidden,
                &headers(&[
                    ("x-ratelimit-remaining", "0"),
                    ("x-ratelimit-reset", "1090")
                ]),
                1000
            ),
            Some(Duration::from_secs(90)),
            "primary limit: until the reset"
        );
        assert_eq!(
            rate_limit_wait(StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new(), 0),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            rate_limit_wait(forbidden, &headers(&[("x-ratelimit-remaining", "12")]), 0),
            None,
            "a plain 403 is a permission problem"
        );
        assert_eq!(
            rate_limit_wait(StatusCode::BAD_GATEWAY, &HeaderMap::new(), 0),
            None
        );
    }
}
