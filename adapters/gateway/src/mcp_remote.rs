//! A remote MCP server (`[mcp.NAME] url = ...`) as a sandbox reaches it: through the
//! runner's tools endpoint at `/mcp/<NAME>`, which hands each request to
//! [`RemoteMcp::forward`]. The server's secret headers (its `token`, its `headers`) are
//! added here and never enter the sandbox, the same way the gateway swaps a provider's key
//! in for an attempt's token.
//!
//! Streamable HTTP: a `POST` carries JSON-RPC, a `GET` opens the server's event stream, a
//! `DELETE` ends a session, all with `Mcp-Session-Id` once the server gave one. The answer,
//! JSON or an SSE stream, is passed back frame by frame as it arrives, never buffered
//! whole. The request body is bounded; hop-by-hop headers and the sandbox's own
//! `Authorization` (its attempt's token) are not forwarded.

use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use secrecy::{ExposeSecret, SecretString};
use url::Url;

use crate::error::GatewayError;
use crate::forward::{climbs, strip_hop_by_hop};
use crate::refusal::BoxError;

/// The body of a forwarded answer: the server's, streamed, or a refusal of the runner's.
pub type McpBody = http_body_util::combinators::UnsyncBoxBody<Bytes, BoxError>;

type McpClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// [`RemoteMcp`]'s bounds unless set: 10 s to connect, 5 minutes to the answer's headers
/// (a tool answering in JSON sends them when it is done), 4 MiB requests.
#[derive(Debug, Clone, Copy)]
pub struct RemoteMcpLimits {
    /// Time to open a connection (TCP and TLS) to the server.
    pub connect_timeout: Duration,
    /// Time from sending a request to the server's response headers.
    pub first_byte_timeout: Duration,
    /// The largest request body forwarded; beyond it, 413.
    pub max_request_body: usize,
}

impl Default for RemoteMcpLimits {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(300),
            max_request_body: 4 << 20,
        }
    }
}

/// One remote MCP server and the secret headers only the runner holds. `Debug` shows their
/// names, never their values.
#[derive(Clone)]
pub struct RemoteMcp {
    name: String,
    url: Url,
    headers: Vec<(HeaderName, HeaderValue)>,
    limits: RemoteMcpLimits,
    client: McpClient,
}

impl std::fmt::Debug for RemoteMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("RemoteMcp")
            .field("name", &self.name)
            .field("url", &self.url.as_str())
            .field("headers", &names)
            .finish_non_exhaustive()
    }
}

/// Request headers never forwarded to the server: the sandbox's token, the connection's
/// own, and those the client sets itself.
const DROPPED: [HeaderName; 5] = [
    header::AUTHORIZATION,
    header::HOST,
    header::CONTENT_LENGTH,
    header::COOKIE,
    header::PROXY_AUTHORIZATION,
];

impl RemoteMcp {
    /// The server `name` at `url` (http or https, with a host, without credentials), to
    /// which each request carries `headers` (name, value with any prefix), with the
    /// default [`RemoteMcpLimits`].
    pub fn new(
        name: &str,
        url: Url,
        headers: Vec<(String, SecretString)>,
    ) -> Result<Self, GatewayError> {
        Self::with_limits(name, url, headers, RemoteMcpLimits::default())
    }

