//! The binary as a user runs it: exit codes, messages, and what `migrate` leaves behind.

use std::process::{Command, Output};

use gatehouse_tests::{Backend, TestDb, TestNats, nats_url};

fn gatehouse(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gatehouse"))
        .args(args)
        .current_dir(dir)
        .env_remove("GATEHOUSE_DATABASE_URL")
        .env("GATEHOUSE_LOG", "warn")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_has_examples() {
    let dir = tempfile::tempdir().unwrap();
    let out = gatehouse(dir.path(), &["--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    assert!(help.contains("Examples:"));
    assert!(help.contains("gatehouse migrate --database-url postgres://"));
}

#[test]
fn migrate_creates_the_embedded_database_in_data_dir_and_is_repeatable() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gatehouse.toml"),
        "[server]\ndata_dir = \"state\"\n",
    )
    .unwrap();
    for _ in 0..2 {
        let out = gatehouse(dir.path(), &["migrate"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(
            text(&out.stdout),
            "SQLite at state/gatehouse.db: migrations applied\n"
        );
    }
    assert!(dir.path().join("state/gatehouse.db").exists());
}

#[tokio::test]
async fn migrate_prepares_postgres_and_jetstream() {
    let dir = tempfile::tempdir().unwrap();
    // A fresh schema, already migrated by the harness: migrate must succeed again on it.
    let db = TestDb::new(Backend::Postgres).await;
    let nats = TestNats::new();
    // The prefix comes from the environment, as in a deployment.
    let out = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
        .args(["migrate", "--database-url", &db.url, "--nats", &nats_url()])
        .current_dir(dir.path())
        .env("GATEHOUSE_NATS_PREFIX", nats.prefix.as_str())
        .env("GATEHOUSE_LOG", "warn")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("Postgres at 127.0.0.1:5432/test: migrations applied\n"),
        "{stdout}"
    );
    let upper = nats.prefix.as_str().to_uppercase();
    assert!(
        stdout.contains(&format!("streams {upper}_EVENTS and {upper}_JOBS ready")),
        "{stdout}"
    );
    nats.cleanup().await;
    db.cleanup().await;
}

#[test]
fn bad_input_is_a_clear_error_and_exit_code_1() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &["migrate", "--database-url", "mysql://root:hunter2@db/x"],
            "error: unsupported database URL `mysql://***@db/x`",
        ),
        (
            &["--config", "missing.toml", "migrate"],
            "error: loading the configuration: config file missing.toml does not exist",
        ),
        (
            &[
                "migrate",
                "--database-url",
                "postgres://root@127.0.0.1:5432/test?sslmode=bogus",
            ],
            "error: invalid Postgres URL",
        ),
    ];
    for (args, expected) in cases {
        let out = gatehouse(dir.path(), args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(stderr.starts_with(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("hunter2"));
        assert!(!stderr.contains("panicked"));
    }
}

#[test]
fn config_check_reports_unreadable_secrets_and_never_prints_literals() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("gatehouse.toml"),
        "[github]\ntoken = { env = \"GATEHOUSE_CLI_TEST_UNSET\" }\nwebhook_secrets = [\"literal-s3cret\"]\n",
    )
    .unwrap();
    let out = gatehouse(dir.path(), &["config", "check"]);
    assert_eq!(out.status.code(), Some(1));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        stdout.contains("webhook_secrets = [\"<redacted>\"]"),
        "{stdout}"
    );
    assert!(!stdout.contains("literal-s3cret"));
    assert!(
        stderr.contains("github.token: environment variable GATEHOUSE_CLI_TEST_UNSET is not set"),
        "{stderr}"
    );
}

#[test]
fn json_logs_are_one_object_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
        .args([
            "--log-format",
            "json",
            "migrate",
            "--database-url",
            "sqlite:x.db",
        ])
        .current_dir(dir.path())
        .env("GATEHOUSE_LOG", "debug")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stderr)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let connected = lines
        .iter()
        .find(|l| l["message"] == "connected to the database")
        .expect("the store logs its connection at debug");
    assert_eq!(connected["level"], "DEBUG");
    assert_eq!(connected["backend"], "SQLite");
}

