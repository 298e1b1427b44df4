//! Reading files a node wrote: regular files of one name under the directory only, no link
//! followed at any component, nothing read past the limit, nothing that blocks.

use std::io::Write;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::{Duration, Instant};

use gatehouse_sandbox::untrusted::{self, Problem, Refused};

fn refused(base: &Path, name: &str) -> Refused {
    untrusted::read(base, name, 1024).expect_err(name)
}

#[test]
fn regular_files_are_read_at_any_depth() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("report.md"), "ok").unwrap();
    std::fs::create_dir_all(dir.path().join("logs/unit")).unwrap();
    std::fs::write(dir.path().join("logs/unit/test.txt"), "deep").unwrap();
    assert_eq!(untrusted::read(dir.path(), "report.md", 2).unwrap(), b"ok");
    assert_eq!(
        untrusted::read(dir.path(), "logs/unit/test.txt", 1024).unwrap(),
        b"deep"
    );
    let missing = refused(dir.path(), "gone.md");
    assert!(matches!(missing.problem, Problem::Missing), "{missing}");
    let missing = refused(dir.path(), "nowhere/gone.md");
    assert!(matches!(missing.problem, Problem::Missing), "{missing}");
}

#[test]
fn a_link_is_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("host.txt"), "host file").unwrap();
    symlink("/proc/self/environ", dir.path().join("report.md")).unwrap();
    symlink(outside.path().join("host.txt"), dir.path().join("host.md")).unwrap();
    symlink("report.md", dir.path().join("relative.md")).unwrap();
    for name in ["report.md", "host.md", "relative.md"] {
        let refused = refused(dir.path(), name);
        assert!(matches!(refused.problem, Problem::Link), "{refused}");
    }
    assert_eq!(
        refused(dir.path(), "report.md").to_string(),
        "artifact `report.md` is a symbolic link; artifacts must be regular files inside the artifact directory"
    );
}

#[test]
fn a_linked_directory_on_the_way_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(outside.path().join("deeper")).unwrap();
    std::fs::write(outside.path().join("deeper/host.txt"), "host file").unwrap();
    std::fs::create_dir(dir.path().join("real")).unwrap();
    symlink(outside.path(), dir.path().join("real/out")).unwrap();
    symlink("/proc/self", dir.path().join("proc")).unwrap();
    let refused_deep = refused(dir.path(), "real/out/deeper/host.txt");
    assert!(
        matches!(&refused_deep.problem, Problem::LinkOnTheWay(at) if at == "real/out"),
        "{refused_deep}"
    );
    assert!(
        refused_deep
            .to_string()
            .contains("under a symbolic link (`real/out`)")
    );
    let environ = refused(dir.path(), "proc/environ");
    assert!(
        matches!(environ.problem, Problem::LinkOnTheWay(_)),
        "{environ}"
    );
    std::fs::write(dir.path().join("file"), "x").unwrap();
    let under_file = refused(dir.path(), "file/x");
    assert!(
        matches!(under_file.problem, Problem::NotUnderADirectory(_)),
        "{under_file}"
    );
}

#[test]
fn names_that_reach_out_are_refused_before_anything_is_opened() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("a")).unwrap();
    for name in [
        "../x",
        "a/../../x",
        "/etc/passwd",
        "",
        "a//b",
        "./a",
        "a/",
        "a\0b",
    ] {
        let refused = refused(&dir.path().join("a"), name);
        assert!(
            matches!(refused.problem, Problem::BadName),
            "{name:?}: {refused}"
        );
    }
}

#[test]
fn only_regular_files_are_opened_and_a_fifo_does_not_block() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let fifo = dir.path().join("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).unwrap();
    let started = Instant::now();
    for (name, kind) in [
        ("pipe", "a FIFO"),
        ("sock", "a socket"),
        ("sub", "a directory"),
    ] {
        let refused = refused(dir.path(), name);
        assert!(
            matches!(refused.problem, Problem::NotRegular(k) if k == kind),
            "{name}: {refused}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[test]
fn a_hard_linked_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mine.txt"), "shared").unwrap();
    std::fs::hard_link(dir.path().join("mine.txt"), dir.path().join("other.txt")).unwrap();
    let refused = refused(dir.path(), "other.txt");
    assert!(
        matches!(refused.problem, Problem::HardLinked(2)),
        "{refused}"
    );
}

#[test]
fn the_size_is_capped_before_reading_and_while_reading() {
    let dir = tempfile::tempdir().unwrap();
    // Sparse: a reader that read it would take a gigabyte and some time.
    let big = std::fs::File::create(dir.path().join("big.bin")).unwrap();
    big.set_len(1 << 30).unwrap();
    let started = Instant::now();
    let too_large = untrusted::read(dir.path(), "big.bin", 1024).unwrap_err();
    assert!(
        matches!(too_large.problem, Problem::TooLarge { size, limit: 1024 } if size == 1 << 30),
        "{too_large}"
    );
    assert!(started.elapsed() < Duration::from_millis(500));

    // Growing after it was opened (and its size checked) still stops at the limit.
    let path = dir.path().join("growing.txt");
    std::fs::write(&path, "small").unwrap();
    let opened = untrusted::open(dir.path(), "growing.txt").unwrap();
    assert_eq!(opened.size(), 5);
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(&[b'x'; 4096])
        .unwrap();
    let grew = opened.read_all(100).unwrap_err();
    assert!(matches!(grew.problem, Problem::Grew(100)), "{grew}");

    // The start of a file is read whatever its size.
    let start = untrusted::open(dir.path(), "growing.txt")
        .unwrap()
        .read_start(3)
        .unwrap();
    assert_eq!(start, b"sma");
}

#[test]
fn the_directory_is_walked_too_and_a_refusal_names_the_file() {
    let data = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("report.md"), "host file").unwrap();
    std::fs::create_dir_all(data.path().join("runs/r/artifacts/n")).unwrap();
    // A node that replaced its whole artifact directory with a link.
    symlink(outside.path(), data.path().join("runs/r/artifacts/n/1")).unwrap();
    let refused =
        untrusted::read_in(data.path(), "runs/r/artifacts/n/1", "report.md", 1024).unwrap_err();
    assert_eq!(refused.name, "report.md");
    assert!(
        matches!(&refused.problem, Problem::LinkOnTheWay(at) if at == "runs/r/artifacts/n/1"),
        "{refused}"
    );
    std::fs::create_dir_all(data.path().join("runs/r/artifacts/m/1")).unwrap();
    std::fs::write(data.path().join("runs/r/artifacts/m/1/report.md"), "ok").unwrap();
    assert_eq!(
        untrusted::read_in(data.path(), "runs/r/artifacts/m/1", "report.md", 2).unwrap(),
        b"ok"
    );
    let bad = untrusted::read_in(data.path(), "runs/../r", "report.md", 2).unwrap_err();
    assert!(matches!(bad.problem, Problem::BadName), "{bad}");
}
