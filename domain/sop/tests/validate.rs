//! The SOP format: what is accepted, and the exact message and position for what is not.

use std::time::Duration;

use gatehouse_sop::{Catalog, NodeKind, OnExpire, parse};

mod common;
use common::errors;

const VALID: &str = "\
name: demo
params:
  repo: { required: true }
nodes:
  build:
    kind: script
    run: make
    timeout: 10m
    retry: { max: 2, backoff: 30s }
    artifacts: [out.txt]
    env: { LEVEL: 3 }
  lint:
    kind: script
    run: make lint
  review:
    kind: gate
    needs: [build, lint]
    approvers: [ana, group:leads]
    min_approvals: 2
    send_back: [build]
    expires_in: 2h
    on_expire: approve
  ship:
    kind: deliver
    needs: [review]
    mode: direct
    branch: main
";

#[test]
fn a_valid_sop_parses_into_its_definition() {
    let sop = parse("sops/demo.yaml", VALID).unwrap();
    assert_eq!(sop.name, "demo");
    assert_eq!(sop.title, "demo");
    assert_eq!(sop.sandbox, "default");
    assert!(sop.params["repo"].required);
    let ids: Vec<_> = sop.nodes.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(ids, ["build", "lint", "review", "ship"]);
    let build = sop.node("build").unwrap();
    assert_eq!(build.timeout, Some(Duration::from_secs(600)));
    assert_eq!(
        (build.retry.max, build.retry.backoff),
        (2, Duration::from_secs(30))
    );
    assert_eq!(build.env["LEVEL"], "3");
    let NodeKind::Gate(gate) = &sop.node("review").unwrap().kind else {
        panic!("review is a gate")
    };
    assert_eq!(gate.min_approvals, 2);
    assert_eq!(gate.send_back, ["build"]);
    assert_eq!(gate.on_expire, OnExpire::Approve);
    assert_eq!(gate.max_rework, 3);
    assert!(sop.version.starts_with("sha256:") && sop.version.len() == 71);
    assert_eq!(sop.short_version().len(), 12);
}

#[test]
fn the_version_follows_the_content() {
    let a = parse("a.yaml", VALID).unwrap();
    let same = parse("b.yaml", &VALID.replace('\n', "\r\n")).unwrap();
    let changed = parse("a.yaml", &VALID.replace("make lint", "make lint-all")).unwrap();
    assert_eq!(
        a.version, same.version,
        "line endings do not make a new version"
    );
    assert_ne!(a.version, changed.version);
}

#[test]
fn syntax_errors_are_located() {
    assert_eq!(
        errors("name: x\nnodes:\n  a: [unclosed\n"),
        ["sops/x.yaml:4:1: invalid YAML: while parsing a flow sequence, expected ',' or ']'"]
    );
}

#[test]
fn unknown_keys_are_located_and_list_the_expected_ones() {
    let e = errors("name: x\nnodes:\n  a:\n    kind: script\n    run: ls\n    retries: 3\n");
    assert_eq!(e.len(), 1);
    assert!(
        e[0].starts_with(
            "sops/x.yaml:6:5: unknown key `retries`; expected one of: kind, title, needs"
        ),
        "{e:?}"
    );
}

#[test]
fn duplicate_node_ids_are_located_with_the_first_one() {
    assert_eq!(
        errors(
            "name: x\nnodes:\n  a: { kind: script, run: ls }\n  a: { kind: script, run: pwd }\n"
        ),
        ["sops/x.yaml:4:3: `a` is defined twice (first on line 3)"]
    );
}

#[test]
fn unknown_references_are_located_at_the_reference() {
    assert_eq!(
        errors(
            "name: x\nnodes:\n  a: { kind: script, run: ls }\n  g:\n    kind: gate\n    needs: [a, b]\n    approvers: [ana]\n    send_back: [c]\n"
        ),
        [
            "sops/x.yaml:6:16: `needs` names `b`, which is not a node of this SOP",
            "sops/x.yaml:8:17: `send_back` names `c`, which is not a node of this SOP",
        ]
    );
}

