//! The requirement tools: `list_requirements` and `show_requirement`.

use gatehouse_ingest::views::{RequirementDetail, RequirementSummary};
use schemars::JsonSchema;
use serde::Deserialize;

use super::answer::{Answer, Outcome};
use super::checks;
use crate::cli::client::Client;

/// What `list_requirements` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListRequirements {
    /// Only those in this state.
    state: Option<RequirementState>,
    /// At most this many, newest first (1 to 100, default 20).
    limit: Option<u32>,
}

/// A requirement's state.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum RequirementState {
    Open,
    Closed,
    Delivered,
}

/// `list_requirements`: what people asked for, newest first.
pub(crate) async fn list(client: &Client, args: ListRequirements) -> Outcome {
    let limit = checks::bounded(args.limit, 20, 1, 100, "limit")?;
    let mut path = format!("/requirements?limit={limit}");
    if let Some(state) = args.state {
        let state = match state {
            RequirementState::Open => "open",
            RequirementState::Closed => "closed",
            RequirementState::Delivered => "delivered",
        };
        path.push_str(&format!("&state={state}"));
    }
    let requirements: Vec<RequirementSummary> = client.get(&path).await?;
    let mut summary = format!("{} requirement(s)", requirements.len());
    for r in &requirements {
        summary.push_str(&format!(
            "\n{}  {:<9} {}",
            r.id,
            r.state,
            checks::shown(&r.title)
        ));
    }
    Ok(Answer::with_json(summary, &requirements))
}

/// What `show_requirement` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShowRequirement {
    /// The requirement's id (a UUID, as list_requirements shows it).
    requirement: String,
}

/// `show_requirement`: a requirement with its runs, pull requests and usage.
pub(crate) async fn show(client: &Client, args: ShowRequirement) -> Outcome {
    let id = checks::id(&args.requirement, "requirement", "list_requirements")?;
    let detail: RequirementDetail = client.get(&format!("/requirements/{id}")).await?;
    let r = &detail.requirement;
    let summary = format!(
        "requirement {} ({}) is {}: {} run(s), {} pull request(s)",
        r.id,
        r.key,
        r.state,
        detail.runs.len(),
        detail.pull_requests.len()
    );
    Ok(Answer::with_json(summary, &detail))
}
