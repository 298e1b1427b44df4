//! The client verb `project list`: what each project works on and who may.

use gatehouse_ingest::views::ProjectView;

use crate::cli::args::ProjectCommand;
use crate::cli::client::Client;
use crate::cli::runs::print;

pub async fn project(
    client: &Client,
    command: ProjectCommand,
    as_json: bool,
) -> anyhow::Result<()> {
    match command {
        ProjectCommand::List => {
            let projects: Vec<ProjectView> = client.get("/projects").await?;
            print(as_json, &projects, || describe(&projects))
        }
    }
}

fn describe(projects: &[ProjectView]) -> String {
    if projects.is_empty() {
        return "no projects are configured (add [[projects]] to the configuration)".into();
    }
    let mut out = String::new();
    for p in projects {
        out.push_str(&format!("{}\n", p.name));
        for r in &p.repositories {
            let branch = r.branch.as_deref().unwrap_or("default branch");
            let work = r
                .branch_name
                .as_deref()
                .map(|b| format!(" → {b}"))
                .unwrap_or_default();
            out.push_str(&format!(
                "  {:<32}  {:<9}  {branch}{work}\n",
                r.repo, r.mode
            ));
        }
        let list = |items: &[String], none: &str| {
            if items.is_empty() {
                none.to_owned()
            } else {
                items.join(", ")
            }
        };
        out.push_str(&format!("  channels: {}\n", list(&p.channels, "none")));
        out.push_str(&format!("  sops: {}", list(&p.sops, "all")));
        if let Some(sop) = &p.default_sop {
            out.push_str(&format!(" (default {sop})"));
        }
        out.push('\n');
        out.push_str(&format!(
            "  run: {} · converse: {} · approve: {}\n",
            list(&p.run, "anyone"),
            list(&p.converse, "anyone"),
            list(&p.approve, "the gates' approvers")
        ));
        out.push_str(&format!(
            "  read: {}\n",
            list(&p.read, "whoever may run, converse or approve")
        ));
    }
    out.trim_end().to_owned()
}
