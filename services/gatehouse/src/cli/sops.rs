//! `gatehouse sop validate` and `gatehouse sop list`.

use std::path::{Path, PathBuf};

use anyhow::bail;
use gatehouse_sop::{Catalog, Sop, SopError, parse};
use serde_json::json;

use crate::config::Config;

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

/// Lists the runnable SOPs; invalid files in the SOP directories are reported on stderr.
pub fn list(config: &Config, as_json: bool) -> anyhow::Result<()> {
    let (catalog, errors) = Catalog::load(&config.server.sop_dirs);
    for e in &errors {
        eprintln!("skipped an invalid SOP file:\n{e}");
    }
    if as_json {
        let out: Vec<_> = catalog
            .iter()
            .map(|s| {
                json!({ "name": s.name, "title": s.title, "version": s.version,
                "nodes": s.nodes.len(), "source": s.source })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let width = catalog
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    println!(
        "{:<width$}  {:<12}  {:>5}  {:<28}  TITLE",
        "NAME", "VERSION", "NODES", "SOURCE"
    );
    for s in catalog.iter() {
        println!(
            "{:<width$}  {:<12}  {:>5}  {:<28}  {}",
            s.name,
            s.short_version(),
            s.nodes.len(),
            s.source,
            s.title
        );
    }
    Ok(())
}
