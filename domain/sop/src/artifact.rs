//! Artifact names: paths under a node's artifact directory.
//!
//! Anything a node wrote is untrusted, and an artifact name decides which file the runner
//! reads and where an importing node gets a copy. A name is therefore a relative path of
//! plain components, which can only point inside the directory it is joined to. The
//! parser refuses other names in `artifacts:`; the runner checks again before it reads.

use crate::quote::shown;

/// Whether `name` is a relative path of plain names: `report.md`, `logs/test.txt`. Refused:
/// an empty name or component (`a//b`, `a/`), `.` and `..` components, a leading `/`, a
/// backslash, control characters (NUL among them) and a component starting with `~`.
pub fn check_artifact_name(name: &str) -> Result<(), String> {
    let shown = shown(name);
    if name.chars().any(char::is_control) {
        return Err(format!(
            "artifact `{shown}` must not contain control characters"
        ));
    }
    if name.contains('\\') {
        return Err(format!(
            "artifact `{shown}` must not contain `\\`; separate directories with `/`"
        ));
    }
    if name.starts_with('/')
        || name
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err(format!(
            "artifact `{shown}` must be a relative path of plain names (no `..`, `.` or leading `/`)"
        ));
    }
    if name.split('/').any(|c| c.starts_with('~')) {
        return Err(format!("artifact `{shown}` must not start a name with `~`"));
    }
    Ok(())
}
