//! Laying a checked manifest out as the workspace, on the blocking pool: the contents taken
//! out of the packs (each checked against its digest), the tree built in a staging
//! directory, then moved into the workspace in place of what was there. The workspace
//! directory itself stays, as it may be a mount point.
//!
//! Files recorded as git blobs are not written here: they are left [pending](super::Pending)
//! in the runner's record of the workspace, for the workspace's preparation to write from
//! this runner's mirror of their repository ([`super::fill_blobs`]) once it has made sure
//! the mirror holds them.
//!
//! A manifest is not trusted with more than the files' contents and their permission
//! bits: setuid, setgid and sticky bits are masked off, and the owners it records are
//! never given. Everything restored belongs to the runner's user, as what it writes does;
//! a Docker sandbox hands the workspace to its container's user before each start.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use gatehouse_blobs::Digest;

use super::manifest::{Kind, Manifest};
use super::walk::{Content, Seen, SeenFiles};
use super::{Local, Pending, Place, pack};

/// Restores `manifest` (checkpoint `digest`) from `packs` into `place`, working in
/// `staging`. Contents missing from the packs or not matching their digests are
/// `InvalidData`, and so are files that would hold more than `files_limit` together (each
/// path counted, at the size of its contents, whatever the manifest says).
pub(super) fn restore(
    manifest: &Manifest,
    digest: &Digest,
    packs: &[PathBuf],
    staging: &Path,
    place: &Place,
    files_limit: Option<u64>,
) -> io::Result<()> {
    let objects = staging.join("objects");
    let contents = manifest.contents();
    let mut missing: BTreeSet<&Digest> = contents.keys().copied().collect();
    for file in packs {
        if missing.is_empty() {
            break;
        }
        // The pack is what its digest says (the blob store checked), so one that does not
        // read as a pack was never one.
        let taken = pack::extract(file, &missing, &objects).map_err(|e| match e.kind() {
            io::ErrorKind::InvalidData => e,
            _ => invalid(format!("a pack does not read: {e}")),
        })?;
        for taken in taken {
            missing.remove(&taken);
        }
    }
    if let Some(digest) = missing.first() {
        return Err(invalid(format!(
            "the content {digest} is in none of its packs"
        )));
    }
    if let Some(limit) = files_limit {
        let files = files_size(manifest, &objects)?;
        if files > limit {
            return Err(invalid(format!(
                "its files would hold {files} bytes, over the {limit} bytes allowed"
            )));
        }
    }
    let tree = staging.join("tree");
    std::fs::create_dir(&tree)?;
    let (seen, pending) = build(manifest, &objects, &tree)?;
    replace_contents(&place.workspace, &tree)?;
    match (&manifest.checkouts, &place.checkouts) {
        (Some(record), Some(path)) => std::fs::write(path, record)?,
        (None, Some(path)) => match std::fs::remove_file(path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        },
        // A place with no record takes none (a home's manifest with one was refused).
        (_, None) => {}
    }
    // The files were moved, not copied: what was seen in the tree is what is there now,
    // but the change times moved with the rename, so look again.
    let seen = seen
        .into_iter()
        .map(|(path, digest)| {
            let meta = std::fs::symlink_metadata(place.workspace.join(&path))?;
            Ok((path, Seen::of(&meta, Content::Packed { digest })))
        })
        .collect::<io::Result<SeenFiles>>()?;
    // The pending files first: a record without them would say the workspace is whole.
    let listed = super::pending_path(&place.local);
    if pending.is_empty() {
        match std::fs::remove_file(&listed) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    } else {
        let partial = listed.with_extension("partial");
        std::fs::write(
            &partial,
            serde_json::to_vec(&pending).map_err(io::Error::other)?,
        )?;
        std::fs::rename(&partial, &listed)?;
    }
    let local = Local {
        digest: digest.clone(),
        manifest: manifest.clone(),
        seen,
    };
    local.write(&place.local)
}

/// What the manifest's files hold together, each at the size of the contents taken out
/// for it.
fn files_size(manifest: &Manifest, objects: &Path) -> io::Result<u64> {
    let mut sizes: BTreeMap<&Digest, u64> = BTreeMap::new();
    let mut total = 0u64;
    for entry in &manifest.entries {
        if let Kind::File { digest, .. } = &entry.kind {
            let size = match sizes.get(digest) {
                Some(size) => *size,
                None => {
                    let size = std::fs::symlink_metadata(objects.join(digest.as_str()))?.len();
                    sizes.insert(digest, size);
                    size
                }
            };
            total = total.saturating_add(size);
        }
    }
    Ok(total)
}

/// Builds the manifest's entries under `tree` from the contents in `objects`; each file's
/// path and digest, and the blobs left to write.
fn build(
    manifest: &Manifest,
    objects: &Path,
    tree: &Path,
) -> io::Result<(BTreeMap<String, Digest>, Vec<Pending>)> {
    let mut uses: BTreeMap<&Digest, usize> = BTreeMap::new();
    for entry in &manifest.entries {
        if let Kind::File { digest, .. } = &entry.kind {
            *uses.entry(digest).or_default() += 1;
        }
    }
    let mut files = BTreeMap::new();
    let mut pending = Vec::new();
    let mut dirs = Vec::new();
    for entry in &manifest.entries {
        let path = tree.join(&entry.path);
        match &entry.kind {
            Kind::Dir => {
                std::fs::create_dir(&path)?;
                dirs.push((path.clone(), entry.mode));
            }
            Kind::File { digest, .. } => {
                let object = objects.join(digest.as_str());
                let left = uses.get_mut(digest).map_or(0, |n| {
                    *n -= 1;
                    *n
                });
                // The last path with this content takes the object itself.
                if left == 0 {
                    std::fs::rename(&object, &path)?;
                } else {
                    std::fs::copy(&object, &path)?;
                }
                std::fs::set_permissions(&path, permissions(entry.mode))?;
                files.insert(entry.path.clone(), digest.clone());
            }
            Kind::Link { target } => std::os::unix::fs::symlink(target, &path)?,
            Kind::Blob { repo, id, size } => pending.push(Pending {
                path: entry.path.clone(),
                repo: repo.clone(),
                id: id.clone(),
                size: *size,
                mode: entry.mode & 0o777,
            }),
        }
    }
    // Directory modes last: a read-only directory would refuse its own entries.
    for (path, mode) in dirs.into_iter().rev() {
        std::fs::set_permissions(&path, permissions(mode))?;
    }
    Ok((files, pending))
}

/// A recorded mode as restored: read, write and execute bits only.
fn permissions(mode: u32) -> std::fs::Permissions {
    std::fs::Permissions::from_mode(mode & 0o777)
}

/// Empties `workspace` (created if missing) and moves everything in `tree` into it.
fn replace_contents(workspace: &Path, tree: &Path) -> io::Result<()> {
    std::fs::create_dir_all(workspace)?;
    for entry in std::fs::read_dir(workspace)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            make_writable(&entry.path())?;
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    for entry in std::fs::read_dir(tree)? {
        let entry = entry?;
        std::fs::rename(entry.path(), workspace.join(entry.file_name()))?;
    }
    Ok(())
}

/// Lets the owner write every directory below `dir`, so it can be removed.
fn make_writable(dir: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Ok(());
    }
    let mode = meta.permissions().mode();
    if mode & 0o700 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o700))?;
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            make_writable(&entry.path())?;
        }
    }
    Ok(())
}

fn invalid(e: impl ToString) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}
