//! Where the real agent CLIs are, and whether they are the pinned versions: installed by
//! `tests/agent-clis/install.sh` from the pins in `deploy/sandbox/agent-clis.env`.

use std::path::{Path, PathBuf};

/// The installed CLIs (a suite may drive only some of them).
#[allow(dead_code)]
pub struct Clis {
    pub claude: PathBuf,
    pub codex: PathBuf,
    pub gemini: PathBuf,
    pub copilot: PathBuf,
    pub opencode: PathBuf,
    pub kilo: PathBuf,
}

/// Each CLI's npm package and the variable pinning its version (Kilo's native part,
/// `@kilocode/cli-linux-x64`, comes with `@kilocode/cli`).
const PINNED: [(&str, &str); 6] = [
    ("@anthropic-ai/claude-code", "CLAUDE_CODE_VERSION"),
    ("@openai/codex", "CODEX_VERSION"),
    ("@google/gemini-cli", "GEMINI_CLI_VERSION"),
    ("@github/copilot", "COPILOT_VERSION"),
    ("opencode-ai", "OPENCODE_VERSION"),
    ("@kilocode/cli", "KILO_VERSION"),
];

/// The repository's root (the tests crate sits one level below it).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate has a parent")
        .to_path_buf()
}

/// The version pinned for `name` (`CLAUDE_CODE_VERSION`, `CODEX_VERSION`, …).
fn pinned(name: &str) -> String {
    let pins = root().join("deploy/sandbox/agent-clis.env");
    let text = std::fs::read_to_string(&pins).expect("deploy/sandbox/agent-clis.env");
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("{name} is not pinned in {}", pins.display()))
        .trim()
        .to_owned()
}

/// The version of an npm package installed under `dir`, if any.
fn installed_version(dir: &Path, package: &str) -> Option<String> {
    let manifest = dir.join("node_modules").join(package).join("package.json");
    let text = std::fs::read_to_string(manifest).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json["version"].as_str().map(str::to_owned)
}

/// The CLIs at their pinned versions, from `AGENT_CLIS_DIR` (the install directory,
/// `target/agent-clis` by default). `None`, the test skipped, when they are missing or
/// other versions, unless `AGENT_CLI_TESTS=required` (CI, `.ci/run`): then a failure.
pub fn clis() -> Option<Clis> {
    let dir = std::env::var_os("AGENT_CLIS_DIR")
        .map_or_else(|| root().join("target/agent-clis"), PathBuf::from);
    let mut wrong = Vec::new();
    for (package, pin) in PINNED {
        let want = pinned(pin);
        match installed_version(&dir, package) {
            Some(have) if have == want => {}
            Some(have) => wrong.push(format!("{package} is {have}, not {want}")),
            None => wrong.push(format!("{package}@{want} is not installed")),
        }
    }
    if !wrong.is_empty() {
        let why = format!(
            "{} under {} (run tests/agent-clis/install.sh)",
            wrong.join(", "),
            dir.display()
        );
        assert!(
            std::env::var("AGENT_CLI_TESTS").as_deref() != Ok("required"),
            "AGENT_CLI_TESTS=required but {why}"
        );
        eprintln!("skipped: {why}");
        return None;
    }
    let bin = dir.join("node_modules/.bin");
    Some(Clis {
        claude: bin.join("claude"),
        codex: bin.join("codex"),
        gemini: bin.join("gemini"),
        copilot: bin.join("copilot"),
        opencode: bin.join("opencode"),
        kilo: bin.join("kilo"),
    })
}
