//! Every command read from its text, and every message for text that is not one.

use super::*;
use crate::command::{Command, Verb};
use crate::parse::ParseError;

const RUN: &str = "0190f3a2-7b1c-7d2e-8f00-0123456789ab";

fn parse(line: &str) -> Result<Command, ParseError> {
    line.parse()
}

fn ok(line: &str) -> Command {
    parse(line).unwrap_or_else(|error| panic!("{line:?}: {error}"))
}

fn error(line: &str) -> String {
    match parse(line) {
        Ok(command) => panic!("{line:?} parsed as {command:?}"),
        Err(error) => error.to_string(),
    }
}

fn run_id() -> IdRef {
    IdRef::parse(RUN).expect("a valid uuid")
}

fn gate(node: &str) -> Option<GateRef> {
    Some(GateRef {
        run: run_id(),
        node: node.into(),
    })
}

fn text(s: &str) -> Option<String> {
    Some(s.into())
}

#[test]
fn run_with_issue_and_params() {
    assert_eq!(
        ok(r#"run fix-bug on acme/api.rs#12 title="two words" env=prod empty="""#),
        Command::Run {
            sop: "fix-bug".into(),
            issue: Some(IssueRef {
                owner: "acme".into(),
                repo: "api.rs".into(),
                number: 12,
            }),
            params: BTreeMap::from([
                ("title".into(), "two words".into()),
                ("env".into(), "prod".into()),
                ("empty".into(), String::new()),
            ]),
        }
    );
}

#[test]
fn repository_names_have_plain_segments() {
    assert!(is_repo_name("acme/app.js"));
    for bad in [
        "acme/..",
        "./app",
        "acme",
        "acme/a/b",
        "acme/",
        "acme/a b",
        "acme/$(id)",
    ] {
        assert!(!is_repo_name(bad), "{bad}");
    }
}

#[test]
fn dot_segments_are_not_repositories() {
    for word in ["../api#1", "acme/..#1", "./x#2", "acme/.#3"] {
        assert!(
            issue_ref(word).is_err(),
            "`{word}` must not name a repository"
        );
    }
    assert!(issue_ref("acme/.github#4").is_ok(), "dot-names are names");
}

#[test]
fn run_alone_and_with_params_only() {
    assert_eq!(
        ok("run nightly_v1.2"),
        Command::Run {
            sop: "nightly_v1.2".into(),
            issue: None,
            params: BTreeMap::new(),
        }
    );
    assert_eq!(
        ok("run lint   path='src/a b.rs'  Mode-2=x#y"),
        Command::Run {
            sop: "lint".into(),
            issue: None,
            params: BTreeMap::from([
                ("path".into(), "src/a b.rs".into()),
                ("Mode-2".into(), "x#y".into()),
            ]),
        }
    );
    // `On` is the keyword in any case; a value may contain `=`.
    assert_eq!(
        ok("run x On a/b#1 q=a=b"),
        Command::Run {
            sop: "x".into(),
            issue: Some(IssueRef {
                owner: "a".into(),
                repo: "b".into(),
                number: 1,
            }),
            params: BTreeMap::from([("q".into(), "a=b".into())]),
        }
    );
}

#[test]
fn status_and_cancel_take_an_optional_run() {
    assert_eq!(ok("status"), Command::Status { run: None });
    assert_eq!(
        ok(&format!("status {RUN}")),
        Command::Status {
            run: Some(run_id())
        }
    );
    assert_eq!(ok("cancel"), Command::Cancel { run: None });
    assert_eq!(
        ok(&format!("Cancel {}", RUN.to_uppercase())),
        Command::Cancel {
            run: Some(run_id())
        }
    );
}

#[test]
fn commands_without_arguments() {
    assert_eq!(ok("runs"), Command::Runs);
    assert_eq!(ok("SCHEDULES"), Command::Schedules);
    assert_eq!(ok("sops"), Command::Sops);
    assert_eq!(ok("login"), Command::Login);
    assert_eq!(ok("  Login \n"), Command::Login);
    assert_eq!(ok("help"), Command::Help);
    assert_eq!(ok("Help me please"), Command::Help);
}

#[test]
fn approve_and_reject_with_gate_and_comment() {
    assert_eq!(
        ok("approve"),
        Command::Approve {
            gate: None,
            comment: None,
        }
    );
    assert_eq!(
        ok(&format!("Approve {RUN}/review")),
        Command::Approve {
            gate: gate("review"),
            comment: None,
        }
    );
    assert_eq!(
        ok(&format!("approve {RUN}/review   looks good,  ship it  ")),
        Command::Approve {
            gate: gate("review"),
            comment: text("looks good,  ship it"),
        }
    );
    assert_eq!(
        ok("reject it's not `done` #12"),
        Command::Reject {
            gate: None,
            comment: text("it's not `done` #12"),
        }
    );
}

#[test]
fn a_word_that_is_not_exactly_a_gate_starts_the_comment() {
    let not_gates = [
        format!("{RUN}/"),
        format!("{RUN}/a/b"),
        format!("{RUN}/no$pe"),
        format!("{}0/n", RUN.replace('-', "")),
        "019/review".to_owned(),
        format!("{{{RUN}}}/n"),
        "abc/review".to_owned(),
        RUN.to_owned(),
    ];
    for word in not_gates {
        assert_eq!(
            ok(&format!("reject {word} because")),
            Command::Reject {
                gate: None,
                comment: Some(format!("{word} because")),
            },
            "{word}"
        );
    }
}

#[test]
fn a_quoted_comment_loses_its_quotes() {
    assert_eq!(
        ok(&format!(r#"approve "{RUN}/review is fine""#)),
        Command::Approve {
            gate: None,
            comment: Some(format!("{RUN}/review is fine")),
        }
    );
    assert_eq!(
        ok("approve '  padded '"),
        Command::Approve {
            gate: None,
            comment: text("  padded "),
        }
    );
    assert_eq!(
        ok(r#"approve """#),
        Command::Approve {
            gate: None,
            comment: None,
        }
    );
    // Not one quoted word: kept as written.
    for comment in [r#""a" and "b""#, r#""unclosed"#, "'a' #b"] {
        assert_eq!(
            ok(&format!("approve {comment}")),
            Command::Approve {
                gate: None,
                comment: text(comment),
            }
        );
    }
}

#[test]
fn send_back_and_its_alias() {
    assert_eq!(
        ok(&format!("send-back build {RUN}/review add tests")),
        Command::SendBack {
            node: "build".into(),
            gate: gate("review"),
            comment: text("add tests"),
        }
    );
    assert_eq!(
        ok("Send_Back build please add tests"),
        Command::SendBack {
            node: "build".into(),
            gate: None,
            comment: text("please add tests"),
        }
    );
    assert_eq!(
        ok("SEND-BACK build"),
        Command::SendBack {
            node: "build".into(),
            gate: None,
            comment: None,
        }
    );
}

#[test]
fn retry_takes_a_node() {
    assert_eq!(
        ok("retry build.v2"),
        Command::Retry {
            node: "build.v2".into()
        }
    );
}

#[test]
fn newlines_separate_words_and_stay_in_comments() {
    assert_eq!(
        ok("approve\nfirst line\nsecond line\n"),
        Command::Approve {
            gate: None,
            comment: text("first line\nsecond line"),
        }
    );
    assert_eq!(
        ok("run\nx\nk=v"),
        Command::Run {
            sop: "x".into(),
            issue: None,
            params: BTreeMap::from([("k".into(), "v".into())]),
        }
    );
}

#[test]
fn empty_and_unknown() {
    assert_eq!(parse(""), Err(ParseError::Empty));
    assert_eq!(parse(" \n\t"), Err(ParseError::Empty));
    assert_eq!(error(""), "no command given; try `help`");
    assert_eq!(
        parse("Deploy now"),
        Err(ParseError::UnknownCommand("Deploy".into()))
    );
    assert_eq!(
        error("sendback x"),
        "unknown command `sendback`; try `help`"
    );
}

#[test]
fn every_error_message() {
    let usage = |verb: Verb| format!(" (usage: `{}`)", verb.usage());
    let run = usage(Verb::Run);
    let cases = [
        ("run", format!("run needs a SOP{run}")),
        ("run on acme/api#1", format!("run needs a SOP{run}")),
        (
            "run fix$",
            format!("run: `fix$` is not a SOP id (letters, digits, `-`, `_`, `.`){run}"),
        ),
        (
            "run fix on",
            format!("run needs OWNER/REPO#N after `on`{run}"),
        ),
        (
            "run fix on acme/x",
            format!("run: `acme/x` is not OWNER/REPO#N{run}"),
        ),
        (
            "run fix on acme#3",
            format!("run: `acme#3` is not OWNER/REPO#N{run}"),
        ),
        (
            "run fix on acme/x#+3",
            format!("run: `acme/x#+3` is not OWNER/REPO#N{run}"),
        ),
        (
            "run fix on acme/x#99999999999999999999",
            format!("run: `acme/x#99999999999999999999` is not OWNER/REPO#N{run}"),
        ),
        (
            "run fix on acme/x#0",
            format!("run: `acme/x#0`: issue numbers start at 1{run}"),
        ),
        ("run fix foo", format!("run: `foo` is not KEY=VALUE{run}")),
        (
            "run fix k=1 on acme/x#1",
            format!("run: `on` is not KEY=VALUE{run}"),
        ),
        ("run fix =v", format!("run: `=v` is not KEY=VALUE{run}")),
        (
            "run fix a.b=v",
            format!("run: `a.b=v` is not KEY=VALUE{run}"),
        ),
        ("run fix #12", format!("run: `#12` is not KEY=VALUE{run}")),
        (
            "run fix k=1 title=x K=2 title=y",
            format!("run: `title` is given twice{run}"),
        ),
        (
            r#"run fix title="open"#,
            format!("run: a quote is not closed{run}"),
        ),
        (
            "status nope",
            format!(
                "status: `nope` is not a run id (a UUID, or its first 4 or more hex digits){}",
                usage(Verb::Status)
            ),
        ),
        (
            &format!("status {RUN} more"),
            format!("status: unexpected `more`{}", usage(Verb::Status)),
        ),
        (
            "cancel 42",
            format!(
                "cancel: `42` is not a run id (a UUID, or its first 4 or more hex digits){}",
                usage(Verb::Cancel)
            ),
        ),
        (
            "runs all",
            format!("runs: unexpected `all`{}", usage(Verb::Runs)),
        ),
        (
            "schedules x",
            format!("schedules: unexpected `x`{}", usage(Verb::Schedules)),
        ),
        (
            "login ana",
            format!("login: unexpected `ana`{}", usage(Verb::Login)),
        ),
        (
            "send-back",
            format!(
                "send-back needs the NODE to send back to{}",
                usage(Verb::SendBack)
            ),
        ),
        (
            &format!("send-back {RUN}/review redo"),
            format!(
                "send-back needs the NODE to send back to{}",
                usage(Verb::SendBack)
            ),
        ),
        (
            "send_back build!",
            format!(
                "send-back: `build!` is not a NODE id (letters, digits, `-`, `_`, `.`){}",
                usage(Verb::SendBack)
            ),
        ),
        ("retry", format!("retry needs a NODE{}", usage(Verb::Retry))),
        (
            "retry a b",
            format!("retry: unexpected `b`{}", usage(Verb::Retry)),
        ),
        (
            "retry a/b",
            format!(
                "retry: `a/b` is not a NODE id (letters, digits, `-`, `_`, `.`){}",
                usage(Verb::Retry)
            ),
        ),
    ];
    for (line, message) in cases {
        assert_eq!(error(line), message, "{line}");
    }
}

#[test]
fn errors_are_values_naming_the_command() {
    assert_eq!(
        parse("retry"),
        Err(ParseError::Invalid {
            verb: Verb::Retry,
            problem: Problem::Missing("a NODE"),
        })
    );
    assert_eq!(
        parse("run x y=1 y=2"),
        Err(ParseError::Invalid {
            verb: Verb::Run,
            problem: Problem::RepeatedKey("y".into()),
        })
    );
}

#[test]
fn conversation_commands_keep_their_text_verbatim() {
    assert_eq!(
        ok("steer use the v2 endpoint,\nnot v1"),
        Command::Steer {
            text: "use the v2 endpoint,\nnot v1".into()
        }
    );
    assert_eq!(ok("STOP"), Command::Stop);
    assert_eq!(
        ok("ask reviewer is this safe? it's `rm -rf`"),
        Command::Ask {
            role: "reviewer".into(),
            text: "is this safe? it's `rm -rf`".into(),
        }
    );
    assert_eq!(ok("deliver"), Command::Deliver { draft: false });
    assert_eq!(ok("deliver DRAFT"), Command::Deliver { draft: true });
    assert_eq!(
        ok(&format!("take over {RUN}")),
        Command::TakeOver { run: run_id() }
    );
    for command in [
        ok(&format!("take over {RUN}")),
        ok("deliver draft"),
        ok("steer do x"),
        ok("stop"),
        ok("ask reviewer look at it"),
    ] {
        assert_eq!(ok(&command.to_string()), command);
    }
    for (line, message) in [
        (
            "steer  ",
            "steer needs the TEXT to steer with (usage: `steer TEXT`)",
        ),
        ("ask", "ask needs a ROLE (usage: `ask ROLE TEXT`)"),
        (
            "ask reviewer",
            "ask needs the TEXT to ask (usage: `ask ROLE TEXT`)",
        ),
        ("stop now", "stop: unexpected `now` (usage: `stop`)"),
        (
            "take",
            "take over needs `over` and a RUN (usage: `take over RUN`)",
        ),
        (
            "take over",
            "take over needs a RUN (usage: `take over RUN`)",
        ),
        (
            "take over 12",
            "take over: `12` is not a run id (a UUID, or its first 4 or more hex digits) (usage: `take over RUN`)",
        ),
        (
            "deliver now",
            "deliver: unexpected `now` (usage: `deliver [draft]`)",
        ),
    ] {
        assert_eq!(error(line), message, "{line}");
    }
}

#[test]
fn runs_and_gates_take_prefixes_of_ids() {
    let prefix = || IdRef::parse("0190f3a2-7b1c").expect("a prefix");
    assert_eq!(
        ok("status 0190F3A2-7B1C"),
        Command::Status {
            run: Some(prefix())
        }
    );
    assert_eq!(
        ok("cancel 0190f3a27b1c"),
        Command::Cancel {
            run: Some(prefix())
        }
    );
    assert_eq!(
        ok("take over 0190f3a2-7b1c"),
        Command::TakeOver { run: prefix() }
    );
    assert_eq!(
        ok("approve 0190f3a2-7b1c/review ok"),
        Command::Approve {
            gate: Some(GateRef {
                run: prefix(),
                node: "review".into()
            }),
            comment: text("ok"),
        }
    );
    assert_eq!(
        ok(&format!("status {}", RUN.replace('-', ""))),
        Command::Status {
            run: Some(run_id())
        }
    );
    // The canonical text reads back as the same prefix.
    let cancel = ok("cancel 0190F3A2-7b1c");
    assert_eq!(ok(&cancel.to_string()), cancel);
    assert_eq!(
        error("cancel 019"),
        format!(
            "cancel: `019` is not a run id (a UUID, or its first 4 or more hex digits) (usage: `{}`)",
            Verb::Cancel.usage()
        )
    );
}
