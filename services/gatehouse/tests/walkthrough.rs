//! README's first-run walkthrough, run as written: the shell blocks under "First run" are
//! read from README.md, their `$ ` commands run one after another in one bash session
//! against a fresh `gatehouse up` on the embedded default (no configuration file), and
//! each output line README shows must appear in what the command printed. A walkthrough
//! that stops working fails here, not in a new user's terminal.

mod harness;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use harness::Up;

/// The placeholder README uses for the run id.
const RUN_ID: &str = "01a2...c931";

/// One `$ ` command and the lines README shows after it.
#[derive(Debug)]
struct Step {
    command: String,
    expected: Vec<String>,
}

/// The `sh` blocks of README's "First run" section, as steps.
fn walkthrough() -> Vec<Step> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let section = readme
        .split("### First run")
        .nth(1)
        .expect("README has a First run section");
    // The section ends at the next heading of its level or above.
    let section = section.split("\n### ").next().unwrap_or(section);
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut steps: Vec<Step> = Vec::new();
    let mut in_block = false;
    for line in section.lines() {
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        match line.strip_prefix("$ ") {
            Some(command) => steps.push(Step {
                command: command.to_owned(),
                expected: Vec::new(),
            }),
            None => steps
                .last_mut()
                .expect("output follows a command")
                .expected
                .push(line.to_owned()),
        }
    }
    assert!(
        steps.len() >= 8,
        "the walkthrough has its steps: {steps:#?}"
    );
    steps
}

/// Whether README's `expected` line shows in `output`: the same words in order, where a
/// duration (`0.0s`), a size (`77`) and a digest may differ.
fn shows(output: &str, expected: &str) -> bool {
    let words = |line: &str| -> Vec<String> {
        line.split_whitespace()
            .map(|w| {
                let varies = w.ends_with('s') && w[..w.len() - 1].parse::<f64>().is_ok()
                    || w.parse::<u64>().is_ok()
                    || w.starts_with("sha256:");
                if varies {
                    "…".to_owned()
                } else {
                    w.to_owned()
                }
            })
            .collect()
    };
    let want = words(expected);
    output.lines().any(|line| {
        let got = words(line);
        got.len() == want.len() && got.iter().zip(&want).all(|(g, w)| g == w || w == "…")
    })
}

#[test]
fn the_first_run_walkthrough_works_as_written() {
    // As README starts it: no configuration, data in ./.gatehouse.
    let up = Up::builder().readme_data_dir().start();
    let (dir, server, bin) = (up.dir(), up.url(), harness::process::BIN);

    // One bash session, so `T=$(...)` carries to the next command; `gatehouse` is the
    // binary under test, talking to this server.
    let mut shell = Command::new("bash")
        .args(["--noprofile", "--norc", "-s"])
        .current_dir(dir)
        .env("GATEHOUSE_SERVER", &server)
        .env_remove("GATEHOUSE_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Errors go where the output goes; a command's `# comment` ends at its own line.
    let mut script = format!("exec 2>&1\ngatehouse() {{ '{bin}' \"$@\"; }}\n");
    let mut run_id: Option<String> = None;
    // Gate decisions sent so far: the API accepts one before the scheduler applies it.
    let mut decided = 0;
    let steps = walkthrough();
    // The run id is only known once `run start` has run, so the steps are run one at a
    // time: each command's output is read back before the next is written.
    let mut stdin = shell.stdin.take().unwrap();
    let stdout = shell.stdout.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
    for (i, step) in steps.iter().enumerate() {
        let command = match &run_id {
            Some(id) => step.command.replace(RUN_ID, id),
            None => step.command.clone(),
        };
        // A person reads each answer before typing the next command; here that is
        // waiting until every decision so far is applied and the run's nodes are not
        // mid-flight (a send-back reruns the report).
        if let Some(id) = &run_id {
            settle(&up, id, decided);
        }
        if is_decision(&command) {
            decided += 1;
        }
        script.push_str(&format!("{command}\necho \"@@end {i} $?\"\n"));
        stdin.write_all(script.as_bytes()).unwrap();
        stdin.flush().unwrap();
        script.clear();
        let mut output = String::new();
        let status = loop {
            let line = lines.next().expect("the shell is alive").unwrap();
            if let Some(rest) = line.strip_prefix(&format!("@@end {i} ")) {
                break rest.to_owned();
            }
            output.push_str(&line);
            output.push('\n');
        };
        assert_eq!(status, "0", "`{command}` failed:\n{output}");
        if run_id.is_none()
            && let Some(id) = output
                .strip_prefix("started run ")
                .and_then(|rest| rest.split_whitespace().next())
        {
            run_id = Some(id.to_owned());
        }
        for expected in &step.expected {
            let expected = match &run_id {
                Some(id) => expected.replace(RUN_ID, id),
                None => expected.clone(),
            };
            assert!(
                shows(&output, &expected),
                "`{command}` should show\n  {expected}\nbut printed:\n{output}"
            );
        }
    }
    drop(stdin);
    let _ = shell.wait();
    assert!(run_id.is_some(), "the walkthrough started a run");
}

/// Waits until `run show` lists `decided` gate decisions (the scheduler records each as
/// it applies or refuses it, and the state it shows is at least as new), the scheduler has
/// created the run, and no node of it is ready, dispatched or running.
fn settle(up: &Up, run: &str, decided: usize) {
    for _ in 0..400 {
        let out = up.cli(&["run", "show", run, "--json"]);
        let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        // A run the scheduler has not created yet is `requested`, its nodes all pending.
        let busy = shown["status"] == "requested"
            || shown["nodes"].as_array().is_some_and(|nodes| {
                nodes.iter().any(|n| {
                    matches!(
                        n["status"].as_str(),
                        Some("ready" | "dispatched" | "running")
                    )
                })
            });
        let applied = shown["decisions"].as_array().map_or(0, Vec::len);
        if !busy && applied >= decided && shown.is_object() {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Whether `command` decides a gate (the scheduler applies it after the API accepted it).
fn is_decision(command: &str) -> bool {
    ["approve", "reject", "send-back"]
        .iter()
        .any(|verb| command.starts_with(&format!("gatehouse gate {verb} ")))
}

#[test]
fn readme_lines_match_with_durations_and_sizes_left_open() {
    assert!(shows(
        "├─ report   succeeded         attempt 1  0.3s\n",
        "├─ report   succeeded         attempt 1  0.0s"
    ));
    assert!(shows(
        "  report#1 welcome.md  90 B  sha256:0123456789ab\n",
        "  report#1 welcome.md  77 B  sha256:e0059df90212"
    ));
    assert!(!shows(
        "├─ report   failed  attempt 1  0.3s\n",
        "├─ report   succeeded  attempt 1  0.0s"
    ));
}
