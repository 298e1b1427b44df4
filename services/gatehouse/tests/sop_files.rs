//! SOP files edited under a running `gatehouse up`: picked up within `server.sop_reload`
//! (or at once by `gatehouse sop reload`), and `gatehouse sop list` shows what the server
//! runs — including the files it left out, with their errors.

mod harness;

use std::time::{Duration, Instant};

use harness::Up;

const V1: &str = "name: hello\nnodes:\n  greet: { kind: script, run: 'echo one' }\n";
const V2: &str = "name: hello\nnodes:\n  greet: { kind: script, run: 'echo two' }\n  again: { kind: script, needs: [greet], run: 'echo three' }\n";

fn start(reload: &str) -> Up {
    Up::builder()
        .sops(&[("hello", V1)])
        .config(&format!(
            "[server]\nsop_dirs = [\"sops\"]\nsop_reload = \"{reload}\"\n"
        ))
        .start()
}

fn stdout(up: &Up, args: &[&str]) -> String {
    String::from_utf8_lossy(&up.cli(args).stdout).into_owned()
}

/// The nodes `sop list` shows for `hello`.
fn hello_nodes(up: &Up) -> u64 {
    let listed = up.json(&["sop", "list"]);
    listed["sops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "hello")
        .map(|s| s["nodes"].as_u64().unwrap())
        .unwrap()
}

fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if check() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{what}: not within 20 s");
}

#[test]
fn an_edited_file_is_picked_up_and_a_broken_one_is_listed_with_its_error() {
    let up = start("1s");
    assert_eq!(hello_nodes(&up), 1);
    let listed = up.json(&["sop", "list"]);
    let names: Vec<&str> = listed["sops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["backend-delivery", "bug-fix", "hello", "platform-check"]
    );
    assert_eq!(listed["sops"][2]["source"], "sops/hello.yaml");
    assert_eq!(listed["invalid"], serde_json::json!([]));
    let table = stdout(&up, &["sop", "list"]);
    assert!(
        table.contains("hello") && table.contains("sops/hello.yaml"),
        "{table}"
    );

    std::fs::write(up.dir().join("sops/hello.yaml"), V2).unwrap();
    eventually("the edit is picked up", || hello_nodes(&up) == 2);
    let run = up.start_run("hello");
    let shown = up.wait(&run, "succeeded");
    assert_eq!(shown["nodes"].as_array().unwrap().len(), 2, "{shown:#}");

    std::fs::write(
        up.dir().join("sops/broken.yaml"),
        "name: broken\nnodes:\n  a: { kind: scrip }\n",
    )
    .unwrap();
    eventually("the broken file is listed", || {
        stdout(&up, &["sop", "list"]).contains("left out")
    });
    let table = stdout(&up, &["sop", "list"]);
    assert!(table.contains("sops/broken.yaml:3:"), "{table}");
    let refused = up.fails(&["run", "start", "broken"]);
    assert!(refused.contains("no SOP named `broken`"), "{refused}");
}

#[test]
fn without_polling_a_reload_picks_up_the_edit_and_fails_on_a_broken_file() {
    let up = start("0s");
    std::fs::write(up.dir().join("sops/hello.yaml"), V2).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(hello_nodes(&up), 1, "not looked at without a reload");

    let out = up.cli(&["sop", "reload"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("reloaded: 4 SOPs; changed hello"), "{said}");
    assert_eq!(hello_nodes(&up), 2);

    std::fs::write(
        up.dir().join("sops/broken.yaml"),
        "name: broken\nnodes: [\n",
    )
    .unwrap();
    let error = up.fails(&["sop", "reload"]);
    assert!(
        error.contains("1 SOP file is invalid and starts nothing until fixed"),
        "{error}"
    );
    let said = stdout(&up, &["sop", "reload"]);
    assert!(said.contains("nothing changed"), "{said}");
    assert!(said.contains("sops/broken.yaml:"), "{said}");
}
