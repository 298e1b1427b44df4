//! People lists: `starters` of an SOP and `approvers` of a gate.

use gatehouse_sop::{check_person_or_group, parse};

mod common;
use common::errors;

fn groups(names: &[&str]) -> Vec<String> {
    names.iter().map(|g| (*g).to_owned()).collect()
}

#[test]
fn starters_are_exposed_and_decide_who_may_start() {
    let sop = parse(
        "s.yaml",
        "name: s\nstarters: [ana, group:leads]\nnodes:\n  a: { kind: script, run: ls }\n",
    )
    .unwrap();
    assert_eq!(
        sop.starters.as_deref(),
        Some(&["ana".to_owned(), "group:leads".to_owned()][..])
    );
    assert!(sop.may_start("ana", &[]), "named directly");
    assert!(
        sop.may_start("bo", &groups(&["ops", "leads"])),
        "through a group"
    );
    assert!(!sop.may_start("bo", &groups(&["ops"])));
    assert!(
        !sop.may_start("leads", &[]),
        "a person's id is not a group's name"
    );
    assert!(
        !sop.may_start("group:leads", &[]),
        "an id that looks like an entry names nobody"
    );
}

#[test]
fn without_starters_anyone_with_run_rights_may_start() {
    let sop = parse(
        "s.yaml",
        "name: s\nnodes:\n  a: { kind: script, run: ls }\n",
    )
    .unwrap();
    assert_eq!(sop.starters, None);
    assert!(sop.may_start("anyone", &[]));
}

#[test]
fn people_entries_must_name_someone() {
    assert_eq!(
        errors(
            "name: x\nstarters: [ana, 'group:', '']\nnodes:\n  g: { kind: gate, approvers: [group:leads, '  '] }\n"
        ),
        [
            "sops/x.yaml:2:17: `starters`: `group:` names no group; write group:<name>",
            "sops/x.yaml:2:27: `starters`: an empty entry names nobody; write a person's id or group:<name>",
            "sops/x.yaml:4:45: `approvers`: an empty entry names nobody; write a person's id or group:<name>",
        ]
    );
    assert_eq!(
        errors("name: x\nstarters: []\nnodes:\n  a: { kind: script, run: ls }\n"),
        [
            "sops/x.yaml:2:11: `starters` names nobody, so no run could start; name person ids or group:<name>, or leave it out to let anyone with run rights start"
        ]
    );
}

#[test]
fn the_entry_check_is_public_for_other_people_lists() {
    assert_eq!(check_person_or_group("ana"), Ok(()));
    assert_eq!(check_person_or_group("group:leads"), Ok(()));
    assert!(check_person_or_group("group: ").is_err());
    assert!(check_person_or_group("").is_err());
}
