//! The check of a workspace's `.git` before delivery runs git in it.
//!
//! Nodes had the workspace, so its `.git` is theirs too. Two ways to deliver were possible:
//! a fresh clone plus a copy of the workspace's tree, or the workspace's own repository
//! after a check. Delivery uses the repository after this check, because it keeps what the
//! nodes committed (agents commit as they work; their commits are what was reviewed) and
//! costs no second clone, and because what git takes from `.git` besides its configuration
//! and hooks — both replaced by the deliverer — is data (objects, refs, the index). The
//! dangers in data are redirections, and those are refused here:
//!
//! - `.git` must be a directory, not a link or a `gitdir:` file naming a repository
//!   elsewhere;
//! - nothing in it may be a symbolic link (the deliverer writes `.git/config` and removes
//!   `.git/hooks`: through a link that would write or delete a host file; git would read
//!   refs, objects or its configuration from wherever a link points), a FIFO (git would
//!   block reading it), a socket or a device;
//! - no `commondir` (git would take its configuration, hooks and refs from another
//!   directory), no `objects/info/http-alternates`, and `objects/info/alternates` only
//!   when it names exactly the repository's own mirror on this runner (objects from
//!   another repository on the host would be pushed as if they were the work).
//!
//! The walk reads each entry's own type and never follows a link.

use std::path::Path;

/// Files in `.git` that point git at another place. (Submodules' repositories under
/// `.git/modules` may have them too; delivery never goes into submodules.)
const REDIRECTIONS: &[&str] = &["commondir", "objects/info/http-alternates"];

/// Where a repository names other object stores.
const ALTERNATES: &str = "objects/info/alternates";

/// `Ok` when `workspace/.git` is a repository of its own that points nowhere else but,
/// when `shared` is given, at that object store (its mirror's); else why not, naming the
/// entry.
pub(crate) fn check(workspace: &Path, shared: Option<&Path>) -> Result<(), String> {
    let git = workspace.join(".git");
    let meta = match std::fs::symlink_metadata(&git) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err("the workspace is not a clone of the repository".into());
        }
        Err(e) => return Err(format!("the workspace's `.git`: {e}")),
    };
    if let Some(problem) = refused(&meta.file_type()) {
        return Err(format!(
            "the workspace's `.git` is {problem}; delivery needs the repository itself"
        ));
    }
    if !meta.is_dir() {
        return Err(
            "the workspace's `.git` is a file pointing at a repository elsewhere; delivery needs the repository itself"
                .into(),
        );
    }
    let mut stack = vec![git];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| format!("reading {}: {e}", shown(workspace, &dir)))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("reading {}: {e}", shown(workspace, &dir)))?;
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| format!("reading {}: {e}", shown(workspace, &path)))?;
            if let Some(problem) = refused(&kind) {
                return Err(format!(
                    "the workspace's {} is {problem}; delivery refuses a repository whose `.git` holds links or special files",
                    shown(workspace, &path)
                ));
            }
            if kind.is_dir() {
                stack.push(path);
            }
        }
    }
    let alternates = workspace.join(".git").join(ALTERNATES);
    match std::fs::read_to_string(&alternates) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Ok(text)
            if shared
                .is_some_and(|shared| text.trim_end_matches('\n') == shared.to_string_lossy()) => {}
        _ => {
            return Err(format!(
                "the workspace's {} points git at another repository; delivery refuses it",
                shown(workspace, &alternates)
            ));
        }
    }
    for redirection in REDIRECTIONS {
        let path = workspace.join(".git").join(redirection);
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(format!(
                "the workspace's {} points git at another repository; delivery refuses it",
                shown(workspace, &path)
            ));
        }
    }
    Ok(())
}

/// What is wrong with an entry of this type, if anything.
fn refused(kind: &std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_symlink() {
        Some("a symbolic link")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_block_device() || kind.is_char_device() {
        Some("a device")
    } else {
        None
    }
}

/// `path` as the node sees it: relative to the workspace, in backquotes.
fn shown(workspace: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(workspace).unwrap_or(path);
    format!("`{}`", relative.display())
}
