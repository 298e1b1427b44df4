//! The addresses a sandbox must never reach through the proxy, whatever name led to them:
//! loopback (the runner, NATS, Postgres on the same machine), private networks (RFC 1918,
//! unique-local fc00::/7), link-local (169.254.0.0/16 with the cloud metadata address,
//! fe80::/10), unspecified, multicast, broadcast, shared CGNAT space (100.64.0.0/10), the
//! documentation and benchmarking ranges and the other special-purpose ranges of the IANA
//! registries — and IPv6 addresses that carry one of those IPv4 addresses (IPv4-mapped,
//! IPv4-compatible, NAT64, 6to4).
//!
//! The ranges are plain numbers here (no parsing at start-up), each with the words a
//! refusal shows.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// A special-purpose range an address fell in, as a refusal names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialRange {
    /// What the range is for, e.g. `loopback` or `link-local (cloud metadata)`.
    pub kind: &'static str,
    /// The range in CIDR notation, e.g. `127.0.0.0/8`.
    pub cidr: &'static str,
}

struct V4 {
    base: u32,
    prefix: u8,
    range: SpecialRange,
}

struct V6 {
    base: u128,
    prefix: u8,
    range: SpecialRange,
    /// Where an IPv4 address sits inside, to be checked in turn: the bit offset of its
    /// 32 bits from the right. `None` when the whole range is refused.
    embedded_v4_shift: Option<u32>,
}

const fn v4(a: u8, b: u8, c: u8, d: u8, prefix: u8, kind: &'static str, cidr: &'static str) -> V4 {
    V4 {
        base: u32::from_be_bytes([a, b, c, d]),
        prefix,
        range: SpecialRange { kind, cidr },
    }
}

const V4_RANGES: &[V4] = &[
    v4(0, 0, 0, 0, 8, "\"this network\" (unspecified)", "0.0.0.0/8"),
    v4(10, 0, 0, 0, 8, "private (RFC 1918)", "10.0.0.0/8"),
    v4(
        100,
        64,
        0,
        0,
        10,
        "shared address space (CGNAT)",
        "100.64.0.0/10",
    ),
    v4(127, 0, 0, 0, 8, "loopback", "127.0.0.0/8"),
    v4(
        169,
        254,
        0,
        0,
        16,
        "link-local (cloud metadata)",
        "169.254.0.0/16",
    ),
    v4(172, 16, 0, 0, 12, "private (RFC 1918)", "172.16.0.0/12"),
    v4(
        192,
        0,
        0,
        0,
        24,
        "IETF protocol assignments",
        "192.0.0.0/24",
    ),
    v4(192, 0, 2, 0, 24, "documentation", "192.0.2.0/24"),
    v4(192, 88, 99, 0, 24, "6to4 relay anycast", "192.88.99.0/24"),
    v4(192, 168, 0, 0, 16, "private (RFC 1918)", "192.168.0.0/16"),
    v4(198, 18, 0, 0, 15, "benchmarking", "198.18.0.0/15"),
    v4(198, 51, 100, 0, 24, "documentation", "198.51.100.0/24"),
    v4(203, 0, 113, 0, 24, "documentation", "203.0.113.0/24"),
    v4(224, 0, 0, 0, 4, "multicast", "224.0.0.0/4"),
    v4(255, 255, 255, 255, 32, "broadcast", "255.255.255.255/32"),
    v4(240, 0, 0, 0, 4, "reserved", "240.0.0.0/4"),
];

const fn v6(
    base: u128,
    prefix: u8,
    kind: &'static str,
    cidr: &'static str,
    embedded_v4_shift: Option<u32>,
) -> V6 {
    V6 {
        base,
        prefix,
        range: SpecialRange { kind, cidr },
        embedded_v4_shift,
    }
}

const V6_RANGES: &[V6] = &[
    v6(0, 128, "unspecified", "::/128", None),
    v6(1, 128, "loopback", "::1/128", None),
    v6(
        0xffff_0000_0000,
        96,
        "IPv4-mapped IPv6",
        "::ffff:0:0/96",
        Some(0),
    ),
    v6(0, 96, "IPv4-compatible IPv6 (deprecated)", "::/96", None),
    v6(
        0x0064_ff9b << 96,
        96,
        "NAT64 (IPv4 inside)",
        "64:ff9b::/96",
        Some(0),
    ),
    v6(
        0x0064_ff9b_0001 << 80,
        48,
        "local-use NAT64",
        "64:ff9b:1::/48",
        None,
    ),
    v6(0x0100 << 112, 64, "discard-only", "100::/64", None),
    v6(
        0x2001_0db8 << 96,
        32,
        "documentation",
        "2001:db8::/32",
        None,
    ),
    v6(
        0x2001 << 112,
        23,
        "IETF special-purpose (Teredo, benchmarking, ORCHID)",
        "2001::/23",
        None,
    ),
    v6(
        0x2002 << 112,
        16,
        "6to4 (IPv4 inside)",
        "2002::/16",
        Some(80),
    ),
    v6(0x3fff << 112, 20, "documentation", "3fff::/20", None),
    v6(
        0x5f00 << 112,
        16,
        "segment routing (SRv6)",
        "5f00::/16",
        None,
    ),
    v6(0xfc00 << 112, 7, "unique local (private)", "fc00::/7", None),
    v6(0xfe80 << 112, 10, "link-local", "fe80::/10", None),
    v6(
        0xfec0 << 112,
        10,
        "site-local (deprecated)",
        "fec0::/10",
        None,
    ),
    v6(0xff00 << 112, 8, "multicast", "ff00::/8", None),
];