#[test]
fn cycles_are_reported_once_and_their_dependents_are_unreachable() {
    assert_eq!(
        errors(
            "name: x\nnodes:\n  a: { kind: script, run: ls, needs: [c] }\n  b: { kind: script, run: ls, needs: [a] }\n  c: { kind: script, run: ls, needs: [b] }\n  d: { kind: script, run: ls, needs: [c] }\n"
        ),
        [
            "sops/x.yaml:3:3: `needs` forms a cycle: a → b → c → a (only send_back may point to earlier nodes)",
            "sops/x.yaml:6:3: node `d` can never run: it depends on a cycle",
        ]
    );
    assert_eq!(
        errors("name: x\nnodes:\n  a: { kind: script, run: ls, needs: [a] }\n"),
        ["sops/x.yaml:3:39: node `a` needs itself"]
    );
}

#[test]
fn send_back_must_point_upstream() {
    assert_eq!(
        errors(
            "name: x\nnodes:\n  a: { kind: script, run: ls }\n  g: { kind: gate, needs: [a], approvers: [ana], send_back: [z] }\n  z: { kind: script, run: ls, needs: [g], on_failure: { send_back: a, max: 0 } }\n"
        ),
        [
            "sops/x.yaml:4:62: `send_back` of `g` names `z`, which is not upstream of it; work can only be sent back to an earlier node",
            "sops/x.yaml:5:76: `on_failure.max` must be at least 1",
        ]
    );
}

#[test]
fn bad_durations_and_values_are_located() {
    let e = errors(
        "name: x\nnodes:\n  a:\n    kind: script\n    run: ls\n    timeout: soon\n  g:\n    kind: gate\n    needs: [a]\n    approvers: [ana]\n    min_approvals: 0\n    on_expire: later\n",
    );
    assert_eq!(e.len(), 4, "{e:?}");
    // The duration parser's own explanation sits in the parentheses.
    assert!(
        e[0].starts_with("sops/x.yaml:6:14: `timeout`: invalid duration `soon` ("),
        "{}",
        e[0]
    );
    assert!(e[0].ends_with("); use e.g. 30s, 10m, 1h30m"), "{}", e[0]);
    assert_eq!(
        e[1..],
        [
            "sops/x.yaml:11:20: `min_approvals` must be at least 1",
            "sops/x.yaml:12:16: `on_expire` is `later`; expected reject or approve",
            "sops/x.yaml:12:16: `on_expire` needs `expires_in`",
        ]
    );
}

#[test]
fn keys_of_other_kinds_and_missing_keys_are_named() {
    assert_eq!(
        errors(
            "name: x\nnodes:\n  a:\n    kind: script\n    approvers: [ana]\n  g:\n    kind: gate\n    run: ls\n  w:\n    kind: wizard\n"
        ),
        [
            "sops/x.yaml:3:3: script node `a` needs `run`",
            "sops/x.yaml:5:16: `approvers` does not apply to script nodes",
            "sops/x.yaml:6:3: gate `g` needs `approvers` (person ids or group:<name>)",
            "sops/x.yaml:8:10: `run` does not apply to gate nodes",
            "sops/x.yaml:10:11: unknown node kind `wizard`; expected script, gate, sop, agent or deliver",
        ]
    );
}

#[test]
fn names_must_be_usable() {
    assert_eq!(
        errors("name: Bad Name\nnodes:\n  Step1: { kind: script, run: ls }\n"),
        [
            "sops/x.yaml:1:7: invalid SOP name `Bad Name`: use lower-case letters, digits, `-` and `_`, starting with a letter",
            "sops/x.yaml:3:3: invalid node id `Step1`: use lower-case letters, digits, `-` and `_`, starting with a letter",
        ]
    );
    assert_eq!(
        errors("- just\n- a list\n"),
        ["sops/x.yaml:1:1: an SOP file must be a mapping with `name` and `nodes`"]
    );
}

