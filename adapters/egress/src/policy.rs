//! What one sandbox may reach: the allowed host patterns (a profile's and a role's
//! `egress`, plus the curated lists of `egress_defaults`), the private networks it may
//! reach nonetheless, and how many tunnels it may hold open at once.

use std::net::IpAddr;

use ipnet::IpNet;

use crate::address::{SpecialRange, is_wholly_special, special_range};
use crate::defaults::defaults;
use crate::error::EgressError;
use crate::pattern::Pattern;
use crate::target::Target;

/// How many tunnels one policy's sandbox holds at once unless told otherwise: enough for
/// a package manager's parallel downloads.
pub const DEFAULT_MAX_TUNNELS: usize = 64;

/// The allow-list of one sandbox. An empty policy allows nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    patterns: Vec<Pattern>,
    private_networks: Vec<IpNet>,
    max_tunnels: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Self::new([])
    }
}

impl Policy {
    /// A policy allowing `patterns`, no private network, [`DEFAULT_MAX_TUNNELS`] tunnels.
    pub fn new(patterns: impl IntoIterator<Item = Pattern>) -> Self {
        Self {
            patterns: patterns.into_iter().collect(),
            private_networks: Vec::new(),
            max_tunnels: DEFAULT_MAX_TUNNELS,
        }
    }

    /// A policy from configuration: `egress` entries (a profile's and a role's, together)
    /// and `egress_defaults` names. The first bad entry or unknown name is the error.
    pub fn from_config<E, D>(
        egress: impl IntoIterator<Item = E>,
        egress_defaults: impl IntoIterator<Item = D>,
    ) -> Result<Self, EgressError>
    where
        E: AsRef<str>,
        D: AsRef<str>,
    {
        let mut patterns: Vec<Pattern> = Vec::new();
        let mut add = |pattern: Pattern| {
            if !patterns.contains(&pattern) {
                patterns.push(pattern);
            }
        };
        for entry in egress {
            add(Pattern::parse(entry.as_ref())?);
        }
        for name in egress_defaults {
            defaults(name.as_ref())?.into_iter().for_each(&mut add);
        }
        Ok(Self::new(patterns))
    }

    /// Allows `networks` although they are private (a team's internal registry mirror; a
    /// test's loopback upstream). Each must lie wholly inside one special-purpose range —
    /// `10.20.0.0/16` does, `0.0.0.0/0` does not — so this setting can never be used to
    /// switch the address check off. A host still needs a pattern too.
    pub fn with_private_networks(
        mut self,
        networks: impl IntoIterator<Item = IpNet>,
    ) -> Result<Self, EgressError> {
        for net in networks {
            let net = net.trunc();
            if !is_wholly_special(&net) {
                return Err(EgressError::Network {
                    entry: net.to_string(),
                    problem: "is not wholly private: it holds public addresses, which need no \
                              network entry (or spans several special ranges; list each)"
                        .into(),
                });
            }
            self.private_networks.push(net);
        }
        Ok(self)
    }

    /// Reads an allowed private network as configuration writes it (`10.20.0.0/16`, or one
    /// address); the checks of [`Policy::with_private_networks`] come when it is added.
    pub fn parse_network(entry: &str) -> Result<IpNet, EgressError> {
        let entry = entry.trim();
        entry
            .parse::<IpNet>()
            .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
            .map_err(|_| EgressError::Network {
                entry: entry.to_owned(),
                problem: "is not a network; write it in CIDR notation, as in `10.20.0.0/16`".into(),
            })
    }

    /// At most `max` tunnels open at once (at least 1); a `CONNECT` beyond that is refused.
    pub fn with_max_tunnels(mut self, max: usize) -> Self {
        self.max_tunnels = max.max(1);
        self
    }

    /// The allowed patterns.
    pub fn patterns(&self) -> &[Pattern] {
        &self.patterns
    }

    /// The private networks allowed nonetheless.
    pub fn private_networks(&self) -> &[IpNet] {
        &self.private_networks
    }

    /// How many tunnels may be open at once.
    pub fn max_tunnels(&self) -> usize {
        self.max_tunnels
    }

    /// Whether a pattern allows `host:port` (before any address check: a name allowed
    /// here is still refused when it resolves to a private address).
    pub fn allows(&self, host: &str, port: u16) -> bool {
        self.patterns.iter().any(|p| p.matches(host, port))
    }

    pub(crate) fn allows_target(&self, target: &Target) -> bool {
        self.patterns.iter().any(|p| p.matches_target(target))
    }

    /// The special range that forbids connecting to `ip`, if any: `None` for a public
    /// address or one inside an allowed private network.
    pub fn forbidden(&self, ip: IpAddr) -> Option<SpecialRange> {
        let range = special_range(ip)?;
        let canonical = ip.to_canonical();
        let allowed = self
            .private_networks
            .iter()
            .any(|net| net.contains(&canonical) || net.contains(&ip));
        (!allowed).then_some(range)
    }
}
