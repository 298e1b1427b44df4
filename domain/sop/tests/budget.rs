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
