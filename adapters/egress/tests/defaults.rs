//! The curated lists of `egress_defaults`: each parses, an unknown name lists the known
//! ones, and docs/egress.md shows exactly these hosts.

use gatehouse_egress::{DEFAULTS, EgressError, Policy, defaults};

#[test]
fn every_list_parses_and_allows_its_hosts_on_443() {
    for list in DEFAULTS {
        let patterns = defaults(list.name).unwrap_or_else(|e| panic!("{}: {e}", list.name));
        assert_eq!(patterns.len(), list.hosts.len());
        let policy = Policy::new(patterns);
        for host in list.hosts {
            assert!(policy.allows(host, 443), "{}: {host}", list.name);
            assert!(!policy.allows(host, 80), "{}: {host} on 80", list.name);
        }
    }
}

#[test]
fn the_lists_hold_what_each_package_manager_needs() {
    let allows =
        |name: &str, host: &str| Policy::new(defaults(name).expect(name)).allows(host, 443);
    for host in ["crates.io", "index.crates.io", "static.crates.io"] {
        assert!(allows("rust", host), "{host}");
    }
    assert!(allows("node", "registry.npmjs.org"));
    assert!(allows("python", "pypi.org"));
    assert!(allows("python", "files.pythonhosted.org"));
    assert!(allows("debian", "deb.debian.org"));
    assert!(allows("debian", "security.debian.org"));
    assert!(!allows("rust", "registry.npmjs.org"));
}

#[test]
fn an_unknown_list_names_the_known_ones() {
    let error = defaults("ruby").expect_err("no such list");
    assert_eq!(
        error,
        EgressError::UnknownDefaults {
            name: "ruby".into(),
            known: "`rust`, `node`, `python`, `debian`".into(),
        }
    );
    assert_eq!(
        error.to_string(),
        "egress_defaults: there is no list `ruby`; the lists are `rust`, `node`, `python`, `debian`"
    );
    let error = Policy::from_config(["github.com"], ["rust", "ruby"]).expect_err("ruby");
    assert!(
        matches!(error, EgressError::UnknownDefaults { .. }),
        "{error}"
    );
}

#[test]
fn a_policy_joins_entries_and_lists_once_each() {
    let policy = Policy::from_config(
        ["github.com:443", "crates.io", "*.githubusercontent.com"],
        ["rust", "python"],
    )
    .expect("a policy");
    let printed: Vec<String> = policy.patterns().iter().map(ToString::to_string).collect();
    assert_eq!(
        printed,
        [
            "github.com",
            "crates.io",
            "*.githubusercontent.com",
            "index.crates.io",
            "static.crates.io",
            "static.rust-lang.org",
            "pypi.org",
            "files.pythonhosted.org",
        ]
    );
    assert!(policy.allows("objects.githubusercontent.com", 443));
    assert!(!policy.allows("githubusercontent.com", 443));
}

#[test]
fn the_documentation_shows_these_lists() {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/egress.md"))
            .expect("docs/egress.md");
    for list in DEFAULTS {
        let row = page
            .lines()
            .find(|line| line.starts_with(&format!("| `{}` |", list.name)))
            .unwrap_or_else(|| panic!("docs/egress.md has no row for `{}`", list.name));
        let hosts: Vec<String> = list.hosts.iter().map(|h| format!("`{h}`")).collect();
        assert!(
            row.contains(&hosts.join(", ")),
            "docs/egress.md's row for `{}` should list {}: {row}",
            list.name,
            hosts.join(", ")
        );
    }
}
