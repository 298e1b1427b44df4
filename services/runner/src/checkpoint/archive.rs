//! A directory as one tar archive on this runner's disk, the repository's `.git` included:
//! how a conversation's workspace is kept while it is released and copied for a read-only
//! role. It is written beside the directory and renamed into place, so a crash never
//! leaves half an archive.

use std::io;
use std::path::Path;

/// What a checkpoint holds, for the attempt's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Taken {
    /// Files, directories and links in the workspace.
    pub entries: u64,
    /// The archive's size.
    pub bytes: u64,
}

/// Archives `workspace` into `archive`.
pub(crate) fn take(workspace: &Path, archive: &Path) -> io::Result<Taken> {
    if let Some(parent) = archive.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::create_dir_all(workspace)?;
    let partial = archive.with_extension("partial");
    let file = std::fs::File::create(&partial)?;
    let mut builder = tar::Builder::new(io::BufWriter::new(file));
    builder.follow_symlinks(false);
    builder.mode(tar::HeaderMode::Complete);
    builder.append_dir_all(".", workspace)?;
    builder
        .into_inner()?
        .into_inner()
        .map_err(|e| e.into_error())?
        .sync_all()?;
    std::fs::rename(&partial, archive)?;
    // Counted from the directory tree and the file's size, not by reading the archive back.
    Ok(Taken {
        entries: entries(workspace)?,
        bytes: std::fs::metadata(archive)?.len(),
    })
}

/// Entries below `dir`, as the archive holds them (links are not followed).
fn entries(dir: &Path) -> io::Result<u64> {
    let mut count = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        count += 1;
        if entry.file_type()?.is_dir() {
            count += entries(&entry.path())?;
        }
    }
    Ok(count)
}

/// Replaces everything in `workspace` with the archive's contents, their permission bits
/// included but no setuid, setgid or sticky bit, and owned by the runner's user whoever
/// owned them before. The directory itself stays: it may be a mounted volume.
pub(crate) fn restore(archive: &Path, workspace: &Path) -> io::Result<()> {
    std::fs::create_dir_all(workspace)?;
    for entry in std::fs::read_dir(workspace)? {
        let path = entry?.path();
        if path.is_dir() && !path.is_symlink() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    let mut archive = tar::Archive::new(std::fs::File::open(archive)?);
    // Without extended permissions, only the `rwx` bits are restored.
    archive.set_preserve_permissions(false);
    archive.set_preserve_ownerships(false);
    archive.set_overwrite(true);
    archive.unpack(workspace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restore_brings_back_files_modes_and_removes_later_ones() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join(".git/refs")).unwrap();
        std::fs::write(ws.join("a.txt"), "first").unwrap();
        std::fs::write(ws.join(".git/HEAD"), "ref: refs/heads/main").unwrap();
        std::os::unix::fs::symlink("a.txt", ws.join("link")).unwrap();
        let script = ws.join("run.sh");
        std::fs::write(&script, "#!/bin/sh").unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let archive = dir.path().join("checkpoints/node.tar");
        let taken = take(&ws, &archive).unwrap();
        assert!(taken.entries >= 5, "{taken:?}");

        std::fs::write(ws.join("a.txt"), "changed").unwrap();
        std::fs::write(ws.join("later.txt"), "later").unwrap();
        std::fs::remove_dir_all(ws.join(".git")).unwrap();
        restore(&archive, &ws).unwrap();

        assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "first");
        assert!(!ws.join("later.txt").exists());
        assert_eq!(
            std::fs::read_to_string(ws.join(".git/HEAD")).unwrap(),
            "ref: refs/heads/main"
        );
        assert_eq!(
            std::fs::read_link(ws.join("link")).unwrap(),
            Path::new("a.txt")
        );
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&script).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o755);
        assert!(!archive.with_extension("partial").exists());
    }
}
