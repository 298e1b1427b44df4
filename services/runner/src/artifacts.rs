//! Artifacts as the runner reads them: collected from a node's artifact directory after it
//! ran, and copied into the inputs of the nodes that read them.
//!
//! Both read files a node wrote, on the host, so both go through
//! [`gatehouse_sandbox::untrusted`]: no link is followed below the data directory, only
//! regular files with a single name are read, and never more than the artifact limit. The
//! names come from the SOP (or, for inputs, from the store) and are checked again here
//! against the rule the SOP parser applies ([`gatehouse_sop::check_artifact_name`]), so a
//! name like `../../x` never reaches the filesystem even if the definition that carried it
//! was not parsed by this version.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use gatehouse_sandbox::untrusted::{self, Problem};
use gatehouse_store::ArtifactRow;

/// The default limit on one artifact's size: an artifact is a report, a plan, a diff, not a
/// build's output.
pub(crate) const ARTIFACT_LIMIT: u64 = 64 * 1024 * 1024;

/// The declared artifacts of one attempt, as read from its directory.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    /// Name and contents of each artifact read.
    pub read: Vec<(String, Vec<u8>)>,
    /// Declared but not there.
    pub missing: Vec<String>,
    /// Why files that are there were not read: each names its artifact. When there is any,
    /// the attempt fails and none of its artifacts is stored.
    pub refused: Vec<String>,
}

/// Reads each of `names` from `location` (the attempt's artifact directory, relative to
/// `data_dir`), none of them past `limit` bytes. Blocking.
pub(crate) fn collect(data_dir: &Path, location: &str, names: &[String], limit: u64) -> Collected {
    let mut collected = Collected::default();
    for name in names {
        if let Err(reason) = gatehouse_sop::check_artifact_name(name) {
            collected.refused.push(reason);
            continue;
        }
        match untrusted::read_in(data_dir, location, name, limit) {
            Ok(bytes) => collected.read.push((name.clone(), bytes)),
            Err(refused) if matches!(refused.problem, Problem::Missing) => {
                collected.missing.push(name.clone());
            }
            Err(refused) => collected
                .refused
                .push(format!("artifact `{name}` {}", refused.problem)),
        }
    }
    collected
}