#[test]
fn sop_validate_prints_located_problems_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("good.yaml"),
        "name: good\nnodes:\n  a: { kind: script, run: ls }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("bad.yaml"),
        "name: bad\nnodes:\n  a: { kind: script, run: ls, needs: [zz] }\n",
    )
    .unwrap();
    let out = gatehouse(dir.path(), &["sop", "validate", "good.yaml", "bad.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("good.yaml: ok: good (1 nodes, version "),
        "{stdout}"
    );
    assert!(
        stdout.contains("bad.yaml:3:39: `needs` names `zz`, which is not a node of this SOP"),
        "{stdout}"
    );
    assert!(text(&out.stderr).contains("error: 1 of 2 SOP files are invalid"));

    let out = gatehouse(dir.path(), &["sop", "validate", "--json", "bad.yaml"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report[0]["valid"], false);
    assert_eq!(report[0]["diagnostics"][0]["line"], 3);
    assert_eq!(report[0]["diagnostics"][0]["column"], 39);
}

#[test]
fn schedule_preview_prints_rfc3339_with_offsets_across_dst() {
    let dir = tempfile::tempdir().unwrap();
    let out = gatehouse(
        dir.path(),
        &[
            "schedule",
            "preview",
            "30 2 * * *",
            "--tz",
            "Europe/Berlin",
            "--from",
            "2026-03-27T00:00:00Z",
            "-n",
            "3",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "2026-03-27T02:30:00+01:00\n2026-03-28T02:30:00+01:00\n2026-03-29T03:00:00+02:00\n"
    );
    let out = gatehouse(
        dir.path(),
        &[
            "schedule",
            "preview",
            "@daily",
            "--from",
            "2026-11-30T10:00:00Z",
            "-n",
            "2",
            "--json",
        ],
    );
    let times: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        times,
        ["2026-12-01T00:00:00+00:00", "2026-12-02T00:00:00+00:00"]
    );

    for (args, expected) in [
        (
            vec!["schedule", "preview", "0 0 30 2 *"],
            "error: cron `0 0 30 2 *` never fires: no date matches it",
        ),
        (
            vec!["schedule", "preview", "@daily", "--tz", "Nowhere"],
            "error: timezone `Nowhere` is not a known IANA time zone (e.g. Europe/Berlin, UTC)",
        ),
        (
            vec!["schedule", "preview", "@daily", "--from", "soon"],
            "error: `soon` is not an RFC 3339 time with offset (e.g. 2026-03-29T00:00:00+01:00)",
        ),
    ] {
        let out = gatehouse(dir.path(), &args);
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(text(&out.stderr).trim(), expected);
    }
}

/// `gatehouse doctor` (issue 38 item 6): one line per check naming the role, the profile
/// and what to change; exit 1 when one failed; the key nowhere in what it prints; no
/// database made in the data directory.
#[test]
fn doctor_prints_one_line_per_check_and_fails_on_a_broken_role() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on: the provider cannot be reached.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let key = "sk-doctor-key-never-printed-5e1f";
    // Where namespaces work, the process sandbox reaches the gateway through the relay.
    let relay = gatehouse_tests::relay_binary();
    std::fs::write(
        dir.path().join("gatehouse.toml"),
        format!(
            r#"[server]
data_dir = "state"

[runner]
relay = "{relay}"

[providers.model]
kind = "anthropic"
base_url = "http://{dead}"
key = {{ env = "DOCTOR_TEST_KEY" }}

[roles.scripted]
executor = "command"
command = ["sh", "-c", "true", "{{prompt_file}}"]

[roles.coder]
executor = "claude-code"
provider = "model"
env = {{ PATH = "/nonexistent" }}
"#,
            relay = relay.display()
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
        .arg("doctor")
        .current_dir(dir.path())
        .env_remove("GATEHOUSE_DATABASE_URL")
        .env("GATEHOUSE_LOG", "error")
        .env("DOCTOR_TEST_KEY", key)
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l
                .starts_with("ok   role scripted, profile default, cli: `sh` is in the sandbox")),
        "{stdout}"
    );
    assert!(
        lines.iter().any(|l| l
            .starts_with("FAIL role coder, profile default, cli: `claude` is not in the sandbox")
            && l.contains("fix PATH in the role's env")),
        "{stdout}"
    );
    assert!(
        lines.iter().any(|l| l
            .starts_with("FAIL role coder, profile default, provider: `model` cannot be reached")
            && l.contains("[providers.model] base_url")),
        "{stdout}"
    );
    assert!(stderr.contains("2 checks failed"), "{stderr}");
    assert!(
        !stdout.contains(key) && !stderr.contains(key),
        "the key is printed"
    );
    assert!(
        !dir.path().join("state/gatehouse.db").exists(),
        "the doctor made no database"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_gatehouse"))
        .args(["doctor", "--json"])
        .current_dir(dir.path())
        .env_remove("GATEHOUSE_DATABASE_URL")
        .env("GATEHOUSE_LOG", "error")
        .env("DOCTOR_TEST_KEY", key)
        .output()
        .unwrap();
    let findings: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let failed = findings
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "failed")
        .count();
    assert_eq!(failed, 2, "{findings:#}");
}