    /// [`RemoteMcp::new`] with other bounds.
    pub fn with_limits(
        name: &str,
        url: Url,
        headers: Vec<(String, SecretString)>,
        limits: RemoteMcpLimits,
    ) -> Result<Self, GatewayError> {
        let bad = |reason| GatewayError::BadMcpServer {
            server: name.to_owned(),
            reason,
        };
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(bad("its url must be http:// or https:// with a host"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad(
                "its url carries credentials; put them in `token` or `headers`",
            ));
        }
        let mut checked = Vec::with_capacity(headers.len());
        for (header_name, value) in headers {
            let header_name = HeaderName::from_bytes(header_name.as_bytes())
                .map_err(|_| bad("a header name is not valid"))?;
            let mut value = HeaderValue::from_str(value.expose_secret())
                .map_err(|_| bad("a header's secret is not a valid header value"))?;
            value.set_sensitive(true);
            checked.push((header_name, value));
        }
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(limits.connect_timeout));
        // Ring only, named here, as the gateway's own client.
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())?
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        Ok(Self {
            name: name.to_owned(),
            url,
            headers: checked,
            limits,
            client: Client::builder(TokioExecutor::new()).build(https),
        })
    }

    /// The server's name (`[mcp.NAME]`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Forwards one request the tools endpoint received at `/mcp/<NAME><path_rest>` (after
    /// checking the attempt's token: this does not) and streams the server's answer back.
    /// `path_rest` is appended to the configured URL's path (usually empty); a query is
    /// kept. Refusals are JSON-RPC errors with an HTTP status: 405 for another method, 413
    /// past the body bound, 502 when the server cannot be reached or refuses the secret,
    /// 504 when it does not answer in time.
    pub async fn forward<B>(&self, request: Request<B>, path_rest: &str) -> Response<McpBody>
    where
        B: http_body::Body<Data = Bytes>,
        B::Error: Into<BoxError>,
    {
        let (parts, body) = request.into_parts();
        if !matches!(parts.method, Method::POST | Method::GET | Method::DELETE) {
            return refusal(
                StatusCode::METHOD_NOT_ALLOWED,
                "an MCP server takes POST, GET and DELETE only",
            );
        }
        if climbs(path_rest) {
            return refusal(
                StatusCode::NOT_FOUND,
                "the path leaves the server's address",
            );
        }
        let body = match Limited::new(body, self.limits.max_request_body)
            .collect()
            .await
        {
            Ok(collected) => collected.to_bytes(),
            Err(error) if error.is::<http_body_util::LengthLimitError>() => {
                return refusal(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!(
                        "the request is over {} bytes, the most forwarded to an MCP server",
                        self.limits.max_request_body
                    ),
                );
            }
            Err(_) => return refusal(StatusCode::BAD_REQUEST, "the request body broke off"),
        };
        let mut headers = parts.headers;
        strip_hop_by_hop(&mut headers);
        for name in DROPPED {
            headers.remove(name);
        }
        for (name, value) in &self.headers {
            headers.insert(name.clone(), value.clone());
        }
        let target = self.target(path_rest, parts.uri.query());
        let Ok(mut upstream) = Request::builder()
            .method(parts.method)
            .uri(target)
            .body(Full::new(body))
        else {
            return refusal(StatusCode::BAD_REQUEST, "the request cannot be forwarded");
        };
        *upstream.headers_mut() = headers;
        let sent = tokio::time::timeout(
            self.limits.first_byte_timeout,
            self.client.request(upstream),
        )
        .await;
        let answer = match sent {
            Ok(Ok(answer)) => answer,
            Ok(Err(error)) => {
                tracing::warn!(server = %self.name, connect = error.is_connect(),
                    "remote MCP server unreachable: {error}");
                return refusal(
                    StatusCode::BAD_GATEWAY,
                    &format!("the MCP server `{}` cannot be reached", self.name),
                );
            }
            Err(_) => {
                tracing::warn!(server = %self.name, "remote MCP server timed out");
                return refusal(
                    StatusCode::GATEWAY_TIMEOUT,
                    &format!(
                        "the MCP server `{}` did not answer within {} s",
                        self.name,
                        self.limits.first_byte_timeout.as_secs()
                    ),
                );
            }
        };
        if matches!(
            answer.status(),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
        ) {
            tracing::error!(server = %self.name, status = answer.status().as_u16(),
                "remote MCP server refused the configured secret");
            return refusal(
                StatusCode::BAD_GATEWAY,
                &format!(
                    "the MCP server `{}` refused Gatehouse's credentials (HTTP {}); its \
                     [mcp.{}] token or headers need changing",
                    self.name,
                    answer.status().as_u16(),
                    self.name
                ),
            );
        }
        let (mut parts, body) = answer.into_parts();
        strip_hop_by_hop(&mut parts.headers);
        parts.headers.remove(header::SET_COOKIE);
        Response::from_parts(parts, body.map_err(BoxError::from).boxed_unsync())
    }

    /// The configured URL with `path_rest` after its path and the request's query, if any,
    /// in place of its own.
    fn target(&self, path_rest: &str, query: Option<&str>) -> String {
        let mut url = self.url.clone();
        if !path_rest.is_empty() {
            let path = format!(
                "{}/{}",
                url.path().trim_end_matches('/'),
                path_rest.trim_start_matches('/')
            );
            url.set_path(&path);
        }
        if query.is_some() {
            url.set_query(query);
        }
        url.to_string()
    }
}

/// A refusal of the runner's, as a JSON-RPC error the CLI shows.
fn refusal(status: StatusCode, message: &str) -> Response<McpBody> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32000, "message": message},
    })
    .to_string();
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_keeps_the_configured_path_and_takes_the_query() {
        let remote = RemoteMcp::new(
            "docs",
            Url::parse("https://docs.example.com/v1/mcp").expect("url"),
            vec![],
        )
        .expect("valid");
        assert_eq!(remote.target("", None), "https://docs.example.com/v1/mcp");
        assert_eq!(
            remote.target("/x", Some("a=1")),
            "https://docs.example.com/v1/mcp/x?a=1"
        );
        let bad = RemoteMcp::new("d", Url::parse("ftp://x/").expect("url"), vec![]);
        assert!(matches!(bad, Err(GatewayError::BadMcpServer { .. })));
        let creds = RemoteMcp::new("d", Url::parse("https://u:p@x/").expect("url"), vec![]);
        assert!(matches!(creds, Err(GatewayError::BadMcpServer { .. })));
        let header = RemoteMcp::new(
            "d",
            Url::parse("https://x/").expect("url"),
            vec![("Authorization".to_owned(), SecretString::from("a\nb"))],
        );
        assert!(matches!(header, Err(GatewayError::BadMcpServer { .. })));
    }
}
