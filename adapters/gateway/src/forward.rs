//! One request through the gateway: route by provider name, check the token, the model and
//! the budget, swap the token for the key, forward, and stream the answer back metered.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use secrecy::ExposeSecret;
use serde::Deserialize;

use crate::body::{Account, MeteredBody};
use crate::budget::Hold;
use crate::gateway::Gateway;
use crate::grants::Granted;
use crate::meter::Meter;
use crate::provider::{Provider, ProviderKind};
use crate::refusal::{GatewayBody, Refusal};
use crate::token;

/// The one field of a request body the gateway reads. Conversations resent whole make
/// bodies of megabytes; the rest of them is skipped, not built into a JSON tree.
#[derive(Deserialize)]
struct Named {
    model: Option<String>,
}

/// Headers that belong to one connection, never forwarded either way (RFC 9110 7.6.1).
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Removes hop-by-hop headers, those the `connection` header names included.
pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
}

/// Headers that may carry a CLI's token, and so the provider's key on the way out.
const KEY_HEADERS: [&str; 2] = ["x-api-key", "x-goog-api-key"];

/// The token a CLI sent: in `x-api-key` (Anthropic's way), `x-goog-api-key` (Google's),
/// `Authorization: Bearer` (OpenAI's) or, for Google, a `key` query parameter.
fn presented_token<'a>(headers: &'a HeaderMap, query: Option<&'a str>) -> Option<&'a str> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    KEY_HEADERS
        .iter()
        .find_map(|name| header(name))
        .or_else(|| header("authorization").and_then(|v| v.strip_prefix("Bearer ")))
        .or_else(|| query.and_then(key_param))
        .map(str::trim)
        .filter(|token| !token.is_empty())
}

/// The value of a query's `key` parameter (Google's API takes its key there too).
fn key_param(query: &str) -> Option<&str> {
    query.split('&').find_map(|pair| pair.strip_prefix("key="))
}

/// `rest` (path and query) without a `key` parameter: a token must not reach the provider.
fn without_key_param(rest: &str) -> String {
    let Some((path, query)) = rest.split_once('?') else {
        return rest.to_owned();
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| !pair.starts_with("key=") && *pair != "key")
        .collect();
    if kept.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", kept.join("&"))
    }
}

/// The model a path names, as Google's API does (`/v1beta/models/gemini-2.5-pro:generateContent`).
fn model_in_path(rest: &str) -> Option<String> {
    let path = rest.split('?').next().unwrap_or(rest);
    let (_, after) = path.split_once("/models/")?;
    let (model, _method) = after.split_once(':')?;
    (!model.is_empty() && !model.contains('/')).then(|| model.to_owned())
}

/// Whether a path has `.` or `..` segments (percent-encoded too), which could leave the
/// provider's base path once the provider's server normalises it.
pub(crate) fn climbs(rest: &str) -> bool {
    let path = rest.split('?').next().unwrap_or(rest);
    path.split('/').any(|segment| {
        let segment = segment.to_ascii_lowercase().replace("%2e", ".");
        segment == "." || segment == ".."
    })
}

/// The error shape for a path that names no provider: Anthropic's or Google's when the
/// request looks like theirs, else OpenAI's.
fn guess_kind(headers: &HeaderMap, path: &str) -> ProviderKind {
    if headers.contains_key("x-goog-api-key")
        || path.contains(":generateContent")
        || path.contains(":streamGenerateContent")
    {
        ProviderKind::Gemini
    } else if headers.contains_key("x-api-key")
        || headers.contains_key("anthropic-version")
        || path.ends_with("/messages")
    {
        ProviderKind::Anthropic
    } else {
        ProviderKind::OpenAi
    }
}

/// A request that passed the gateway's checks, ready to forward.
struct Admitted {
    granted: Arc<Granted>,
    /// The model the body names, if it names one.
    model: Option<String>,
    body: Bytes,
    /// The budget's ticket, charged when the answer ends (or with nothing, if dropped
    /// before).
    hold: Option<Hold>,
}