fn within_v4(ip: u32, base: u32, prefix: u8) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
    ip & mask == base & mask
}

fn within_v6(ip: u128, base: u128, prefix: u8) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
    ip & mask == base & mask
}

/// The special-purpose range `ip` is in, if any; for an IPv6 address carrying an IPv4
/// address (mapped, NAT64, 6to4), the range of that IPv4 address. A public address gives
/// `None`.
pub fn special_range(ip: IpAddr) -> Option<SpecialRange> {
    match ip {
        IpAddr::V4(ip) => special_v4(ip),
        IpAddr::V6(ip) => special_v6(ip),
    }
}

fn special_v4(ip: Ipv4Addr) -> Option<SpecialRange> {
    let ip = u32::from(ip);
    V4_RANGES
        .iter()
        .find(|r| within_v4(ip, r.base, r.prefix))
        .map(|r| r.range)
}

fn special_v6(ip: Ipv6Addr) -> Option<SpecialRange> {
    let bits = u128::from(ip);
    let range = V6_RANGES
        .iter()
        .find(|r| within_v6(bits, r.base, r.prefix))?;
    match range.embedded_v4_shift {
        None => Some(range.range),
        Some(shift) => {
            // The 32 bits at `shift` are an IPv4 address: truncation is the point.
            let inner = Ipv4Addr::from((bits >> shift) as u32);
            special_v4(inner)
        }
    }
}

/// Whether `net` lies wholly inside one special-purpose range (so allowing it opens no
/// public address, and no more than the range it is part of).
pub(crate) fn is_wholly_special(net: &IpNet) -> bool {
    match net {
        IpNet::V4(net) => {
            let base = u32::from(net.network());
            V4_RANGES
                .iter()
                .any(|r| r.prefix <= net.prefix_len() && within_v4(base, r.base, r.prefix))
        }
        IpNet::V6(net) => {
            let base = u128::from(net.network());
            V6_RANGES.iter().any(|r| {
                r.prefix <= net.prefix_len()
                    && within_v6(base, r.base, r.prefix)
                    && r.embedded_v4_shift.is_none()
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(ip: &str) -> Option<&'static str> {
        special_range(ip.parse().expect("an address")).map(|r| r.kind)
    }

    #[test]
    fn special_addresses_are_named() {
        for (ip, expected) in [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("10.0.0.1", "private (RFC 1918)"),
            ("172.31.255.255", "private (RFC 1918)"),
            ("192.168.1.1", "private (RFC 1918)"),
            ("169.254.169.254", "link-local (cloud metadata)"),
            ("0.0.0.0", "\"this network\" (unspecified)"),
            ("100.64.0.1", "shared address space (CGNAT)"),
            ("100.127.255.255", "shared address space (CGNAT)"),
            ("192.0.2.5", "documentation"),
            ("198.18.0.1", "benchmarking"),
            ("198.19.255.1", "benchmarking"),
            ("224.0.0.251", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("::", "unspecified"),
            ("::1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "link-local (cloud metadata)"),
            ("::127.0.0.1", "IPv4-compatible IPv6 (deprecated)"),
            ("64:ff9b::10.0.0.1", "private (RFC 1918)"),
            ("2002:7f00:1::", "loopback"),
            ("fd00::1", "unique local (private)"),
            ("fc00::1", "unique local (private)"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "documentation"),
        ] {
            assert_eq!(kind(ip), Some(expected), "{ip}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.0",
            "172.32.0.1",
            "151.101.0.0",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2606:4700::1111",
            "2a04:4e42::223",
        ] {
            assert_eq!(kind(ip), None, "{ip}");
        }
    }

    #[test]
    fn a_network_is_special_only_when_wholly_inside_one_range() {
        for (net, expected) in [
            ("127.0.0.1/32", true),
            ("10.20.0.0/16", true),
            ("fd12:3456::/48", true),
            ("10.0.0.0/7", false),
            ("0.0.0.0/0", false),
            ("8.8.8.0/24", false),
            ("::/0", false),
        ] {
            let net: IpNet = net.parse().expect("a network");
            assert_eq!(is_wholly_special(&net), expected, "{net}");
        }
    }
}
