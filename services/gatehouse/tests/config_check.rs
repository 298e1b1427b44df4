//! `gatehouse config check` refuses what `gatehouse up` refuses, and says it in the
//! configuration's own terms: a key by the name the file writes, on its line.

mod harness;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::process::{Process, gatehouse};

/// The repository's example configuration.
const EXAMPLE: &str = include_str!("../../../deploy/gatehouse.example.toml");

/// A command in `dir` with the example's secrets set, its services' addresses on a port
/// nothing answers, and nothing of the test's own `GATEHOUSE_*` environment.
fn command(dir: &Path, args: &[&str]) -> Command {
    let mut command = gatehouse();
    command.args(args).current_dir(dir);
    for (key, _) in std::env::vars() {
        if key.starts_with("GATEHOUSE_") {
            command.env_remove(key);
        }
    }
    for secret in [
        "GITHUB_TOKEN",
        "GITHUB_WEBHOOK_SECRET",
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "DISCORD_BOT_TOKEN",
        "TOOLS_DEPLOY_KEY",
        "GITLAB_TOKEN",
    ] {
        command.env(secret, "a-secret-for-the-test");
    }
    command
        .env("GATEHOUSE_LOG", "error")
        .env("GATEHOUSE_GITHUB__API_URL", "http://127.0.0.1:9")
        .env("GATEHOUSE_SLACK__API_URL", "http://127.0.0.1:9")
        .env("GATEHOUSE_DISCORD__API_URL", "http://127.0.0.1:9/api/v10")
        .env("GATEHOUSE_DISCORD__GATEWAY", "false")
        // This host's Docker is `gatehouse doctor`'s business, not the configuration's.
        .env("GATEHOUSE_SANDBOX__PROFILES__CONTAINER__KIND", "process");
    command
}

/// `config check` on `config`: whether it passed, and its error lines.
fn check(config: &str) -> (bool, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gatehouse.toml"), config).unwrap();
    let out = command(dir.path(), &["config", "check"]).output().unwrap();
    (out.status.success(), problems(&out.stderr))
}

/// `up` on `config`: whether it started (it answered `/readyz`), and its error lines.
fn up(config: &str) -> (bool, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gatehouse.toml"), config).unwrap();
    let log = dir.path().join("stderr");
    let mut up = Process::spawn(
        "gatehouse up",
        command(dir.path(), &["up", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap()),
    );
    let recorded = dir.path().join(".gatehouse/server.url");
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        if !up.alive() {
            return (false, problems(&std::fs::read(&log).unwrap()));
        }
        if let Some(port) = std::fs::read_to_string(&recorded)
            .ok()
            .and_then(|url| url.trim().rsplit(':').next()?.parse::<u16>().ok())
            && harness::http::ready(port)
        {
            assert!(up.terminate(Duration::from_secs(30)).success());
            return (true, Vec::new());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "gatehouse up neither started nor stopped: {}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
}

/// The indented problem lines of an error (what both commands list).
fn problems(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("  "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn config_check_gives_the_verdict_up_gives_on_the_example() {
    let nats_blobs = EXAMPLE.replace("# blobs = \"nats\"", "blobs = \"nats\"");
    let no_sop = EXAMPLE.replace("sop = \"platform-check\"", "sop = \"triage\"");
    assert!(
        nats_blobs != EXAMPLE && no_sop != EXAMPLE,
        "the example changed"
    );
    for (what, config, accepted, problem) in [
        ("the example", EXAMPLE, true, None),
        (
            "blobs in NATS without NATS",
            nats_blobs.as_str(),
            false,
            Some("storage.blobs = \"nats\" needs NATS: set server.nats_url"),
        ),
        (
            "a schedule of an SOP that does not exist",
            no_sop.as_str(),
            false,
            Some("schedule `nightly-check`: no SOP named `triage`; the SOPs are"),
        ),
    ] {
        let (checked, check_problems) = check(config);
        let (started, up_problems) = up(config);
        assert_eq!(
            (checked, started),
            (accepted, accepted),
            "{what}: config check passed: {checked}, up started: {started}\n{check_problems:?}\n{up_problems:?}"
        );
        assert_eq!(check_problems, up_problems, "{what}: the same reasons");
        if let Some(problem) = problem {
            assert!(
                check_problems.len() == 1 && check_problems[0].starts_with(problem),
                "{what}: {check_problems:?}"
            );
        }
    }
}

#[test]
fn a_misspelt_key_is_named_with_its_line_and_the_key_meant() {
    for (config, error) in [
        (
            "[server]\nlisten = \"127.0.0.1:8080\"\nlisen = \"127.0.0.1:8081\"\n",
            "error: loading the configuration: unknown key `server.lisen` in gatehouse.toml \
             line 3; did you mean `listen`?",
        ),
        (
            "[[schedules]]\nname = \"a\"\ncron = \"0 3 * * *\"\nsop = \"bug-fix\"\n\n[[schedules]]\nname = \"b\"\ncron = \"0 4 * * *\"\nsopp = \"bug-fix\"\n",
            "error: loading the configuration: unknown key `schedules[1].sopp` in \
             gatehouse.toml line 9; did you mean `sop`?",
        ),
        (
            "[sever]\nlisten = \"127.0.0.1:8080\"\n",
            "error: loading the configuration: unknown key `sever` in gatehouse.toml line 1; \
             did you mean `server`?",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("gatehouse.toml"), config).unwrap();
        for verb in [&["config", "check"][..], &["up", "--listen", "127.0.0.1:0"]] {
            let out = command(dir.path(), verb).output().unwrap();
            assert_eq!(out.status.code(), Some(1), "{verb:?}");
            assert_eq!(
                String::from_utf8_lossy(&out.stderr).trim(),
                error,
                "{verb:?}"
            );
        }
    }
}
