//! Egress entries: what parses and how it prints back, every way an entry can be wrong
//! (a table, with the message each gives), and matching as properties.

use gatehouse_egress::{EgressError, Pattern, PatternProblem, Policy};
use proptest::prelude::*;

#[test]
fn entries_parse_and_print_back() {
    for (entry, printed, port) in [
        ("crates.io", "crates.io", 443),
        ("  Crates.IO ", "crates.io", 443),
        ("*.npmjs.org", "*.npmjs.org", 443),
        ("github.com:443", "github.com", 443),
        (
            "registry.example.com:8443",
            "registry.example.com:8443",
            8443,
        ),
        ("localhost:5000", "localhost:5000", 5000),
        ("ip:203.0.113.7", "ip:203.0.113.7", 443),
        ("IP:203.0.113.7:8443", "ip:203.0.113.7:8443", 8443),
        ("ip:[2001:db8::7]:8443", "ip:[2001:db8::7]:8443", 8443),
        ("ip:2001:db8::7", "ip:[2001:db8::7]", 443),
        ("ip:[::1]", "ip:[::1]", 443),
        ("xn--bcher-kva.example", "xn--bcher-kva.example", 443),
        ("a-b.c-d.example", "a-b.c-d.example", 443),
    ] {
        let pattern = Pattern::parse(entry).unwrap_or_else(|e| panic!("{entry}: {e}"));
        assert_eq!(pattern.to_string(), printed, "{entry}");
        assert_eq!(pattern.port(), port, "{entry}");
        assert_eq!(Pattern::parse(printed).as_ref(), Ok(&pattern), "{entry}");
    }
}

#[test]
fn bad_entries_say_what_is_wrong_and_what_to_write() {
    let cases: &[(&str, PatternProblem, &str)] = &[
        ("", PatternProblem::Empty, "such as `crates.io`"),
        ("   ", PatternProblem::Empty, "is empty"),
        (
            "https://crates.io/api/v1",
            PatternProblem::Url {
                suggestion: "crates.io".into(),
            },
            "write `crates.io`",
        ),
        (
            "http://user@registry.example.com:8443/",
            PatternProblem::Url {
                suggestion: "registry.example.com:8443".into(),
            },
            "write `registry.example.com:8443`",
        ),
        (
            "crates.io/api",
            PatternProblem::Path {
                suggestion: "crates.io".into(),
            },
            "write `crates.io`",
        ),
        ("me@crates.io", PatternProblem::Userinfo, "only the host"),
        (
            "10.0.0.1",
            PatternProblem::IpLiteral {
                suggestion: "ip:10.0.0.1".into(),
            },
            "write `ip:10.0.0.1`",
        ),
        (
            "10.0.0.1:5000",
            PatternProblem::IpLiteral {
                suggestion: "ip:10.0.0.1:5000".into(),
            },
            "allowed private network",
        ),
        (
            "::1",
            PatternProblem::IpLiteral {
                suggestion: "ip:::1".into(),
            },
            "IP address",
        ),
        (
            "[::1]:443",
            PatternProblem::IpLiteral {
                suggestion: "ip:[::1]:443".into(),
            },
            "IP address",
        ),
        ("ip:crates.io", PatternProblem::BadIp, "`ip:203.0.113.7`"),
        (
            "ip:10.0.0.1:99999",
            PatternProblem::Port("99999".into()),
            "1 to 65535",
        ),
        ("*", PatternProblem::BareWildcard, "every host"),
        ("*:443", PatternProblem::BareWildcard, "every host"),
        (
            "npm*.org",
            PatternProblem::MisplacedWildcard,
            "`*.npmjs.org`",
        ),
        (
            "*npmjs.org",
            PatternProblem::MisplacedWildcard,
            "leading `*.`",
        ),
        ("a.*.org", PatternProblem::MisplacedWildcard, "leading `*.`"),
        ("*.*.org", PatternProblem::MisplacedWildcard, "leading `*.`"),
        (
            "*.com",
            PatternProblem::WildcardTooBroad,
            "top-level domain",
        ),
        ("crates..io", PatternProblem::EmptyLabel, "empty label"),
        (".crates.io", PatternProblem::EmptyLabel, "empty label"),
        ("crates.io.", PatternProblem::EmptyLabel, "empty label"),
        ("*..io", PatternProblem::EmptyLabel, "empty label"),
        (
            "crates io",
            PatternProblem::BadCharacter(' '),
            "letters, digits",
        ),
        ("crates_io.org", PatternProblem::BadCharacter('_'), "`_`"),
        ("cräte.io", PatternProblem::BadCharacter('ä'), "`ä`"),
        (&long_label(), PatternProblem::TooLong, "63 characters"),
        ("-crates.io", PatternProblem::Hyphen, "`-`"),
        ("crates-.io", PatternProblem::Hyphen, "`-`"),
        ("1.2.3", PatternProblem::NumericTopLabel, "ends in a number"),
        ("crates.io:", PatternProblem::Port("".into()), "1 to 65535"),
        (
            "crates.io:0",
            PatternProblem::Port("0".into()),
            "1 to 65535",
        ),
        (
            "crates.io:65536",
            PatternProblem::Port("65536".into()),
            "1 to 65535",
        ),
        (
            "crates.io:-1",
            PatternProblem::Port("-1".into()),
            "1 to 65535",
        ),
        (
            "crates.io:*",
            PatternProblem::Port("*".into()),
            "1 to 65535",
        ),
        (
            "crates.io:https",
            PatternProblem::Port("https".into()),
            "`host:443`",
        ),
        ("a:b:443", PatternProblem::BadCharacter(':'), "`:`"),
    ];
    for (entry, problem, advice) in cases {
        let error = Pattern::parse(entry).expect_err(entry);
        assert_eq!(
            error,
            EgressError::Pattern {
                entry: (*entry).to_owned(),
                problem: problem.clone(),
            },
            "{entry:?}"
        );
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("egress entry `{entry}`: ")),
            "{message}"
        );
        assert!(message.contains(advice), "{entry:?}: {message}");
    }
}

