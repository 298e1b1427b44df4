//! Spare checkouts: beside each mirror, the runner keeps one repository checked out from it
//! ahead of need (`<mirror>.spare/repo`, at the tip of the branch the last run started
//! from), made in the background after a run takes the previous one. A run then starts
//! from the spare: it is moved into the workspace and moved to the run's commit, which
//! writes only the files that differ — where checking out a large repository writes every
//! one of its files, the part of a start that grows with the repository.
//!
//! A spare is the runner's own work, never a node's: it is made by the runner's git from
//! its mirror, in a directory no sandbox sees, and marked ready only once whole (a runner
//! killed while making one leaves a directory that is removed, never used). It is taken
//! by a rename, so two runs never share one. It counts toward the mirrors' limit and goes
//! with its mirror.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use gatehouse_events::History;

use super::mirrors::{Mirrors, Refill};
use crate::git::local as git;

/// The file a spare gets once it is whole: the commit it is at.
const READY: &str = "ready";

/// Makes `into` an empty repository whose objects are the mirror's (its alternates name
/// `objects`), with `url` as `origin`.
pub(crate) async fn init_shared(objects: &Path, url: &str, into: &Path) -> Result<(), String> {
    std::fs::create_dir_all(into).map_err(|e| e.to_string())?;
    let dest = into.to_string_lossy().into_owned();
    let parent = into.parent().unwrap_or(into);
    git(parent, None, &["init", "--quiet", "--", &dest]).await?;
    share_objects(&into.join(".git"), objects).map_err(|e| e.to_string())?;
    git(into, Some(into), &["remote", "add", "origin", url])
        .await
        .map(drop)
}

/// Gives the repository at `into` the mirror's branches (as `origin`'s) and tags (`refs`,
/// as [`mirror_refs`] lists them), its shallow commits and default branch, as a fresh
/// clone would have them.
pub(crate) fn refresh_refs(
    mirror: &Path,
    refs: &HashMap<String, String>,
    default: Option<&str>,
    into: &Path,
) -> Result<(), String> {
    let repo = into.join(".git");
    let failed = |e: std::io::Error| format!("writing {}'s refs: {e}", into.display());
    std::fs::write(repo.join("packed-refs"), packed_refs(refs)).map_err(failed)?;
    match std::fs::read(mirror.join("shallow")) {
        Ok(shallow) => std::fs::write(repo.join("shallow"), shallow).map_err(failed)?,
        Err(_) => match std::fs::remove_file(repo.join("shallow")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(failed(e)),
            _ => {}
        },
    }
    if let Some(default) = default {
        let origin = repo.join("refs/remotes/origin");
        std::fs::create_dir_all(&origin).map_err(failed)?;
        std::fs::write(
            origin.join("HEAD"),
            format!("ref: refs/remotes/origin/{default}\n"),
        )
        .map_err(failed)?;
    }
    Ok(())
}

/// The mirror's branches and tags, by name.
pub(crate) async fn mirror_refs(mirror: &Path) -> Result<HashMap<String, String>, String> {
    let args = [
        "for-each-ref",
        "--format=%(objectname) %(refname)",
        "refs/heads",
        "refs/tags",
    ];
    let listed = git(mirror, None, &args).await?;
    Ok(listed
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(id, name)| (name.to_owned(), id.to_owned()))
        .collect())
}

/// Names `objects` as the only alternates of the repository at `git`.
pub(crate) fn share_objects(git: &Path, objects: &Path) -> std::io::Result<()> {
    let info = git.join("objects/info");
    std::fs::create_dir_all(&info)?;
    let partial = info.join("alternates.partial");
    std::fs::write(&partial, format!("{}\n", objects.display()))?;
    std::fs::rename(partial, info.join("alternates"))
}

/// A `packed-refs` file of the mirror's refs as a clone would have them: its branches as
/// `origin`'s, its tags as they are.
fn packed_refs(refs: &HashMap<String, String>) -> String {
    let mut refs: Vec<(String, &str)> = refs
        .iter()
        .filter_map(|(name, id)| {
            let renamed = if let Some(branch) = name.strip_prefix("refs/heads/") {
                format!("refs/remotes/origin/{branch}")
            } else if name.starts_with("refs/tags/") {
                name.clone()
            } else {
                return None;
            };
            Some((renamed, id.as_str()))
        })
        .collect();
    refs.sort();
    let mut text = String::from("# pack-refs with: sorted\n");
    for (name, id) in refs {
        text.push_str(&format!("{id} {name}\n"));
    }
    text
}

