//! The curated lists a profile takes by name (`egress_defaults = ["rust", "node"]`): the
//! hosts each ecosystem's package manager fetches from, on port 443. The table in
//! `docs/egress.md` shows the same lists; a test keeps the two in step.

use crate::error::EgressError;
use crate::pattern::Pattern;

/// One curated list: a name a profile writes and the hosts it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Defaults {
    /// The name in `egress_defaults`.
    pub name: &'static str,
    /// Which tools need these hosts, for the documentation and `config check`.
    pub about: &'static str,
    /// The `egress` entries the name stands for.
    pub hosts: &'static [&'static str],
}

/// Every curated list, in the order the documentation shows them.
pub const DEFAULTS: &[Defaults] = &[
    Defaults {
        name: "rust",
        about: "cargo (the crates.io sparse index and crate downloads) and rustup toolchains",
        hosts: &[
            "crates.io",
            "index.crates.io",
            "static.crates.io",
            "static.rust-lang.org",
        ],
    },
    Defaults {
        name: "node",
        about: "npm, yarn and pnpm from the public npm registry; node-gyp's headers",
        hosts: &["registry.npmjs.org", "registry.yarnpkg.com", "nodejs.org"],
    },
    Defaults {
        name: "python",
        about: "pip, uv and poetry from PyPI (the index and the files)",
        hosts: &["pypi.org", "files.pythonhosted.org"],
    },
    Defaults {
        name: "debian",
        about: "apt from Debian's mirrors and security updates, over https",
        hosts: &["deb.debian.org", "security.debian.org"],
    },
];

/// The patterns of the curated list `name`, or an error listing the names there are.
pub fn defaults(name: &str) -> Result<Vec<Pattern>, EgressError> {
    let Some(list) = DEFAULTS.iter().find(|d| d.name == name.trim()) else {
        return Err(EgressError::UnknownDefaults {
            name: name.to_owned(),
            known: DEFAULTS
                .iter()
                .map(|d| format!("`{}`", d.name))
                .collect::<Vec<_>>()
                .join(", "),
        });
    };
    list.hosts.iter().map(|host| Pattern::parse(host)).collect()
}
