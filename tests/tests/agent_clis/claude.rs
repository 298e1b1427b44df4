//! Claude Code, headless: `claude -p` with `stream-json` output and its tools allowed.

use std::path::Path;

use crate::run::{Output, base_environment, run};

/// The environment Claude Code needs besides `HOME`, `PATH` and its provider's
/// (`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`):
/// - `IS_SANDBOX=1`: it refuses `--dangerously-skip-permissions` as root unless told it is
///   in a sandbox (the tests, like the sandboxes, run as root);
/// - `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`, `DISABLE_TELEMETRY=1`,
///   `DISABLE_ERROR_REPORTING=1`, `DISABLE_AUTOUPDATER=1`: no telemetry, error reports,
///   update checks, and no `HEAD /api/hello` preflight to the base URL (sent without a key,
///   so the gateway would refuse it).
pub const ENVIRONMENT: [(&str, &str); 5] = [
    ("IS_SANDBOX", "1"),
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ("DISABLE_TELEMETRY", "1"),
    ("DISABLE_ERROR_REPORTING", "1"),
    ("DISABLE_AUTOUPDATER", "1"),
];

/// A Claude Code run's whole environment: the base, [`ENVIRONMENT`] and `provider`'s.
pub fn environment(home: &Path, provider: &[(String, String)]) -> Vec<(String, String)> {
    let mut environment = base_environment(home);
    environment.extend(
        ENVIRONMENT
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    environment.extend(provider.iter().cloned());
    environment
}

/// Runs `claude -p <prompt>` in `work`: stream-json events on stdout (`--verbose` is
/// required with `-p` and `stream-json`), every tool allowed without asking.
pub async fn claude(
    program: &Path,
    prompt: &str,
    environment: &[(String, String)],
    work: &Path,
) -> Output {
    let args = [
        "-p",
        prompt,
        "--output-format",
        "stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
    ]
    .map(str::to_owned);
    run(program, &args, environment, work).await
}
