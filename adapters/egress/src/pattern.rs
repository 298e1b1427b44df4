//! One `egress` entry: a host pattern with an optional port.
//!
//! - `crates.io` allows exactly that name, on port 443;
//! - `*.npmjs.org` allows every subdomain of `npmjs.org`, at any depth (`registry.npmjs.org`,
//!   `a.b.npmjs.org`) but **not** `npmjs.org` itself: list both when both are meant. A
//!   wildcard needs at least two labels after it (`*.com` is refused);
//! - `github.com:443`, `registry.example.com:8443`: another port than 443 is written out,
//!   and only that port is allowed;
//! - `ip:203.0.113.7`, `ip:[2001:db8::7]:8443`: an address, only when written with `ip:`,
//!   so that an address is never allowed by accident. A private one (a team's registry
//!   mirror) also needs an allowed private network in the [`Policy`](crate::Policy).
//!
//! Names compare without regard to case or a trailing dot. Anything else — a URL, a path,
//! `*` alone, an empty label, a port out of range — is an [`EgressError::Pattern`] that
//! names the entry and what to write.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use crate::error::{EgressError, PatternProblem};
use crate::target::{Host, Target};

/// The port a pattern allows when it names none: HTTPS.
pub const DEFAULT_PORT: u16 = 443;

/// A host pattern and the one port it allows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pattern {
    host: HostPattern,
    port: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum HostPattern {
    /// Exactly this name.
    Name(String),
    /// Every name ending in `.` + this suffix.
    Subdomains(String),
    /// Exactly this address (compared in canonical form: an IPv4-mapped IPv6 address is
    /// its IPv4 address).
    Ip(IpAddr),
}

impl Pattern {
    /// Reads an `egress` entry; see the [module docs](self) for what one may be.
    pub fn parse(entry: &str) -> Result<Self, EgressError> {
        parse_entry(entry.trim()).map_err(|problem| EgressError::Pattern {
            entry: entry.to_owned(),
            problem,
        })
    }

    /// The port this pattern allows.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether a `CONNECT` to `host` (a name, or an address with or without brackets) and
    /// `port` is allowed by this pattern. A host no client could name matches nothing.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        Host::parse(host).is_some_and(|host| self.matches_target(&Target { host, port }))
    }

    pub(crate) fn matches_target(&self, target: &Target) -> bool {
        if target.port != self.port {
            return false;
        }
        match (&self.host, &target.host) {
            (HostPattern::Name(name), Host::Name(host)) => name == host,
            (HostPattern::Subdomains(suffix), Host::Name(host)) => host
                .strip_suffix(suffix.as_str())
                .and_then(|head| head.strip_suffix('.'))
                .is_some_and(|sub| !sub.is_empty()),
            (HostPattern::Ip(ip), Host::Ip(host)) => ip.to_canonical() == host.to_canonical(),
            _ => false,
        }
    }
}

impl FromStr for Pattern {
    type Err = EgressError;

    fn from_str(entry: &str) -> Result<Self, Self::Err> {
        Self::parse(entry)
    }
}

/// Writes the pattern as an entry that parses back to it (the port only when not 443).
impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            HostPattern::Name(name) => f.write_str(name)?,
            HostPattern::Subdomains(suffix) => write!(f, "*.{suffix}")?,
            HostPattern::Ip(IpAddr::V4(ip)) => write!(f, "ip:{ip}")?,
            HostPattern::Ip(IpAddr::V6(ip)) => write!(f, "ip:[{ip}]")?,
        }
        if self.port != DEFAULT_PORT {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

fn parse_entry(entry: &str) -> Result<Pattern, PatternProblem> {
    if entry.is_empty() {
        return Err(PatternProblem::Empty);
    }
    if let Some(rest) = strip_prefix_ignore_case(entry, "ip:") {
        return parse_ip(rest);
    }
    if let Some((_, rest)) = entry.split_once("://") {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let authority = authority.rsplit('@').next().unwrap_or_default();
        let suggestion = if authority.is_empty() {
            "crates.io".to_owned()
        } else {
            authority.to_owned()
        };
        return Err(PatternProblem::Url { suggestion });
    }
    if entry.contains('@') {
        return Err(PatternProblem::Userinfo);
    }
    if let Some((authority, _)) = entry.split_once('/') {
        return Err(PatternProblem::Path {
            suggestion: authority.to_owned(),
        });
    }
    if entry.starts_with('[')
        || entry.parse::<IpAddr>().is_ok()
        || entry.parse::<SocketAddr>().is_ok()
    {
        return Err(PatternProblem::IpLiteral {
            suggestion: format!("ip:{entry}"),
        });
    }
    let (host, port) = match entry.rsplit_once(':') {
        Some((host, port)) => (host, parse_port(port)?),
        None => (entry, DEFAULT_PORT),
    };
    if let Some(c) = host.chars().find(|c| *c == ':') {
        return Err(PatternProblem::BadCharacter(c));
    }
    let host = host.to_ascii_lowercase();
    if host == "*" {
        return Err(PatternProblem::BareWildcard);
    }
    let (wild, name) = match host.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, host.as_str()),
    };
    if name.contains('*') {
        return Err(PatternProblem::MisplacedWildcard);
    }
    check_name(name)?;
    let host = if wild {
        if !name.contains('.') {
            return Err(PatternProblem::WildcardTooBroad);
        }
        HostPattern::Subdomains(name.to_owned())
    } else {
        HostPattern::Name(name.to_owned())
    };
    Ok(Pattern { host, port })
}

fn parse_ip(rest: &str) -> Result<Pattern, PatternProblem> {
    if let Ok(addr) = rest.parse::<SocketAddr>() {
        if addr.port() == 0 {
            return Err(PatternProblem::Port("0".into()));
        }
        return Ok(Pattern {
            host: HostPattern::Ip(addr.ip()),
            port: addr.port(),
        });
    }
    let unbracketed = rest
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(rest);
    match unbracketed.parse::<IpAddr>() {
        Ok(ip) => Ok(Pattern {
            host: HostPattern::Ip(ip),
            port: DEFAULT_PORT,
        }),
        Err(_) => match rest.rsplit_once(':') {
            // `ip:1.2.3.4:99999`: an address with a bad port says so.
            Some((ip, port)) if ip.trim_matches(['[', ']']).parse::<IpAddr>().is_ok() => {
                Err(PatternProblem::Port(port.to_owned()))
            }
            _ => Err(PatternProblem::BadIp),
        },
    }
}

fn parse_port(port: &str) -> Result<u16, PatternProblem> {
    let bad = || PatternProblem::Port(port.to_owned());
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match port.parse::<u16>() {
        Ok(0) | Err(_) => Err(bad()),
        Ok(port) => Ok(port),
    }
}

/// A DNS host name, lower case: letters, digits and inner hyphens in labels of 1 to 63,
/// 253 in all, not ending in a number.
fn check_name(name: &str) -> Result<(), PatternProblem> {
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '.'))
    {
        return Err(PatternProblem::BadCharacter(c));
    }
    if name.split('.').any(str::is_empty) {
        return Err(PatternProblem::EmptyLabel);
    }
    if name.len() > 253 || name.split('.').any(|label| label.len() > 63) {
        return Err(PatternProblem::TooLong);
    }
    if name
        .split('.')
        .any(|label| label.starts_with('-') || label.ends_with('-'))
    {
        return Err(PatternProblem::Hyphen);
    }
    let top = name.rsplit('.').next().unwrap_or_default();
    if top.bytes().all(|b| b.is_ascii_digit()) {
        return Err(PatternProblem::NumericTopLabel);
    }
    Ok(())
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}
