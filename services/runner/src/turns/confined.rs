//! Keeping a read-only role's copy of the workspace closed: the copy lies beside the
//! workspace (`scratch/read-only-…`), so a link the workspace holds, relative
//! (`escape -> ../../workspace`) or absolute, would lead the role's reads and writes back
//! into the workspace it must not change. Every link in the copy is resolved as the kernel
//! would resolve it, and one that leads out of the copy, or nowhere (writing through a
//! dangling link creates its target, wherever that is), is removed before the role starts.

use std::io;
use std::path::Path;

/// Removes every link below `root` that does not resolve to something inside it; the
/// links removed, relative to `root`, each with its target.
pub(super) fn drop_links_leaving(root: &Path) -> io::Result<Vec<(String, String)>> {
    let root = std::fs::canonicalize(root)?;
    let mut dropped = Vec::new();
    let mut pending = vec![root.clone()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            let kind = std::fs::symlink_metadata(&path)?.file_type();
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_symlink() {
                let inside = std::fs::canonicalize(&path).is_ok_and(|to| to.starts_with(&root));
                if !inside {
                    let target = std::fs::read_link(&path)?;
                    std::fs::remove_file(&path)?;
                    let relative = path.strip_prefix(&root).unwrap_or(&path);
                    dropped.push((
                        relative.to_string_lossy().into_owned(),
                        target.to_string_lossy().into_owned(),
                    ));
                }
            }
        }
    }
    dropped.sort();
    Ok(dropped)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn links_out_of_the_copy_or_nowhere_are_removed_and_links_within_it_kept() {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("scratch/read-only");
        std::fs::create_dir_all(copy.join("docs")).unwrap();
        std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
        std::fs::write(copy.join("README.md"), "read me").unwrap();
        symlink("../README.md", copy.join("docs/README.md")).unwrap();
        symlink("docs", copy.join("documentation")).unwrap();
        symlink("../../workspace", copy.join("escape")).unwrap();
        symlink(dir.path().join("workspace"), copy.join("absolute")).unwrap();
        symlink("../../workspace/new.txt", copy.join("dangling")).unwrap();
        // Inside as written, outside as resolved: `here` is the copy's root, `here/..` not.
        symlink(".", copy.join("here")).unwrap();
        symlink("here/..", copy.join("sly")).unwrap();

        let dropped = drop_links_leaving(&copy).unwrap();
        let names: Vec<&str> = dropped.iter().map(|(path, _)| path.as_str()).collect();
        assert_eq!(names, ["absolute", "dangling", "escape", "sly"]);
        assert_eq!(
            std::fs::read_to_string(copy.join("docs/README.md")).unwrap(),
            "read me"
        );
        assert!(copy.join("documentation/README.md").exists());
        assert!(copy.join("here").is_symlink());
        assert!(!copy.join("escape").exists() && !copy.join("escape").is_symlink());
    }
}