impl Gateway {
    /// Answers one request from a sandbox.
    pub(crate) async fn handle(&self, request: Request<Incoming>) -> Response<GatewayBody> {
        let (parts, body) = request.into_parts();
        let path = parts.uri.path();
        let name = path
            .strip_prefix('/')
            .and_then(|p| p.split('/').next())
            .unwrap_or("");
        let Some(provider) = self.inner.providers.get(name) else {
            return Refusal::NoRoute(path.to_owned()).response(guess_kind(&parts.headers, path));
        };
        let whole = parts.uri.path_and_query().map_or(path, |pq| pq.as_str());
        let rest = match &whole[1 + name.len()..] {
            rest if rest.starts_with('/') => rest.to_owned(),
            rest => format!("/{rest}"),
        };
        if climbs(&rest) {
            return Refusal::NoRoute(path.to_owned()).response(provider.kind);
        }
        let token = presented_token(&parts.headers, parts.uri.query());
        let in_path = model_in_path(&rest);
        let rest = without_key_param(&rest);
        match self.admit(name, token, in_path, body).await {
            Ok(admitted) => self.forward(provider, &rest, parts, admitted).await,
            Err(refusal) => refusal.response(provider.kind),
        }
    }

    /// The checks before anything is forwarded: the token, its provider, the body's size,
    /// the model and the budget, in that order.
    /// `in_path`: the model the path names, for an API that names it there.
    async fn admit(
        &self,
        provider: &str,
        token: Option<&str>,
        in_path: Option<String>,
        body: Incoming,
    ) -> Result<Admitted, Refusal> {
        let granted = token
            .map(token::hash)
            .and_then(|hash| self.inner.grants.find(&hash))
            .ok_or(Refusal::UnknownToken)?;
        if granted.provider != provider {
            return Err(Refusal::OtherProvider);
        }
        let limit = self.inner.config.max_request_body;
        let body = match Limited::new(body, limit).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(error) if error.is::<http_body_util::LengthLimitError>() => {
                return Err(Refusal::TooLarge(limit));
            }
            Err(_) => return Err(Refusal::BadBody),
        };
        let model = serde_json::from_slice::<Named>(&body)
            .ok()
            .and_then(|named| named.model)
            .or(in_path);
        if let (Some(allowed), Some(model)) = (&granted.models, &model)
            && !allowed.contains(model)
        {
            return Err(Refusal::ModelNotAllowed {
                model: model.clone(),
                allowed: allowed.clone(),
            });
        }
        let hold = match &granted.budget {
            Some(budget) => {
                let ticket = budget
                    .admit(model.as_deref())
                    .await
                    .map_err(Refusal::Budget)?;
                Some(Hold::new(budget.clone(), ticket))
            }
            None => None,
        };
        Ok(Admitted {
            granted,
            model,
            body,
            hold,
        })
    }

    /// Sends an admitted request to the provider and streams its answer back, metered.
    async fn forward(
        &self,
        provider: &Provider,
        rest: &str,
        parts: http::request::Parts,
        admitted: Admitted,
    ) -> Response<GatewayBody> {
        let (name, kind) = (provider.name.as_str(), provider.kind);
        let Admitted {
            granted,
            model,
            body,
            hold,
        } = admitted;
        let Some(upstream) = upstream_request(provider, rest, parts.method, parts.headers, body)
        else {
            return Refusal::BadBody.response(kind);
        };
        let sent = tokio::time::timeout(
            self.inner.config.first_byte_timeout,
            self.inner.client.request(upstream),
        )
        .await;
        let answer = match sent {
            Ok(Ok(answer)) => answer,
            Ok(Err(error)) => {
                tracing::warn!(grant = %granted.label, provider = name, connect = error.is_connect(),
                    "model provider unreachable: {error}");
                return Refusal::Unreachable(name.to_owned()).response(kind);
            }
            Err(_) => {
                tracing::warn!(grant = %granted.label, provider = name, "model provider timed out");
                return Refusal::Timeout(name.to_owned()).response(kind);
            }
        };
        if answer.status() == StatusCode::UNAUTHORIZED {
            tracing::error!(provider = name, "model provider refused the gateway's key");
            return Refusal::ProviderRefusedKey(name.to_owned()).response(kind);
        }

        let (mut parts, body) = answer.into_parts();
        strip_hop_by_hop(&mut parts.headers);
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let account = Account {
            meter: Meter::new(content_type, model, self.inner.config.max_metered_body),
            granted,
            status: parts.status.as_u16(),
            hold,
        };
        Response::from_parts(parts, MeteredBody::new(body, account).boxed_unsync())
    }
}

