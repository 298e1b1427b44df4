//! The CLI finds the server `gatehouse up` runs, whatever address it was given: `up`
//! records where it listens beside its admin token, and the CLI reads it there.

mod harness;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::Up;
use harness::process::{Process, gatehouse};

/// A CLI command in `dir`, with nothing from the test's environment saying where the
/// server is or which token to use.
fn cli(dir: &std::path::Path) -> Command {
    let mut command = gatehouse();
    command
        .current_dir(dir)
        .env_remove("GATEHOUSE_TOKEN")
        .env_remove("GATEHOUSE_SERVER")
        .env("GATEHOUSE_LOG", "warn");
    command
}

/// Waits until `file` exists; its contents.
fn wait_for(file: &std::path::Path, process: &mut Process) -> String {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if let Ok(text) = std::fs::read_to_string(file) {
            return text;
        }
        assert!(
            process.alive(),
            "gatehouse up exited before writing {file:?}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("{} never appeared", file.display());
}

#[test]
fn the_cli_finds_an_up_on_another_port_without_being_told() {
    let dir = tempfile::tempdir().unwrap();
    // The configuration names a port nothing listens on; `up` is moved by `--listen`.
    let unused = gatehouse_tests::private_nats::free_port();
    std::fs::write(
        dir.path().join("gatehouse.toml"),
        format!("[server]\nlisten = \"127.0.0.1:{unused}\"\n"),
    )
    .unwrap();
    let mut up = Process::spawn(
        "gatehouse up",
        cli(dir.path())
            .args(["up", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let recorded = dir.path().join(".gatehouse/server.url");
    let url = wait_for(&recorded, &mut up);
    let port: u16 = url
        .trim()
        .strip_prefix("http://127.0.0.1:")
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("not a loopback URL with a port: {url:?}"));
    assert_ne!(port, 0, ":0 is recorded as the port it was given");
    harness::http::wait_ready(port, "gatehouse up", String::new);

    let listed = cli(dir.path())
        .args(["run", "list", "--json"])
        .output()
        .unwrap();
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&listed.stdout).unwrap(),
        serde_json::json!([])
    );

    // A token the server does not know: the error names the server and the token's source.
    let refused = cli(dir.path())
        .args(["run", "list"])
        .env("GATEHOUSE_TOKEN", "not-a-token")
        .output()
        .unwrap();
    let error = String::from_utf8_lossy(&refused.stderr);
    assert!(
        error.starts_with(&format!(
            "error: unknown token (401 Unauthorized): asked http://127.0.0.1:{port} (from {}",
            std::path::Path::new(".gatehouse/server.url").display()
        )) && error.contains("with the token from GATEHOUSE_TOKEN;")
            && error.contains("--server URL"),
        "{error}"
    );

    assert!(up.terminate(Duration::from_secs(30)).success());
    assert!(
        !recorded.exists(),
        "a stopped server's address is not left for the CLI to find"
    );
}

#[test]
fn an_address_in_use_says_to_pass_listen() {
    let up = Up::builder().start();
    let other = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", up.port());
    let out = cli(other.path())
        .args(["up", "--listen", &listen])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        format!(
            "error: cannot listen on {listen}: the address is already in use (by another \
             Gatehouse, or another program); pass --listen HOST:PORT (or set server.listen) \
             for another"
        )
    );
    assert!(
        !other.path().join(".gatehouse/server.url").exists(),
        "a start that failed records no address"
    );
    assert!(up.ready(), "the running server is untouched");
}

#[test]
fn a_token_refused_by_the_server_asked_names_both() {
    let up = Up::builder().start();
    let out = up.cli(&["run", "list", "--token", "not-a-token"]);
    let error = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        error.trim(),
        format!(
            "error: unknown token (401 Unauthorized): asked {} (from --server) with the token \
             from --token; pass --server URL for the server that issued the token, or \
             --data-dir DIR of the gatehouse up whose token this is, or --token with a token \
             this server issued",
            up.url()
        )
    );
}
