//! `gatehouse doctor`: the runner's checks of every agent role, run on this host's
//! sandboxes and a gateway and egress proxy of their own, printed one line per check.

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
    if as_json {
        println!("{}", serde_json::to_string_pretty(&as_value(&checkup))?);
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
