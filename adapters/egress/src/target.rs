//! Where a client asks to go: the host and port of a `CONNECT` request, read leniently
//! enough for every real client and strictly enough that a pattern compares plain,
//! lower-case names.

use std::fmt;
use std::net::IpAddr;

/// The host and port a `CONNECT` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) host: Host,
    pub(crate) port: u16,
}

/// A target's host: a DNS name (lower case, without a trailing dot) or an address literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Host {
    Name(String),
    Ip(IpAddr),
}

impl Target {
    /// Reads a `CONNECT` request target (`host:port`, `[v6]:port`); `None` for anything
    /// else, a missing port included (RFC 9110 requires one).
    pub(crate) fn parse_authority(authority: &str) -> Option<Self> {
        let (host, port) = authority.rsplit_once(':')?;
        if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let port: u16 = port.parse().ok()?;
        if port == 0 {
            return None;
        }
        if !host.starts_with('[') && host.contains(':') {
            // An IPv6 address must be bracketed when a port follows it.
            return None;
        }
        Some(Self {
            host: Host::parse(host)?,
            port,
        })
    }
}

impl Host {
    /// Reads a host as a client writes it: an IPv4 address, an IPv6 address with or
    /// without brackets, or a DNS name (case and one trailing dot do not matter). `None`
    /// when it is none of these: empty labels, spaces, or characters no name has.
    pub(crate) fn parse(host: &str) -> Option<Self> {
        let unbracketed = host
            .strip_prefix('[')
            .and_then(|rest| rest.strip_suffix(']'));
        if let Some(inner) = unbracketed {
            return inner
                .parse::<std::net::Ipv6Addr>()
                .ok()
                .map(|ip| Self::Ip(IpAddr::V6(ip)));
        }
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Some(Self::Ip(ip));
        }
        let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
        let valid = !name.is_empty()
            && name.len() <= 253
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        valid.then_some(Self::Name(name))
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => f.write_str(name),
            Self::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            Self::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_read_as_clients_write_them() {
        let t = Target::parse_authority("Crates.IO.:443").expect("a name");
        assert_eq!(t.host, Host::Name("crates.io".into()));
        assert_eq!(t.port, 443);
        let t = Target::parse_authority("[::ffff:127.0.0.1]:8443").expect("an address");
        assert_eq!(t.host, Host::Ip("::ffff:127.0.0.1".parse().expect("ip")));
        assert_eq!(t.host.to_string(), "[::ffff:127.0.0.1]");
        assert_eq!(t.port, 8443);
        for bad in [
            "crates.io",
            "crates.io:",
            "crates.io:0",
            "crates.io:99999",
            "::1:443",
            "[::1]",
            "a..b:443",
            "a b:443",
            ":443",
            "[nope]:443",
        ] {
            assert_eq!(Target::parse_authority(bad), None, "{bad}");
        }
    }
}
