//! The built-in SOPs: parameters are data, never commands.

use std::collections::BTreeMap;

use gatehouse_sop::{Catalog, NodeKind};

fn builtins() -> Catalog {
    let (catalog, errors) = Catalog::load(&[] as &[&str]);
    assert!(errors.is_empty(), "{errors:?}");
    catalog
}

/// Whoever starts a run chooses its parameters, so a script that read one could run what
/// they chose. This keeps every built-in script free of them.
#[test]
fn no_built_in_script_reads_a_parameter() {
    for sop in builtins().iter() {
        for node in &sop.nodes {
            if let NodeKind::Script { run } = &node.kind {
                for reference in ["GATEHOUSE_PARAM_", "{{ params.", "{{params."] {
                    assert!(
                        !run.contains(reference),
                        "`{}` node `{}` reads a parameter ({reference}): {run}",
                        sop.name,
                        node.id
                    );
                }
            }
        }
    }
}

#[test]
fn the_test_command_comes_from_the_project() {
    let catalog = builtins();
    for name in ["bug-fix", "backend-delivery"] {
        let sop = catalog.get(name).unwrap();
        assert!(!sop.params.contains_key("test_command"), "{name}");
        let Some(NodeKind::Script { run }) = sop.node("test").map(|n| &n.kind) else {
            panic!("{name} has a test script")
        };
        assert_eq!(
            run.trim(),
            "sh -c \"${GATEHOUSE_PROJECT_TEST_COMMAND:-make test}\""
        );
    }
}

#[test]
fn a_repo_parameter_is_a_github_owner_and_name() {
    let catalog = builtins();
    for sop in catalog.iter() {
        let start = |repo: &str| sop.check_start(&BTreeMap::from([("repo".into(), repo.into())]));
        for good in [
            "acme/api",
            "Codertocat/Hello-World",
            "a-b/c.d_e",
            "acme/.github",
            "x/..a",
        ] {
            assert_eq!(start(good), Ok(()), "{}: {good}", sop.name);
        }
        for bad in [
            "acme/.",
            "acme/..",
            "acme/...",
            "../x",
            "-acme/api",
            "acme",
            "acme/api/x",
            "acme/api; rm -rf /",
            "acme/$(id)",
            "acme/api\n",
            "",
        ] {
            let refused = start(bad).expect_err(bad);
            assert!(
                refused.starts_with("parameter `repo` must match `^[A-Za-z0-9]"),
                "{}: {refused}",
                sop.name
            );
        }
    }
}

#[test]
fn delivering_built_ins_take_reviews_and_failing_checks_back_to_the_developer() {
    let catalog = builtins();
    for name in ["bug-fix", "backend-delivery"] {
        let sop = catalog.get(name).unwrap();
        let review = sop.feedback_rule(gatehouse_events::FeedbackKind::Review);
        let checks = sop.feedback_rule(gatehouse_events::FeedbackKind::ChecksFailed);
        let conflict = sop.feedback_rule(gatehouse_events::FeedbackKind::Conflict);
        assert_eq!(
            review.map(|(n, r)| (n.id.as_str(), r.send_back.as_str(), r.max)),
            Some(("deliver", "implement", 3)),
            "{name}"
        );
        assert_eq!(
            checks.map(|(_, r)| (r.send_back.as_str(), r.max, r.approvers.clone())),
            Some(("implement", 2, vec!["group:leads".to_owned()])),
            "{name}"
        );
        assert!(conflict.is_none(), "{name}: no node rebases");
    }
}