/// Makes `inputs` an empty directory of its own: whatever was there (a link included) is
/// removed, never followed. Blocking.
pub(crate) fn fresh_dir(inputs: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(inputs) {
        // Removes a link itself, never what it points to.
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(inputs)?,
        Ok(_) => std::fs::remove_file(inputs)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    std::fs::create_dir_all(inputs)
}

/// Where a stored artifact goes among an attempt's inputs, `<node>/<name>` below them,
/// once its names are checked; else why not, naming it.
pub(crate) fn input_path(row: &ArtifactRow) -> Result<PathBuf, String> {
    let shown = format!("{}/{}", row.node, row.name);
    gatehouse_sop::check_artifact_name(&row.name)
        .and_then(|()| {
            if row.node.contains('/') {
                Err(format!("node `{}` is not a plain name", row.node))
            } else {
                gatehouse_sop::check_artifact_name(&row.node)
            }
        })
        .map_err(|reason| format!("the input `{shown}`: {reason}"))?;
    Ok(Path::new(&row.node).join(&row.name))
}

/// Copies stored artifacts recorded before the blob store, which runners sharing the data
/// directory wrote there, into `inputs` (made with [`fresh_dir`]) as `<node>/<name>`. Each
/// copy is a new file. `Ok(Err(reason))`: an artifact was refused, naming it. Blocking.
pub(crate) fn copy_inputs(
    data_dir: &Path,
    rows: &[ArtifactRow],
    inputs: &Path,
    limit: u64,
) -> std::io::Result<Result<(), String>> {
    for row in rows {
        let shown = format!("{}/{}", row.node, row.name);
        let relative = match input_path(row) {
            Ok(relative) => relative,
            Err(reason) => return Ok(Err(reason)),
        };
        // Stored as `<artifact directory>/<name>`: the refusal names the artifact.
        let (dir, name) = match row.location.strip_suffix(&row.name) {
            Some(dir) if dir.ends_with('/') => (dir.trim_end_matches('/'), row.name.as_str()),
            _ => ("", row.location.as_str()),
        };
        let bytes = match untrusted::read_in(data_dir, dir, name, limit) {
            Ok(bytes) => bytes,
            Err(refused) => return Ok(Err(format!("the input `{shown}` {}", refused.problem))),
        };
        let to: PathBuf = inputs.join(relative);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&to)?
            .write_all(&bytes)?;
    }
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names are checked before anything is opened: a declared `../` name never reads the
    /// file it points at, whatever the SOP parser let through.
    #[test]
    fn names_reaching_out_are_refused_unread() {
        let data = tempfile::tempdir().unwrap();
        let location = "runs/r/artifacts/n/1";
        std::fs::create_dir_all(data.path().join(location)).unwrap();
        std::fs::write(data.path().join("runs/r/artifacts/n/escape"), "outside").unwrap();
        std::fs::write(data.path().join(location).join("ok.md"), "fine").unwrap();
        let names = ["../escape", "/etc/hostname", "ok.md", "gone.md"].map(String::from);
        let collected = collect(data.path(), location, &names, 1024);
        assert_eq!(collected.read, vec![("ok.md".to_owned(), b"fine".to_vec())]);
        assert_eq!(collected.missing, vec!["gone.md".to_owned()]);
        assert_eq!(collected.refused.len(), 2, "{:?}", collected.refused);
        assert!(
            collected.refused[0].contains("`../escape`"),
            "{:?}",
            collected.refused
        );
    }

    /// A stored artifact swapped for a link after it was stored is not copied, and nothing
    /// that was in the inputs directory is written through.
    #[test]
    fn inputs_are_copied_from_regular_files_into_a_fresh_directory() {
        let data = tempfile::tempdir().unwrap();
        let stored = data.path().join("runs/r/artifacts/plan/1");
        std::fs::create_dir_all(&stored).unwrap();
        std::fs::write(stored.join("plan.md"), "the plan").unwrap();
        let row = |name: &str| ArtifactRow {
            run_id: uuid::Uuid::nil(),
            node: "plan".into(),
            attempt: 1,
            name: name.into(),
            sha256: String::new(),
            size: 0,
            location: format!("runs/r/artifacts/plan/1/{name}"),
        };
        let inputs = data.path().join("runs/r/inputs/code/1");
        let victim = data.path().join("victim.txt");
        std::fs::write(&victim, "precious").unwrap();
        std::fs::create_dir_all(inputs.join("plan")).unwrap();
        std::os::unix::fs::symlink(&victim, inputs.join("plan/plan.md")).unwrap();
        fresh_dir(&inputs).unwrap();
        copy_inputs(data.path(), &[row("plan.md")], &inputs, 1024)
            .unwrap()
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(inputs.join("plan/plan.md")).unwrap(),
            "the plan"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");

        std::os::unix::fs::symlink("/proc/self/environ", stored.join("env.md")).unwrap();
        fresh_dir(&inputs).unwrap();
        let refused = copy_inputs(data.path(), &[row("env.md")], &inputs, 1024)
            .unwrap()
            .unwrap_err();
        assert_eq!(
            refused,
            "the input `plan/env.md` is a symbolic link; artifacts must be regular files inside the artifact directory"
        );
        assert!(!inputs.join("plan/env.md").exists());
        fresh_dir(&inputs).unwrap();
        let refused = copy_inputs(data.path(), &[row("plan.md")], &inputs, 4)
            .unwrap()
            .unwrap_err();
        assert!(refused.contains("over the 4 B limit"), "{refused}");
    }
}
