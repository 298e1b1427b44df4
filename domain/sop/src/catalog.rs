//! The SOPs a deployment knows: the built-ins, then the user's directories.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use crate::{Diagnostic, NodeKind, Sop, SopError, parse};

/// SOPs compiled into the binary, so a fresh install has something to run.
const BUILTIN: [(&str, &str); 3] = [
    (
        "platform-check",
        include_str!("../builtin/platform-check.yaml"),
    ),
    ("bug-fix", include_str!("../builtin/bug-fix.yaml")),
    (
        "backend-delivery",
        include_str!("../builtin/backend-delivery.yaml"),
    ),
];

/// Every valid SOP by name. A user file with a built-in's name replaces the built-in.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    sops: BTreeMap<String, Arc<Sop>>,
}

impl Catalog {
    /// Loads the built-ins and every `*.yaml` / `*.yml` file in `dirs` (a directory that
    /// does not exist is skipped). Invalid files are returned beside the catalog, not
    /// loaded: they never start.
    pub fn load(dirs: &[impl AsRef<Path>]) -> (Self, Vec<SopError>) {
        let mut catalog = Self::default();
        let mut errors = Vec::new();
        for (name, text) in BUILTIN {
            match parse(&format!("builtin:{name}"), text) {
                Ok(sop) => {
                    catalog.sops.insert(sop.name.clone(), Arc::new(sop));
                }
                Err(e) => errors.push(e),
            }
        }
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for dir in dirs {
            let dir = dir.as_ref();
            let entries = match std::fs::read_dir(dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    errors.push(single(
                        &dir.display().to_string(),
                        format!("cannot read the SOP directory: {e}"),
                    ));
                    continue;
                }
            };
            let mut paths: Vec<_> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
                .collect();
            paths.sort();
            for path in paths {
                let file = path.display().to_string();
                let text = match std::fs::read_to_string(&path) {
                    Ok(text) => text,
                    Err(e) => {
                        errors.push(single(&file, format!("cannot read the file: {e}")));
                        continue;
                    }
                };
                match parse(&file, &text) {
                    Ok(sop) => {
                        if let Some(first) = seen.insert(sop.name.clone(), file.clone()) {
                            errors.push(single(
                                &file,
                                format!("SOP `{}` is already defined in {first}", sop.name),
                            ));
                            continue;
                        }
                        catalog.sops.insert(sop.name.clone(), Arc::new(sop));
                    }
                    Err(e) => errors.push(e),
                }
            }
        }
        (catalog, errors)
    }

    pub fn get(&self, name: &str) -> Option<&Sop> {
        self.sops.get(name).map(|sop| &**sop)
    }

    /// The SOP named `name`, to keep beyond this catalog (which a reload may replace).
    pub fn shared(&self, name: &str) -> Option<Arc<Sop>> {
        self.sops.get(name).cloned()
    }

    /// Adds an SOP that comes from somewhere other than a file (a schedule's agent task),
    /// replacing one of the same name.
    pub fn insert(&mut self, sop: Sop) {
        self.sops.insert(sop.name.clone(), Arc::new(sop));
    }

    /// Marks the SOPs whose agent nodes name a role outside `roles` as unable to start, so
    /// that a run is refused with a message at once instead of failing at that node.
    pub fn require_roles<'a>(&mut self, roles: impl IntoIterator<Item = &'a str>) {
        let roles: BTreeSet<&str> = roles.into_iter().collect();
        for sop in self.sops.values_mut() {
            let unavailable = sop.nodes.iter().find_map(|node| match &node.kind {
                NodeKind::Agent { role, .. } if !roles.contains(role.as_str()) => Some(format!(
                    "`{}` cannot start: node `{}` uses the agent role `{role}`, which is not configured (add [roles.{role}] to the configuration)",
                    sop.name, node.id
                )),
                _ => None,
            });
            if unavailable != sop.unavailable {
                Arc::make_mut(sop).unavailable = unavailable;
            }
        }
    }

    /// All SOPs, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Sop> {
        self.sops.values().map(|sop| &**sop)
    }
}

fn single(file: &str, message: String) -> SopError {
    SopError {
        diagnostics: vec![Diagnostic {
            file: file.to_owned(),
            line: 1,
            column: 1,
            message,
        }],
    }
}