#[test]
fn every_built_in_is_valid() {
    let (catalog, errors) = Catalog::load(&[] as &[&str]);
    assert!(errors.is_empty(), "{errors:?}");
    let names: Vec<_> = catalog.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["backend-delivery", "bug-fix", "platform-check"]);
    let check = catalog.get("platform-check").unwrap();
    assert_eq!(check.source, "builtin:platform-check");
    let kinds: Vec<_> = check.nodes.iter().map(|n| n.kind.name()).collect();
    assert_eq!(kinds, ["script", "gate", "script"]);
    let delivery: Vec<_> = catalog
        .get("bug-fix")
        .unwrap()
        .nodes
        .iter()
        .map(|n| n.id.as_str())
        .collect();
    assert_eq!(
        delivery,
        [
            "clarify",
            "design",
            "implement",
            "review",
            "test",
            "acceptance",
            "deliver"
        ]
    );
}

#[test]
fn user_directories_override_built_ins_and_report_bad_files() {
    let dir = std::env::temp_dir().join(format!("gatehouse-sop-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("check.yaml"),
        "name: platform-check\ntitle: Ours\nnodes:\n  a: { kind: script, run: ls }\n",
    )
    .unwrap();
    std::fs::write(dir.join("broken.yml"), "name: broken\nnodes: {}\n").unwrap();
    std::fs::write(dir.join("notes.txt"), "not an SOP").unwrap();
    let (catalog, errors) = Catalog::load(&[&dir, &dir.join("missing")]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(catalog.get("platform-check").unwrap().title, "Ours");
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0]
            .to_string()
            .ends_with("broken.yml:1:7: an SOP needs at least one node under `nodes`"),
        "{}",
        errors[0]
    );
}

#[test]
fn starting_checks_parameters_and_executable_kinds() {
    use std::collections::BTreeMap;
    let (catalog, _) = Catalog::load(&[] as &[&str]);
    let check = catalog.get("platform-check").unwrap();
    assert_eq!(check.check_start(&BTreeMap::new()), Ok(()));
    assert_eq!(
        check.check_start(&BTreeMap::from([("colour".into(), "red".into())])),
        Err("`platform-check` has no parameter `colour`".into())
    );
    let repo = BTreeMap::from([("repo".into(), "acme/api".into())]);
    assert_eq!(catalog.get("bug-fix").unwrap().check_start(&repo), Ok(()));
    let mut configured = catalog.clone();
    configured.require_roles(["analyst", "architect", "developer"]);
    assert_eq!(
        configured.get("bug-fix").unwrap().check_start(&repo),
        Err("`bug-fix` cannot start: node `review` uses the agent role `reviewer`, which is not configured (add [roles.reviewer] to the configuration)".into())
    );
    configured.require_roles(["analyst", "architect", "developer", "reviewer"]);
    assert_eq!(
        configured.get("bug-fix").unwrap().check_start(&repo),
        Ok(())
    );
    let needs_repo = parse("r.yaml", "name: r\nparams:\n  repo: { required: true }\n  level: { default: \"3\" }\nnodes:\n  a: { kind: script, run: ls }\n").unwrap();
    assert_eq!(
        needs_repo.check_start(&BTreeMap::new()),
        Err("`r` needs the parameters: repo".into())
    );
    let given = BTreeMap::from([("repo".into(), "x".into())]);
    assert_eq!(
        needs_repo.params_with_defaults(&given),
        BTreeMap::from([("level".into(), "3".into()), ("repo".into(), "x".into())])
    );
}

#[test]
fn imports_name_a_child_node_and_file() {
    assert_eq!(
        errors("name: x\nnodes:\n  c: { kind: sop, sop: other, import: [report.md] }\n"),
        [
            "sops/x.yaml:3:39: `import` entry `report.md` must be NODE/FILE, a node of the child SOP and one of its artifacts"
        ]
    );
}

#[test]
fn prompt_templates_are_checked_where_they_are_written() {
    assert_eq!(
        errors(
            "name: x\nnodes:\n  a:\n    kind: agent\n    role: dev\n    prompt: \"Fix {{ requirment.title }}\"\n  b:\n    kind: agent\n    role: dev\n    prompt: \"{% if x %}\"\n"
        ),
        [
            "sops/x.yaml:6:13: `prompt`: prompt template, line 1: `requirment` is undefined; there is no variable `requirment`; a prompt sees requirement, params, inputs, rework_comment, run_id, node, attempt, project",
            "sops/x.yaml:10:13: `prompt`: prompt template, line 1: syntax error: unexpected end of input, expected end of block",
        ]
    );
}
