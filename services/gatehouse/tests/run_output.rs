//! A run's output from the CLI: `gatehouse run logs` (all of it, one node's, the last
//! lines, followed until the run ends) and `gatehouse run watch`, which says where the run
//! waits for people and who may decide, instead of sitting silent at a gate.

mod harness;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use harness::Up;

const SOP: &str = "name: reviewed\nnodes:\n  build:\n    kind: script\n    run: 'echo compiling; echo linked; echo careful >&2'\n  review:\n    kind: gate\n    needs: [build]\n    approvers: [group:leads]\n    send_back: [build]\n  ship:\n    kind: script\n    needs: [review]\n    run: 'echo shipped'\n";

const CONFIG: &str = "[server]\nsop_dirs = [\"sops\"]\n[[people]]\nid = \"ana\"\ngroups = [\"leads\"]\n[[people]]\nid = \"admin\"\n";

fn start() -> Up {
    Up::builder()
        .sops(&[("reviewed", SOP)])
        .config(CONFIG)
        .start()
}

fn stdout(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A CLI verb left running, its standard output read line by line on a thread.
struct Following {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Following {
    fn start(up: &Up, args: &[&str]) -> Self {
        let mut child = up
            .gatehouse()
            .args(args)
            .args(["--server", &up.url(), "--data-dir"])
            .arg(up.data_dir())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Reads lines until one contains `text`; everything read so far.
    fn until(&mut self, text: &str) -> String {
        while !self.seen.iter().any(|l| l.contains(text)) {
            match self.lines.recv_timeout(Duration::from_secs(30)) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!("no line with {text:?}; so far:\n{}", self.seen.join("\n")),
            }
        }
        self.seen.join("\n")
    }

    /// Waits for the process to end; its exit code and everything it printed.
    fn end(mut self) -> (Option<i32>, String) {
        let status = self.child.wait().unwrap();
        self.seen.extend(self.lines.iter());
        (status.code(), self.seen.join("\n"))
    }
}

#[test]
fn run_logs_prints_all_one_node_or_the_last_lines_and_refuses_an_unknown_node() {
    let up = start();
    let run = up.start_run("reviewed");
    up.wait(&run, "waiting");

    let all = stdout(&up.cli(&["run", "logs", &run]));
    // Standard error is read beside standard output, so only each stream keeps its order.
    let out: Vec<&str> = all.lines().filter(|l| l.contains(" | ")).collect();
    assert_eq!(out, ["build #1 | compiling", "build #1 | linked"], "{all}");
    assert!(all.contains("build #1 ! careful"), "{all}");

    let tail = stdout(&up.cli(&["run", "logs", &run, "--tail", "1"]));
    assert_eq!(tail.lines().count(), 1, "{tail}");

    let one = stdout(&up.cli(&["run", "logs", &run[..13], "--node", "build"]));
    assert_eq!(one.lines().count(), 3, "{one}");

    let json = stdout(&up.cli(&["run", "logs", &run, "--json"]));
    let lines: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{json}");
    assert!(
        lines
            .iter()
            .any(|l| l["node"] == "build" && l["stream"] == "stdout" && l["line"] == "compiling"),
        "{json}"
    );

    let refused = up.fails(&["run", "logs", &run, "--node", "deploy"]);
    assert!(
        refused.contains("has no node `deploy`; its nodes are build, review, ship"),
        "{refused}"
    );
}

#[test]
fn watch_says_where_the_run_waits_and_logs_follow_it_to_the_end() {
    let up = start();
    let run = up.start_run("reviewed");
    let mut watch = Following::start(&up, &["run", "watch", &run]);
    let waiting = watch.until("waiting at gate `review`");
    assert!(
        waiting.contains("waiting at gate `review` (attempt 1) for a decision from group:leads"),
        "{waiting}"
    );
    let said = watch.until("decide:");
    assert!(
        said.contains(&format!("gatehouse gate approve {run}/review")),
        "{said}"
    );
    let mut follow = Following::start(&up, &["run", "logs", &run, "--follow"]);
    follow.until("build #1 | linked");

    let token = up.token("ana");
    let approved = up.cli(&[
        "gate",
        "approve",
        &format!("{run}/review"),
        "--token",
        &token,
    ]);
    stdout(&approved);

    let (code, watched) = watch.end();
    assert_eq!(code, Some(0), "{watched}");
    assert!(watched.contains("ship #1 | shipped"), "{watched}");
    assert_eq!(
        watched.matches("waiting at gate").count(),
        1,
        "a wait is said once: {watched}"
    );
    assert!(
        watched.ends_with(&format!("run {run} succeeded")),
        "{watched}"
    );

    let (code, followed) = follow.end();
    assert_eq!(code, Some(0), "{followed}");
    assert!(followed.ends_with("ship #1 | shipped"), "{followed}");
}
