//! Properties over the public API: scanning never panics, and a command's canonical text reads
//! back as the same command, alone, in a comment and in a chat message.

use gatehouse_commands::{
    Command, GateRef, IdRef, IssueRef, Mention, new_commands, parse_comment, parse_mention,
};
use proptest::prelude::*;
use uuid::Uuid;

fn id() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_.-]{1,12}"
}

/// Anything, newlines, quotes and NUL included.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "(?s).{1,24}",
        "[ '\"\\\\#`a-z/-]{1,24}",
        Just("0190f3a2-7b1c-7d2e-8f00-0123456789ab/review x".to_owned()),
    ]
}

/// A whole run id, or a prefix of one as people type them.
fn run_ref() -> impl Strategy<Value = IdRef> {
    prop_oneof![
        any::<u128>().prop_map(|run| IdRef::from(Uuid::from_u128(run))),
        "[0-9a-fA-F]{4,31}".prop_map(|digits| IdRef::parse(&digits).expect("hex digits")),
    ]
}

fn gate() -> impl Strategy<Value = GateRef> {
    (run_ref(), id()).prop_map(|(run, node)| GateRef { run, node })
}

fn command() -> impl Strategy<Value = Command> {
    let run = || proptest::option::of(run_ref());
    // `.` and `..` are path segments, never owner or repository names.
    let name = || id().prop_filter("not a dot segment", |s| s != "." && s != "..");
    let issue = (name(), name(), 1..=u64::MAX).prop_map(|(owner, repo, number)| IssueRef {
        owner,
        repo,
        number,
    });
    let params =
        proptest::collection::btree_map("[A-Za-z0-9_-]{1,8}", "(?s).{0,12}|[ '\"#=]{0,4}", 0..4);
    let decision = || (proptest::option::of(gate()), proptest::option::of(text()));
    prop_oneof![
        (
            id().prop_filter("`on` is not a SOP", |sop| !sop.eq_ignore_ascii_case("on")),
            proptest::option::of(issue),
            params,
        )
            .prop_map(|(sop, issue, params)| Command::Run { sop, issue, params }),
        run().prop_map(|run| Command::Status { run }),
        Just(Command::Runs),
        decision().prop_map(|(gate, comment)| Command::Approve { gate, comment }),
        decision().prop_map(|(gate, comment)| Command::Reject { gate, comment }),
        (id(), decision()).prop_map(|(node, (gate, comment))| Command::SendBack {
            node,
            gate,
            comment
        }),
        run().prop_map(|run| Command::Cancel { run }),
        id().prop_map(|node| Command::Retry { node }),
        Just(Command::Schedules),
        Just(Command::Sops),
        Just(Command::Login),
        Just(Command::Help),
    ]
}

/// Bodies built from the pieces the scanner reacts to, so most cases exercise its states.
fn body() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("/gatehouse ".to_owned()),
        Just("@gatehouse".to_owned()),
        Just("@GateHouse: ".to_owned()),
        Just("```".to_owned()),
        Just("~~~ info".to_owned()),
        Just("`".to_owned()),
        Just("<!--".to_owned()),
        Just("-->".to_owned()),
        Just("> ".to_owned()),
        Just("    ".to_owned()),
        Just("\t".to_owned()),
        Just("\n".to_owned()),
        Just("\r\n".to_owned()),
        Just("approve ".to_owned()),
        Just("run x on a/b#0 k=\"v ".to_owned()),
        Just("0190f3a2-7b1c-7d2e-8f00-0123456789ab/n ".to_owned()),
        "(?s).{0,8}",
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn scanning_never_panics(body in body(), other in "(?s).{0,200}", login in "@?[a-zA-Z-]{0,10}") {
        for found in parse_comment(&body, "gatehouse").into_iter().chain(parse_comment(&other, &login)) {
            prop_assert!(found.line >= 1);
            prop_assert_eq!(found.text.trim(), &found.text);
        }
        new_commands(&other, &body, "gatehouse");
        parse_mention(&other);
    }

    #[test]
    fn canonical_text_parses_back(command in command()) {
        let text = command.to_string();
        prop_assert_eq!(text.parse::<Command>(), Ok(command), "{:?}", text);
    }

    #[test]
    fn canonical_text_parses_back_from_a_comment(command in command()) {
        let text = command.to_string();
        // A comment command is one line, and an HTML comment in it is hidden from readers.
        prop_assume!(!text.contains(['\n', '\r']) && !text.contains("<!--"));
        let found = parse_comment(&format!("/gatehouse {text}\n@gatehouse {text}"), "gatehouse");
        prop_assert_eq!(found.len(), 2);
        for found in found {
            prop_assert_eq!(&found.result, &Ok(command.clone()), "{:?}", text);
            prop_assert_eq!(found.normalized(), text.clone());
        }
    }

    #[test]
    fn canonical_text_parses_back_from_a_mention(command in command()) {
        prop_assert_eq!(parse_mention(&command.to_string()), Mention::Command(command));
    }
}
