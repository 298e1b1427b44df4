//! `budget` of an SOP: what one run may spend at the model gateway.

use gatehouse_agent::Limit;
use gatehouse_sop::parse;

mod common;
use common::errors;

#[test]
fn a_budget_is_read_in_dollars_or_tokens() {
    let sop = parse(
        "s.yaml",
        "name: s\nbudget: \"$5\"\nnodes:\n  a: { kind: script, run: ls }\n",
    )
    .unwrap();
    assert_eq!(sop.budget, Some(Limit::Usd { micros: 5_000_000 }));
    let sop = parse(
        "s.yaml",
        "name: s\nbudget: 200k tokens\nnodes:\n  a: { kind: script, run: ls }\n",
    )
    .unwrap();
    assert_eq!(sop.budget, Some(Limit::Tokens { count: 200_000 }));
    let none = parse(
        "s.yaml",
        "name: s\nnodes:\n  a: { kind: script, run: ls }\n",
    )
    .unwrap();
    assert_eq!(none.budget, None);
}

#[test]
fn a_bad_budget_is_located_and_says_what_to_write() {
    let found = errors("name: x\nbudget: 20 dollars\nnodes:\n  a: { kind: script, run: ls }\n");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("sops/x.yaml:2:9: budget \"20 dollars\""),
        "{found:?}"
    );
    assert!(found[0].contains("write dollars like \"$20\""), "{found:?}");
}

#[test]
fn on_budget_asks_named_people_or_anyone_and_the_sop_sets_a_default() {
    let sop = parse(
        "s.yaml",
        r#"
name: s
on_budget: ask
nodes:
  a: { kind: agent, role: coder, prompt: go }
  b:
    kind: agent
    role: coder
    prompt: go
    on_budget: { ask: ["group:leads", ana], expires_in: 2h, allow_requester: true }
  c: { kind: agent, role: coder, prompt: go, on_budget: fail }
  d: { kind: script, run: ls }
"#,
    )
    .unwrap();
    let a = sop.node("a").unwrap().gate().expect("the SOP's default");
    assert!(a.approvers.is_empty());
    assert!(!a.allow_requester);
    let b = sop.node("b").unwrap().gate().unwrap();
    assert_eq!(b.approvers, ["group:leads", "ana"]);
    assert_eq!(b.expires_in, Some(std::time::Duration::from_secs(7200)));
    assert!(b.allow_requester);
    assert!(b.send_back.is_empty());
    assert_eq!(sop.node("c").unwrap().gate(), None);
    assert_eq!(
        sop.node("d").unwrap().gate(),
        None,
        "a script spends nothing"
    );
}

#[test]
fn a_bad_on_budget_is_located_and_says_what_to_write() {
    let found =
        errors("name: x\nnodes:\n  a: { kind: agent, role: c, prompt: p, on_budget: maybe }\n");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("`on_budget` is `maybe`; expected fail, ask, or { ask: [people] }"),
        "{found:?}"
    );
    let found = errors("name: x\nnodes:\n  a: { kind: script, run: ls, on_budget: ask }\n");
    assert!(
        found[0].contains("does not apply to script nodes"),
        "{found:?}"
    );
    let found = errors(
        "name: x\nnodes:\n  a: { kind: agent, role: c, prompt: p, on_budget: { ask: [] } }\n",
    );
    assert!(
        found[0].contains("`on_budget.ask` names nobody"),
        "{found:?}"
    );
    let found = errors(
        "name: x\nnodes:\n  a: { kind: agent, role: c, prompt: p, on_budget: { ask: [a], when: now } }\n",
    );
    assert!(found[0].contains("when"), "{found:?}");
}
