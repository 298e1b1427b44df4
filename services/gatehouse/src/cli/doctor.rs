//! `gatehouse doctor`: the runner's checks of every agent role, run on this host's
//! sandboxes and a gateway and egress proxy of their own, printed one line per check; and
//! `gatehouse role check NAME`: the same for one role, then its CLI run for real.

use anyhow::bail;
use gatehouse_runner::{Checkup, Outcome};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::config::Config;

/// Runs the checks and prints the findings; fails when any check failed.
pub async fn doctor(config: &Config, as_json: bool) -> anyhow::Result<()> {
    if config.roles.is_empty() {
        println!("no roles are configured ([roles.NAME]): nothing to check");
        return Ok(());
    }
    let data_dir = std::path::absolute(&config.server.data_dir)?;
    let runner = crate::settings::doctor_runner(config, &data_dir).await?;
    let checkup = runner.doctor(CancellationToken::new()).await;
    report(&checkup, as_json)
}

/// Checks one role and runs its CLI once; fails when any check failed.
pub async fn role_check(config: &Config, name: &str, as_json: bool) -> anyhow::Result<()> {
    let data_dir = std::path::absolute(&config.server.data_dir)?;
    let runner = crate::settings::doctor_runner(config, &data_dir).await?;
    if !as_json {
        eprintln!("checking role {name}: its CLI runs once in its sandbox (up to 5 minutes)");
    }
    let checkup = runner
        .check_role_for_real(name, CancellationToken::new())
        .await
        .map_err(anyhow::Error::msg)?;
    report(&checkup, as_json)
}

/// Prints the findings; fails when any check failed.
fn report(checkup: &Checkup, as_json: bool) -> anyhow::Result<()> {
    if as_json {
        println!("{}", serde_json::to_string_pretty(&as_value(checkup))?);
    } else {
        for finding in &checkup.findings {
            println!("{finding}");
        }
    }
    let failures = checkup.findings.iter().filter(|f| f.failed()).count();
    if failures > 0 {
        bail!(
            "{failures} check{} failed; each FAIL line says what to change",
            if failures == 1 { "" } else { "s" }
        );
    }
    Ok(())
}

/// The findings as JSON: `[{role, profile, check, status, message}]`.
fn as_value(checkup: &Checkup) -> serde_json::Value {
    checkup
        .findings
        .iter()
        .map(|f| {
            let (status, message) = match &f.outcome {
                Outcome::Passed(m) => ("ok", m),
                Outcome::Warning(m) => ("warning", m),
                Outcome::Failed(m) => ("failed", m),
            };
            json!({
                "role": f.role,
                "profile": f.profile,
                "check": f.check.as_str(),
                "status": status,
                "message": message,
            })
        })
        .collect()
}