impl Mirrors {
    fn spare(&self, url: &str, history: History) -> PathBuf {
        let mirror = self.shared(url, history);
        let dir = mirror.parent().unwrap_or(&mirror);
        dir.with_extension("spare")
    }

    /// Moves the spare checkout of the mirror of `url` to `into` (which must not exist),
    /// when there is one ready.
    pub(crate) fn claim_spare(&self, url: &str, history: History, into: &Path) -> bool {
        let spare = self.spare(url, history);
        if !spare.join(READY).is_file() {
            return false;
        }
        let _ = std::fs::remove_dir(into);
        let taken = std::fs::rename(spare.join("repo"), into).is_ok();
        let _ = std::fs::remove_dir_all(&spare);
        taken
    }

    /// Makes a new spare checkout (`refill`) in the background, unless one is ready or
    /// being made. Errors are logged: a run without a spare checks its repository out
    /// itself.
    pub(crate) fn refill(&self, refill: Refill) {
        let Refill {
            url,
            history,
            default,
            branch,
            workspace,
        } = refill;
        let name = self.shared(&url, history);
        let key = name.display().to_string();
        let spare = self.spare(&url, history);
        if spare.join(READY).is_file() || !self.start_refilling(&key) {
            return;
        }
        let mirrors = self.clone();
        tokio::spawn(async move {
            let lease = mirrors.hold_for_spare(&url, history);
            // Whoever the workspace went to by now (a Docker sandbox's user).
            let owner = std::fs::metadata(&workspace).ok().map(|m| {
                use std::os::unix::fs::MetadataExt;
                (m.uid(), m.gid())
            });
            let made = make_spare(&name, &spare, &url, default.as_deref(), &branch, owner).await;
            if let Err(reason) = made {
                tracing::warn!(%url, %reason, "making a spare checkout failed");
            }
            drop(lease);
            mirrors.done_refilling(&key);
        });
    }
}

/// Makes `spare` (a checkout of `objects`' mirror at `branch`) in a directory beside it,
/// then moves it into place.
async fn make_spare(
    objects: &Path,
    spare: &Path,
    url: &str,
    default: Option<&str>,
    branch: &str,
    owner: Option<(u32, u32)>,
) -> Result<(), String> {
    let mirror = objects.parent().unwrap_or(objects);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let making = spare.with_extension(format!("making-{nanos}"));
    let repo = making.join("repo");
    let made = async {
        init_shared(objects, url, &repo).await?;
        refresh_refs(mirror, &mirror_refs(mirror).await?, default, &repo)?;
        let from = format!("refs/remotes/origin/{branch}");
        git(
            &repo,
            Some(&repo),
            &["checkout", "--quiet", "--detach", &from],
        )
        .await?;
        let head = git(&repo, Some(&repo), &["rev-parse", "--verify", "HEAD"]).await?;
        if let Some((uid, gid)) = owner.filter(|_| rustix::process::geteuid().is_root()) {
            let tree = repo.clone();
            tokio::task::spawn_blocking(move || give(&tree, uid, gid))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| format!("handing the spare over: {e}"))?;
            // Changing owners changed every file's ctime: the index learns them now, or
            // the checkout that takes the spare would read every file again.
            git(&repo, Some(&repo), &["update-index", "-q", "--refresh"]).await?;
        }
        std::fs::write(making.join(READY), head.trim()).map_err(|e| e.to_string())?;
        if spare.exists() {
            return Err("another spare is there".to_owned());
        }
        std::fs::rename(&making, spare).map_err(|e| e.to_string())
    }
    .await;
    if made.is_err() {
        let _ = std::fs::remove_dir_all(&making);
    }
    made
}

/// Gives every entry under `root` (and `root`) to `uid`/`gid`, links not followed.
fn give(root: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let mut pending = vec![root.to_owned()];
    while let Some(path) = pending.pop() {
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.uid() != uid || meta.gid() != gid {
            std::os::unix::fs::lchown(&path, Some(uid), Some(gid))?;
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                pending.push(entry?.path());
            }
        }
    }
    Ok(())
}

/// Removes spares half made by a runner that was killed making them (`*.making-*`), and the
/// spare of `mirror` (a `<name>.git` directory) when it is removed.
pub(crate) fn remove_spare_of(mirror: &Path) {
    let _ = std::fs::remove_dir_all(mirror.with_extension("spare"));
}

/// Whether `name` (an entry of the mirrors' directory) is a spare half made.
pub(crate) fn is_half_made(name: &str) -> bool {
    name.contains(".making-")
}
