//! Codex, headless: `codex exec --json` with a model provider defined by `-c` flags.

use std::path::Path;

use crate::run::{Output, base_environment, run};

/// The model asked for: one Codex knows (no "model metadata not found" warning) whose
/// shell tool is the `exec_command` function (`{"cmd": "..."}`), which the fake can call.
pub const MODEL: &str = "gpt-5.5";

/// A Codex run's whole environment: the base, `CODEX_HOME` (its state, beside `HOME`) and
/// `provider`'s (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).
pub fn environment(
    home: &Path,
    codex_home: &Path,
    provider: &[(String, String)],
) -> Vec<(String, String)> {
    let mut environment = base_environment(home);
    environment.push(("CODEX_HOME".to_owned(), codex_home.display().to_string()));
    environment.extend(provider.iter().cloned());
    environment
}

/// Runs `codex exec <prompt>` in `work` against a provider `gatehouse` at `base_url`
/// (ending in `/v1`) whose key is in the environment variable `env_key`. Codex 0.171
/// ignores `OPENAI_BASE_URL`, so the provider is defined with `-c`:
/// `model_provider`, `model_providers.gatehouse.{name,base_url,wire_api,env_key}`.
/// `--sandbox danger-full-access`: Codex's own sandbox (Landlock and seccomp) is not what
/// confines it here; Gatehouse's sandbox is. Analytics and the update check are off.
pub async fn codex(
    program: &Path,
    prompt: &str,
    base_url: &str,
    env_key: &str,
    environment: &[(String, String)],
    work: &Path,
) -> Output {
    let mut args: Vec<String> = [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--sandbox",
        "danger-full-access",
        "--model",
        MODEL,
    ]
    .map(str::to_owned)
    .to_vec();
    for setting in [
        "model_provider=gatehouse".to_owned(),
        "model_providers.gatehouse.name=Gatehouse".to_owned(),
        format!("model_providers.gatehouse.base_url={base_url}"),
        "model_providers.gatehouse.wire_api=responses".to_owned(),
        format!("model_providers.gatehouse.env_key={env_key}"),
        "analytics.enabled=false".to_owned(),
        "check_for_update_on_startup=false".to_owned(),
    ] {
        args.push("-c".to_owned());
        args.push(setting);
    }
    args.push(prompt.to_owned());
    run(program, &args, environment, work).await
}