fn long_label() -> String {
    format!("{}.example", "a".repeat(64))
}

#[test]
fn a_policy_from_configuration_names_the_first_bad_entry() {
    let error = Policy::from_config(["crates.io", "https://pypi.org"], ["rust"])
        .expect_err("a URL is no entry");
    assert!(
        error
            .to_string()
            .starts_with("egress entry `https://pypi.org`: is a URL"),
        "{error}"
    );
    let error = Policy::parse_network("10.0.0.0/33").expect_err("no such network");
    assert!(error.to_string().contains("CIDR"), "{error}");
    let open = Policy::default()
        .with_private_networks([Policy::parse_network("0.0.0.0/0").expect("a network")])
        .expect_err("the whole internet is not a private network");
    assert!(open.to_string().contains("not wholly private"), "{open}");
    let one = Policy::parse_network("10.1.2.3").expect("one address is a /32");
    assert_eq!(one.to_string(), "10.1.2.3/32");
}

fn label() -> impl Strategy<Value = String> {
    "[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?"
}

/// A name of two to four labels whose last is not all digits.
fn name() -> impl Strategy<Value = String> {
    (prop::collection::vec(label(), 1..3), "[a-z][a-z0-9]{1,5}")
        .prop_map(|(labels, top)| format!("{}.{top}", labels.join(".")))
}

fn port() -> impl Strategy<Value = u16> {
    prop_oneof![Just(443u16), 1u16..=65535]
}

proptest! {
    #[test]
    fn an_exact_pattern_matches_its_host_and_port_only(
        host in name(), port in port(), other in 1u16..=65535, sub in label(), suffix in label(),
    ) {
        let pattern = Pattern::parse(&format!("{host}:{port}")).expect("a pattern");
        let (upper, dotted) = (host.to_uppercase(), format!("{host}."));
        let (below, above, glued) = (format!("{sub}.{host}"), format!("{host}.{suffix}"), format!("{sub}{host}"));
        prop_assert!(pattern.matches(&host, port));
        prop_assert!(pattern.matches(&upper, port));
        prop_assert!(pattern.matches(&dotted, port));
        prop_assert_eq!(pattern.matches(&host, other), other == port);
        prop_assert!(!pattern.matches(&below, port));
        prop_assert!(!pattern.matches(&above, port));
        prop_assert!(!pattern.matches(&glued, port));
        prop_assert_eq!(Pattern::parse(&pattern.to_string()), Ok(pattern));
    }

    #[test]
    fn a_wildcard_matches_subdomains_at_any_depth_but_not_the_domain(
        domain in name(), subs in prop::collection::vec(label(), 1..4), sub in label(),
        port in port(),
    ) {
        let pattern = Pattern::parse(&format!("*.{domain}:{port}")).expect("a pattern");
        let host = format!("{}.{domain}", subs.join("."));
        let upper = host.to_uppercase();
        let (glued, beyond, dot) = (format!("{sub}{domain}"), format!("{host}.evil"), format!(".{domain}"));
        let other = if port == 443 { 8443 } else { 443 };
        prop_assert!(pattern.matches(&host, port));
        prop_assert!(pattern.matches(&upper, port));
        prop_assert!(!pattern.matches(&domain, port));
        prop_assert!(!pattern.matches(&glued, port));
        prop_assert!(!pattern.matches(&beyond, port));
        prop_assert!(!pattern.matches(&dot, port));
        prop_assert!(!pattern.matches(&host, other));
        prop_assert_eq!(Pattern::parse(&pattern.to_string()), Ok(pattern));
    }

    #[test]
    fn an_address_pattern_matches_only_that_address_in_any_spelling(
        a in any::<[u8; 4]>(), b in any::<[u8; 4]>(), port in port(),
    ) {
        let ip = std::net::Ipv4Addr::from(a);
        let pattern = Pattern::parse(&format!("ip:{ip}:{port}")).expect("a pattern");
        prop_assert!(pattern.matches(&ip.to_string(), port));
        let mapped = format!("[{}]", ip.to_ipv6_mapped());
        prop_assert!(pattern.matches(&mapped, port));
        prop_assert_eq!(pattern.matches(&std::net::Ipv4Addr::from(b).to_string(), port), a == b);
        // A host pattern never matches an address, nor an address pattern a name.
        prop_assert!(!pattern.matches("example.com", port));
    }

    #[test]
    fn parsing_never_panics_and_what_parses_prints_back(entry in "\\PC{0,40}") {
        if let Ok(pattern) = Pattern::parse(&entry) {
            prop_assert_eq!(Pattern::parse(&pattern.to_string()), Ok(pattern));
        }
    }

    #[test]
    fn an_empty_policy_allows_nothing(host in name(), port in port()) {
        prop_assert!(!Policy::default().allows(&host, port));
    }
}