/// The request to the provider: same method, path and query; the CLI's token and
/// connection headers gone, the provider's key in its place, and no compression so the
/// meter can read the answer.
fn upstream_request(
    provider: &Provider,
    rest: &str,
    method: http::Method,
    mut headers: HeaderMap,
    body: Bytes,
) -> Option<Request<Full<Bytes>>> {
    strip_hop_by_hop(&mut headers);
    for name in [
        header::HOST,
        header::CONTENT_LENGTH,
        header::AUTHORIZATION,
        header::ACCEPT_ENCODING,
    ] {
        headers.remove(name);
    }
    for name in KEY_HEADERS {
        headers.remove(name);
    }
    headers.insert(
        header::ACCEPT_ENCODING,
        HeaderValue::from_static("identity"),
    );
    let key = provider.key.expose_secret();
    let (name, mut value) = match provider.kind {
        ProviderKind::Anthropic => (
            HeaderName::from_static("x-api-key"),
            HeaderValue::from_str(key).ok()?,
        ),
        ProviderKind::OpenAi | ProviderKind::OpenAiCompatible => (
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {key}")).ok()?,
        ),
        ProviderKind::Gemini => (
            HeaderName::from_static("x-goog-api-key"),
            HeaderValue::from_str(key).ok()?,
        ),
    };
    value.set_sensitive(true);
    headers.insert(name, value);
    let mut request = Request::builder()
        .method(method)
        .uri(provider.target(rest))
        .body(Full::new(body))
        .ok()?;
    *request.headers_mut() = headers;
    Some(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_segments_are_caught_encoded_or_not() {
        assert!(climbs("/v1/../admin"));
        assert!(climbs("/v1/%2E%2e/admin"));
        assert!(climbs("/./v1"));
        assert!(!climbs("/v1/messages?x=../y"));
        assert!(!climbs("/v1/messages.json"));
    }

    #[test]
    fn tokens_come_from_any_providers_place_and_never_empty() {
        let mut headers = HeaderMap::new();
        assert_eq!(
            presented_token(&headers, Some("alt=sse&key=gh-gw-0")),
            Some("gh-gw-0")
        );
        headers.insert("authorization", HeaderValue::from_static("Bearer gh-gw-1"));
        assert_eq!(presented_token(&headers, None), Some("gh-gw-1"));
        headers.insert("x-goog-api-key", HeaderValue::from_static("gh-gw-3"));
        assert_eq!(presented_token(&headers, None), Some("gh-gw-3"));
        headers.insert("x-api-key", HeaderValue::from_static("gh-gw-2"));
        assert_eq!(presented_token(&headers, None), Some("gh-gw-2"));
        headers.insert("x-api-key", HeaderValue::from_static(""));
        assert_eq!(presented_token(&headers, None), None);
    }

    #[test]
    fn a_key_parameter_never_goes_on_and_a_paths_model_is_read() {
        assert_eq!(
            without_key_param("/v1beta/models/g:streamGenerateContent?alt=sse&key=gh-gw-1"),
            "/v1beta/models/g:streamGenerateContent?alt=sse"
        );
        assert_eq!(without_key_param("/v1beta/models?key=t"), "/v1beta/models");
        assert_eq!(without_key_param("/v1/messages"), "/v1/messages");
        assert_eq!(
            model_in_path("/v1beta/models/gemini-2.5-pro:generateContent?alt=sse"),
            Some("gemini-2.5-pro".to_owned())
        );
        assert_eq!(model_in_path("/v1beta/models"), None);
        assert_eq!(model_in_path("/v1/messages"), None);
    }
}
