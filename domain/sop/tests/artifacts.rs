//! Artifact names: relative paths of plain components, refused otherwise where they are
//! written.

use gatehouse_sop::check_artifact_name;

mod common;
use common::errors;

#[test]
fn plain_relative_names_are_accepted() {
    for name in [
        "report.md",
        "logs/test.txt",
        ".hidden",
        "a..b",
        "v1.2/notes~",
        "a-b_c",
    ] {
        assert_eq!(check_artifact_name(name), Ok(()), "{name}");
    }
}

#[test]
fn names_that_could_leave_the_artifact_directory_are_refused() {
    let plain = |name: &str| {
        format!(
            "artifact `{name}` must be a relative path of plain names (no `..`, `.` or leading `/`)"
        )
    };
    for name in [
        "",
        ".",
        "..",
        "../x",
        "a/../b",
        "a/..",
        "./x",
        "a/./b",
        "/etc/passwd",
        "//x",
        "a//b",
        "a/",
    ] {
        assert_eq!(check_artifact_name(name), Err(plain(name)), "{name:?}");
    }
    assert_eq!(
        check_artifact_name("..\\x"),
        Err("artifact `..\\x` must not contain `\\`; separate directories with `/`".into())
    );
    assert_eq!(
        check_artifact_name("a\0b"),
        Err("artifact `a\\u{0}b` must not contain control characters".into())
    );
    assert_eq!(
        check_artifact_name("a\nb"),
        Err("artifact `a\\nb` must not contain control characters".into())
    );
    assert_eq!(
        check_artifact_name("~/x"),
        Err("artifact `~/x` must not start a name with `~`".into())
    );
    assert_eq!(
        check_artifact_name("a/~root"),
        Err("artifact `a/~root` must not start a name with `~`".into())
    );
}

#[test]
fn bad_artifact_names_are_located_in_the_file() {
    assert_eq!(
        errors(
            "name: x\nnodes:\n  a:\n    kind: script\n    run: ls\n    artifacts: [ok.md, ../x, /abs]\n"
        ),
        [
            "sops/x.yaml:6:24: artifact `../x` must be a relative path of plain names (no `..`, `.` or leading `/`)",
            "sops/x.yaml:6:30: artifact `/abs` must be a relative path of plain names (no `..`, `.` or leading `/`)",
        ]
    );
}

#[test]
fn imported_artifacts_are_plain_names_too() {
    assert_eq!(
        errors("name: x\nnodes:\n  c: { kind: sop, sop: other, import: [report/../../x] }\n"),
        [
            "sops/x.yaml:3:39: `import`: artifact `../../x` must be a relative path of plain names (no `..`, `.` or leading `/`)"
        ]
    );
}
