//! What can be wrong with an egress configuration: an entry that is not a host pattern, a
//! curated list that does not exist, a private network that is not private. Each message names
//! the entry at fault and what to write instead, because the person reading it is editing a
//! profile's `egress` or `egress_defaults`.

use std::fmt;

/// A configuration of egress that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EgressError {
    /// An `egress` entry is not a host pattern.
    #[error("egress entry `{entry}`: {problem}")]
    Pattern {
        /// The entry as written.
        entry: String,
        /// What is wrong with it, and what to write.
        problem: PatternProblem,
    },
    /// An `egress_defaults` entry names no curated list.
    #[error("egress_defaults: there is no list `{name}`; the lists are {known}")]
    UnknownDefaults {
        /// The name as written.
        name: String,
        /// The names of the curated lists, comma-separated.
        known: String,
    },
    /// An allowed private network is not a CIDR, or reaches beyond private address space.
    #[error("allowed private network `{entry}`: {problem}")]
    Network {
        /// The network as written.
        entry: String,
        /// What is wrong with it.
        problem: String,
    },
}

/// Why an `egress` entry is not a host pattern. The message says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternProblem {
    /// Nothing, or only spaces.
    Empty,
    /// `https://crates.io/…`: a URL where a host belongs.
    Url {
        /// The host (and port) the URL names, as the entry should be written.
        suggestion: String,
    },
    /// `crates.io/api`: a path after the host.
    Path {
        /// The host (and port) before the path.
        suggestion: String,
    },
    /// `user@host`: credentials have no place in an allow-list.
    Userinfo,
    /// `10.0.0.1`: an address written as a host.
    IpLiteral {
        /// The entry with the `ip:` prefix that says an address is meant.
        suggestion: String,
    },
    /// `ip:…` followed by something that is not an address.
    BadIp,
    /// `*` alone, which would allow every host.
    BareWildcard,
    /// A `*` anywhere but a leading `*.`.
    MisplacedWildcard,
    /// `*.com`: a wildcard over a whole top-level domain.
    WildcardTooBroad,
    /// `crates..io`, `.crates.io`, `crates.io.`.
    EmptyLabel,
    /// A character no host name has.
    BadCharacter(char),
    /// A label longer than 63 characters or a name longer than 253.
    TooLong,
    /// A label that starts or ends with `-`.
    Hyphen,
    /// A last label that is all digits, which no DNS name has.
    NumericTopLabel,
    /// A port that is not a number from 1 to 65535.
    Port(String),
}

impl fmt::Display for PatternProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(f, "is empty; write a host name such as `crates.io`"),
            Self::Url { suggestion } => write!(
                f,
                "is a URL; egress lists hosts, without a scheme or a path: write `{suggestion}`"
            ),
            Self::Path { suggestion } => write!(
                f,
                "has a path; egress allows whole hosts, not URLs: write `{suggestion}`"
            ),
            Self::Userinfo => write!(
                f,
                "has a user name (`…@`); write only the host, such as `registry.example.com`"
            ),
            Self::IpLiteral { suggestion } => write!(
                f,
                "is an IP address, not a host name; if an address is really meant, write \
                 `{suggestion}` (a private one also needs an allowed private network)"
            ),
            Self::BadIp => write!(
                f,
                "`ip:` is followed by no IP address; write `ip:203.0.113.7`, \
                 `ip:203.0.113.7:8443` or `ip:[2001:db8::7]:8443`"
            ),
            Self::BareWildcard => write!(
                f,
                "would allow every host; list the hosts, or `*.example.com` for the subdomains \
                 of one domain"
            ),
            Self::MisplacedWildcard => write!(
                f,
                "has a `*` that is not a leading `*.`; only whole subdomains can be wild, as in \
                 `*.npmjs.org`"
            ),
            Self::WildcardTooBroad => write!(
                f,
                "covers a whole top-level domain; name the domain, as in `*.example.com`"
            ),
            Self::EmptyLabel => write!(
                f,
                "has an empty label (`..`, or a dot at the start or the end); write a name such \
                 as `crates.io`"
            ),
            Self::BadCharacter(c) => write!(
                f,
                "has `{}`, which no host name has: letters, digits, `-` and `.` only (and a \
                 leading `*.`, an optional `:port`)",
                c.escape_debug()
            ),
            Self::TooLong => write!(
                f,
                "is too long for a host name (63 characters a label, 253 in all)"
            ),
            Self::Hyphen => write!(f, "has a label that starts or ends with `-`"),
            Self::NumericTopLabel => write!(
                f,
                "ends in a number, so it is no host name; for an address write `ip:` before it"
            ),
            Self::Port(port) => write!(
                f,
                "port `{port}` is not a number from 1 to 65535; write `host:443`, or the host \
                 alone for 443"
            ),
        }
    }
}
