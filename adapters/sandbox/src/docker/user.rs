//! Who the script runs as in the container, and handing it the directories it writes.

use std::io;
use std::os::unix::fs::{MetadataExt, lchown};
use std::path::{Path, PathBuf};

use nix::unistd::{Gid, Uid};

use crate::profile::parse_user;

/// The unprivileged user a root runner's containers run as by default: `nobody`.
const NOBODY: u32 = 65534;

/// The container's user and, when the runner is root, the owner its directories get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ContainerUser {
    /// Docker's `User`: `uid` or `uid:gid`.
    pub(super) spec: String,
    /// Whom to chown the job's directories to before start; `None` when the runner is not
    /// root (it cannot chown, and the container runs as the runner, which owns them).
    pub(super) chown: Option<(u32, Option<u32>)>,
}

impl ContainerUser {
    /// The profile's user, else `nobody` for a root runner, else the runner's own user.
    pub(super) fn choose(profile_user: Option<&str>) -> Self {
        let root = Uid::effective().is_root();
        let (spec, ids) = match profile_user.and_then(|u| Some((u, parse_user(u)?))) {
            Some((user, ids)) => (user.to_owned(), ids),
            None if root => (format!("{NOBODY}:{NOBODY}"), (NOBODY, Some(NOBODY))),
            None => {
                let (uid, gid) = (Uid::effective().as_raw(), Gid::effective().as_raw());
                (format!("{uid}:{gid}"), (uid, Some(gid)))
            }
        };
        Self {
            spec,
            chown: root.then_some(ids),
        }
    }
}

/// Gives every file under `root` (and `root` itself) to `uid`/`gid`, without following
/// symlinks: a script could otherwise plant a link to a host file and have the root runner
/// hand it over.
pub(super) fn chown_tree(root: &Path, uid: u32, gid: Option<u32>) -> io::Result<()> {
    let mut pending: Vec<PathBuf> = vec![root.to_owned()];
    while let Some(path) = pending.pop() {
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.uid() != uid || gid.is_some_and(|gid| meta.gid() != gid) {
            lchown(&path, Some(uid), gid)?;
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                pending.push(entry?.path());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn a_profile_user_wins_and_the_default_is_never_root() {
        assert_eq!(ContainerUser::choose(Some("1000:1001")).spec, "1000:1001");
        let default = ContainerUser::choose(None);
        assert!(!default.spec.starts_with("0:"), "{}", default.spec);
        if Uid::effective().is_root() {
            assert_eq!(default.spec, "65534:65534");
            assert_eq!(default.chown, Some((NOBODY, Some(NOBODY))));
        } else {
            assert_eq!(default.chown, None);
        }
    }

    #[test]
    fn chown_walks_the_tree_but_not_through_symlinks() {
        if !Uid::effective().is_root() {
            eprintln!("skipped: chown needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::NamedTempFile::new().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/file"), "x").unwrap();
        symlink(outside.path(), dir.path().join("a/link")).unwrap();
        chown_tree(dir.path(), NOBODY, Some(NOBODY)).unwrap();
        for path in ["", "a", "a/b", "a/b/file", "a/link"] {
            let meta = std::fs::symlink_metadata(dir.path().join(path)).unwrap();
            assert_eq!((meta.uid(), meta.gid()), (NOBODY, NOBODY), "{path}");
        }
        assert_eq!(std::fs::metadata(outside.path()).unwrap().uid(), 0);
    }
}
