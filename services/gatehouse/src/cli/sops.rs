//! `gatehouse sop validate` (files on disk, no server) and `gatehouse sop list` and `sop
//! reload` (what the server runs).

use std::path::{Path, PathBuf};

use anyhow::bail;
use gatehouse_ingest::views::{InvalidSopView, ReloadView, SopView};
use gatehouse_sop::{Sop, SopError, parse};
use serde_json::json;

use crate::cli::args::SopCommand;
use crate::cli::client::Client;

/// Validates each file, printing its problems; fails when any file is invalid.
pub fn validate(files: &[PathBuf], as_json: bool) -> anyhow::Result<()> {
    let results: Vec<(String, Result<Sop, SopError>)> = files
        .iter()
        .map(|path| {
            let file = path.display().to_string();
            let result = read_and_parse(path, &file);
            (file, result)
        })
        .collect();
    if as_json {
        let out: Vec<_> = results
            .iter()
            .map(|(file, result)| match result {
                Ok(sop) => json!({ "file": file, "valid": true, "name": sop.name,
                    "version": sop.version, "nodes": sop.nodes.len() }),
                Err(e) => json!({ "file": file, "valid": false, "diagnostics": e.diagnostics.iter()
                    .map(|d| json!({ "line": d.line, "column": d.column, "message": d.message }))
                    .collect::<Vec<_>>() }),
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for (file, result) in &results {
            match result {
                Ok(sop) => println!(
                    "{file}: ok: {} ({} nodes, version {})",
                    sop.name,
                    sop.nodes.len(),
                    sop.short_version()
                ),
                Err(e) => println!("{e}"),
            }
        }
    }
    let invalid = results.iter().filter(|(_, r)| r.is_err()).count();
    if invalid > 0 {
        bail!("{invalid} of {} SOP files are invalid", results.len());
    }
    Ok(())
}

fn read_and_parse(path: &Path, file: &str) -> Result<Sop, SopError> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(file, &text),
        Err(e) => Err(SopError {
            diagnostics: vec![gatehouse_sop::Diagnostic {
                file: file.to_owned(),
                line: 1,
                column: 1,
                message: format!("cannot read the file: {e}"),
            }],
        }),
    }
}

/// `gatehouse sop list|reload`: what the server runs, asked of the server.
pub async fn sop(client: &Client, command: SopCommand, as_json: bool) -> anyhow::Result<()> {
    match command {
        SopCommand::Validate { files } => validate(&files, as_json),
        SopCommand::List => {
            let sops: Vec<SopView> = client.get("/sops").await?;
            let invalid: Vec<InvalidSopView> = client.get("/sops/invalid").await?;
            if as_json {
                let both = json!({ "sops": sops, "invalid": invalid });
                println!("{}", serde_json::to_string_pretty(&both)?);
                return Ok(());
            }
            print!("{}", table(&sops));
            print!("{}", left_out(&invalid));
            Ok(())
        }
        SopCommand::Reload => {
            let reloaded: ReloadView = client.post("/sops/reload", &json!({})).await?;
            if as_json {
                println!("{}", serde_json::to_string_pretty(&reloaded)?);
            } else {
                println!("{}", reload_summary(&reloaded));
                print!("{}", left_out(&reloaded.invalid));
            }
            if !reloaded.invalid.is_empty() {
                bail!(
                    "{} SOP file{} invalid and start{} nothing until fixed",
                    reloaded.invalid.len(),
                    if reloaded.invalid.len() == 1 {
                        " is"
                    } else {
                        "s are"
                    },
                    if reloaded.invalid.len() == 1 { "s" } else { "" },
                );
            }
            Ok(())
        }
    }
}

/// The SOPs as a table: name, short version, nodes, source, title.
fn table(sops: &[SopView]) -> String {
    let width = sops.iter().map(|s| s.name.len()).max().unwrap_or(4).max(4);
    let mut out = format!(
        "{:<width$}  {:<12}  {:>5}  {:<28}  TITLE\n",
        "NAME", "VERSION", "NODES", "SOURCE"
    );
    for s in sops {
        let short: String = s.version.chars().take(12).collect();
        out.push_str(&format!(
            "{:<width$}  {short:<12}  {:>5}  {:<28}  {}\n",
            s.name, s.nodes, s.source, s.title
        ));
        if let Some(why) = &s.unavailable {
            out.push_str(&format!("{:<width$}  cannot start: {why}\n", ""));
        }
    }
    out
}

/// The files left out, each with its problems; nothing when there are none.
fn left_out(invalid: &[InvalidSopView]) -> String {
    if invalid.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nleft out (invalid; they start nothing until fixed):\n");
    for file in invalid {
        for problem in &file.problems {
            out.push_str(&format!("  {problem}\n"));
        }
    }
    out
}

/// One line: how many SOPs, and which were added, changed or removed.
fn reload_summary(reloaded: &ReloadView) -> String {
    let mut parts = vec![format!("{} SOPs", reloaded.sops)];
    for (what, names) in [
        ("added", &reloaded.added),
        ("changed", &reloaded.changed),
        ("removed", &reloaded.removed),
    ] {
        if !names.is_empty() {
            parts.push(format!("{what} {}", names.join(", ")));
        }
    }
    if parts.len() == 1 {
        parts.push("nothing changed".into());
    }
    format!("reloaded: {}", parts.join("; "))
}
