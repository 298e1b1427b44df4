//! What the proxy tells its owner about every connection, allowed or refused: the
//! [`Connection`] record handed to a [`Recorder`]. The runner stores them per attempt and
//! reports a refused host once to the thread ([`Connection::blocked_notice`]).

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use hyper::StatusCode;

use crate::address::SpecialRange;

/// One connection through the proxy: a tunnel, or a request refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// Whose it is: the [`Admission`](crate::Admission)'s label (the attempt), `None` when
    /// the client showed no valid token.
    pub label: Option<Arc<str>>,
    /// The host asked for, as the client named it (lower case; an IPv6 address bracketed),
    /// empty when the request named none.
    pub host: String,
    /// The port asked for (0 when the request named none).
    pub port: u16,
    /// Whether the tunnel was opened, and if not, why.
    pub verdict: Verdict,
    /// Bytes sent from the sandbox to the host.
    pub bytes_up: u64,
    /// Bytes sent from the host to the sandbox.
    pub bytes_down: u64,
    /// When the request came.
    pub started: DateTime<Utc>,
    /// From the request to the end of the tunnel (or to the refusal).
    pub duration: Duration,
}

impl Connection {
    /// The line a thread or status comment shows once for a host the allow-list refused,
    /// e.g. `blocked pypi.org:443 — add it to the profile's egress`; `None` for any other
    /// outcome.
    pub fn blocked_notice(&self) -> Option<String> {
        match &self.verdict {
            Verdict::Refused(Refusal::NotAllowed) => Some(format!(
                "blocked {}:{} — add it to the profile's egress",
                self.host, self.port
            )),
            Verdict::Refused(Refusal::PrivateAddress { address, range }) => Some(format!(
                "blocked {}:{} — it resolves to {address}, a {} address ({})",
                self.host, self.port, range.kind, range.cidr
            )),
            _ => None,
        }
    }
}

/// The outcome of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The tunnel was opened (the record comes when it closed).
    Allowed,
    /// The request was answered with an error and nothing was reached.
    Refused(Refusal),
}

/// Why a request was refused. The [`Display`](fmt::Display) text is the body of the
/// answer the client gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not a `CONNECT`: plain HTTP is never forwarded.
    NotConnect {
        /// The request's method.
        method: String,
    },
    /// A token is required and none was shown in `Proxy-Authorization`.
    NoCredential,
    /// The token shown is unknown, revoked or of an attempt that ended.
    UnknownToken,
    /// The `CONNECT` target is not `host:port`.
    BadTarget {
        /// The target as sent.
        target: String,
    },
    /// No pattern of the policy allows the host and port.
    NotAllowed,
    /// The host is allowed but resolved to (or is) an address in a special-purpose range.
    PrivateAddress {
        /// The address at fault.
        address: IpAddr,
        /// The range it is in.
        range: SpecialRange,
    },
    /// The sandbox holds as many tunnels as its policy allows.
    TooManyTunnels {
        /// The policy's limit.
        limit: usize,
    },
    /// The name did not resolve.
    Unresolvable {
        /// The resolver's words.
        error: String,
    },
    /// No address of the host accepted the connection.
    Unreachable {
        /// The last connection error.
        error: String,
    },
    /// Resolving and connecting took longer than the connect timeout.
    ConnectTimeout {
        /// The timeout.
        after: Duration,
    },
}

impl Refusal {
    /// The status the client is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::NotConnect { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::NoCredential | Self::UnknownToken => StatusCode::PROXY_AUTHENTICATION_REQUIRED,
            Self::BadTarget { .. } => StatusCode::BAD_REQUEST,
            Self::NotAllowed | Self::PrivateAddress { .. } => StatusCode::FORBIDDEN,
            Self::TooManyTunnels { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::Unresolvable { .. } | Self::Unreachable { .. } => StatusCode::BAD_GATEWAY,
            Self::ConnectTimeout { .. } => StatusCode::GATEWAY_TIMEOUT,
        }
    }
}

/// The explanation, for a person reading a CLI's error: what was refused and what to do.
/// The host and port are not part of it; [`Refusal::explain`] adds them.
impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotConnect { method } => write!(
                f,
                "{method} refused: this egress proxy only tunnels HTTPS through CONNECT; plain \
                 HTTP is not forwarded (use an https:// URL)"
            ),
            Self::NoCredential => write!(
                f,
                "this egress proxy needs the sandbox's token in Proxy-Authorization (use the \
                 proxy URL the sandbox was given, with its user and token)"
            ),
            Self::UnknownToken => write!(
                f,
                "the token in Proxy-Authorization is not valid (unknown, or its attempt has \
                 ended)"
            ),
            Self::BadTarget { target } => write!(
                f,
                "CONNECT target `{target}` is not host:port (an IPv6 address in brackets)"
            ),
            Self::NotAllowed => write!(f, "not in the egress allow-list"),
            Self::PrivateAddress { address, range } => write!(
                f,
                "resolves to {address}, a {} address ({}), which a sandbox may not reach",
                range.kind, range.cidr
            ),
            Self::TooManyTunnels { limit } => write!(
                f,
                "the sandbox already holds {limit} open tunnels, its limit; close some first"
            ),
            Self::Unresolvable { error } => write!(f, "could not be resolved: {error}"),
            Self::Unreachable { error } => write!(f, "could not be reached: {error}"),
            Self::ConnectTimeout { after } => {
                write!(f, "did not answer within {} ms", after.as_millis())
            }
        }
    }
}

impl Refusal {
    /// The whole answer body for a request to `host:port`.
    pub fn explain(&self, host: &str, port: u16) -> String {
        match self {
            Self::NotAllowed => {
                let ip = if host.starts_with('[') || host.parse::<IpAddr>().is_ok() {
                    "ip:"
                } else {
                    ""
                };
                let entry = if port == crate::DEFAULT_PORT {
                    format!("{ip}{host}")
                } else {
                    format!("{ip}{host}:{port}")
                };
                format!(
                    "egress: {host}:{port} is not in the egress allow-list; add it to the \
                     profile's egress (egress = [\"{entry}\"]) or to the role's\n"
                )
            }
            Self::PrivateAddress { .. }
            | Self::Unresolvable { .. }
            | Self::Unreachable { .. }
            | Self::ConnectTimeout { .. } => format!("egress: {host}:{port} {self}\n"),
            _ => format!("egress: {self}\n"),
        }
    }
}

/// Where the records go. Called once per connection, from the proxy's tasks: it must not
/// block (hand the record to a channel or a task). Any `Fn(Connection)` is a recorder.
pub trait Recorder: Send + Sync + 'static {
    /// Takes one finished connection.
    fn record(&self, connection: Connection);
}

impl<F> Recorder for F
where
    F: Fn(Connection) + Send + Sync + 'static,
{
    fn record(&self, connection: Connection) {
        self(connection)
    }
}
