//! The built relay binary against a Unix socket served by the test: forwarding, exit codes
//! passed through, and the refusals that stop it before the program runs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const RELAY: &str = env!("CARGO_BIN_EXE_gatehouse-relay");

/// A Unix socket answering each line with the line upper-cased.
fn echo_server(dir: &Path) -> PathBuf {
    let path = dir.join("echo.sock");
    let listener = UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                for line in BufReader::new(stream).lines() {
                    let Ok(line) = line else { return };
                    if writer
                        .write_all(format!("{}\n", line.to_uppercase()).as_bytes())
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    path
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Two distinct free ports: each is released before the relay binds it, so the kernel may
/// hand the same one out twice in a row.
fn two_free_ports() -> (u16, u16) {
    let a = free_port();
    let b = std::iter::repeat_with(free_port).find(|b| *b != a).unwrap();
    (a, b)
}

fn relay(forwards: &[(u16, &Path)], program: &[&str]) -> Command {
    let mut command = Command::new(RELAY);
    for (port, socket) in forwards {
        command
            .arg("--forward")
            .arg(format!("127.0.0.1:{port}={}", socket.display()));
    }
    command.arg("--").args(program);
    command
}

fn output(mut command: Command) -> Output {
    command.stdin(Stdio::null()).output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Waits up to `limit` for the child to end; its code.
fn wait_within(child: &mut Child, limit: Duration) -> Option<i32> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    None
}

#[test]
fn the_program_reaches_the_socket_through_the_port_and_its_code_is_the_relays() {
    let dir = tempfile::tempdir().unwrap();
    let socket = echo_server(dir.path());
    let port = free_port();
    // bash's /dev/tcp: the port is bound before the program starts, no retry needed.
    let script = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{port}; echo hello >&3; read -r answer <&3; \
         echo \"got $answer\"; [ \"$answer\" = HELLO ] && exit 7"
    );
    let out = output(relay(&[(port, &socket)], &["bash", "-c", &script]));
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "got HELLO\n");
}

#[test]
fn several_ports_each_reach_their_own_socket() {
    let dir = tempfile::tempdir().unwrap();
    let first = echo_server(dir.path());
    let other_dir = tempfile::tempdir().unwrap();
    let second = echo_server(other_dir.path());
    let (a, b) = two_free_ports();
    let script = format!(
        "for p in {a} {b}; do exec 3<>/dev/tcp/127.0.0.1/$p; echo x$p >&3; read -r r <&3; \
         echo $r; exec 3<&-; done"
    );
    let out = output(relay(
        &[(a, &first), (b, &second)],
        &["bash", "-c", &script],
    ));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("X{a}\nX{b}\n")
    );
}

#[test]
fn a_signal_that_kills_the_program_is_128_plus_it() {
    let dir = tempfile::tempdir().unwrap();
    let socket = echo_server(dir.path());
    let out = output(relay(
        &[(free_port(), &socket)],
        &["sh", "-c", "kill -TERM $$"],
    ));
    assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
}

#[test]
fn the_programs_end_ends_the_relay_with_connections_open() {
    let dir = tempfile::tempdir().unwrap();
    let socket = echo_server(dir.path());
    let port = free_port();
    let done = dir.path().join("done");
    let mut child = relay(
        &[(port, &socket)],
        &[
            "sh",
            "-c",
            "while [ ! -e \"$0\" ]; do sleep 0.05; done; exit 3",
            done.to_str().unwrap(),
        ],
    )
    .spawn()
    .unwrap();
    // Connected through the relay from outside, and kept open.
    let mut tcp = connect(port);
    tcp.write_all(b"open\n").unwrap();
    let mut answer = [0; 5];
    tcp.read_exact(&mut answer).unwrap();
    assert_eq!(&answer, b"OPEN\n");
    std::fs::write(&done, "").unwrap();
    assert_eq!(wait_within(&mut child, Duration::from_secs(5)), Some(3));
    drop(tcp);
}

#[test]
fn a_missing_socket_stops_it_before_the_program_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let missing = dir.path().join("missing.sock");
    let out = output(relay(
        &[(free_port(), &missing)],
        &["touch", marker.to_str().unwrap()],
    ));
    assert_eq!(out.status.code(), Some(125));
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
    assert!(!marker.exists(), "the program ran");
}

#[test]
fn a_port_in_use_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let socket = echo_server(dir.path());
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = output(relay(&[(port, &socket)], &["true"]));
    assert_eq!(out.status.code(), Some(125));
    assert!(
        stderr(&out).contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_regular_file_is_not_a_socket() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain");
    std::fs::write(&file, "").unwrap();
    let out = output(relay(&[(free_port(), &file)], &["true"]));
    assert_eq!(out.status.code(), Some(125));
    assert!(
        stderr(&out).contains("is not a Unix socket"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_arguments_and_missing_programs_have_their_codes() {
    let dir = tempfile::tempdir().unwrap();
    let socket = echo_server(dir.path());
    let mut bad = Command::new(RELAY);
    bad.args(["--forward", "0.0.0.0:80=/x", "--", "true"]);
    let out = output(bad);
    assert_eq!(out.status.code(), Some(125));
    assert!(
        stderr(&out).contains("not a loopback address"),
        "{}",
        stderr(&out)
    );

    let out = output(relay(&[(free_port(), &socket)], &["/nonexistent/program"]));
    assert_eq!(out.status.code(), Some(127), "{}", stderr(&out));
}

fn connect(port: u16) -> TcpStream {
    for _ in 0..250 {
        if let Ok(tcp) = TcpStream::connect(("127.0.0.1", port)) {
            return tcp;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the relay never listened on {port}");
}
