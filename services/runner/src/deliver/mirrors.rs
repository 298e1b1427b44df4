//! Warm repositories: each runner keeps one bare mirror per remote (and [`History`]) under
//! `<data_dir>/mirrors`, brought up to date — not cloned again — before each run that works
//! on it, and a run's workspace is made from it without copying its objects: the
//! workspace's `.git/objects/info/alternates` names the mirror's object store and its refs
//! are written from the mirror's, so preparing a workspace costs one round trip to the
//! remote (none of its bytes when nothing changed) and the checkout.
//!
//! Why alternates, not hard links or worktrees: the sandbox's user owns the workspace (the
//! Docker sandbox hands it over), and a hard-linked pack would be its to rewrite, a
//! worktree's repository its to configure — either would let one run's agent change what
//! the next run of the repository starts from. The mirror stays the runner's: a Docker
//! sandbox mounts its object store read-only at the same path ([`Mirrors::shared`]), and
//! the runner's own git accepts a workspace's alternates only when they name exactly its
//! repository's mirror ([`crate::gitdir::check`]); they are written again before each
//! node, so a workspace restored from another runner's checkpoint points at this one's.
//!
//! A mirror is trusted no further than git's own checks: one whose first fetch never
//! finished (no marker), whose fetch fails while its remote answers, or from which a
//! checkout fails, is discarded and made again from the remote. Objects are never pruned
//! from a mirror (automatic gc is off for every command the runner runs), so a workspace
//! keeps the commits it started from as long as the mirror lives. Mirrors are bounded:
//! past the limit, the least recently used ones that no attempt holds ([`Lease`]) are
//! removed; a workspace whose mirror was removed gets it back, fetched again, before its
//! next node.
//!
//! One runner owns its data directory: the locks here are in-process, and a lock file git
//! left behind (a runner killed mid-fetch) is stale by the time a mirror is opened again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use gatehouse_events::History;
use serde::{Deserialize, Serialize};

use super::spares::mirror_refs;
use super::{Deliverer, Remote, Session};
use crate::git::Network;

/// The file a mirror gets once its first fetch finished; without it, it is half made.
const MARKER: &str = "gatehouse-mirror.json";

/// [`Mirrors`]' limit unless configured (`storage.mirror_limit`): 20 GiB.
pub const MIRROR_LIMIT: u64 = 20 * 1024 * 1024 * 1024;

/// The runner's mirrors: where they are, how much they may hold, and which are in use.
#[derive(Clone)]
pub struct Mirrors {
    inner: Arc<Inner>,
}

struct Inner {
    root: PathBuf,
    limit: u64,
    held: Mutex<HashMap<String, Held>>,
    /// Mirrors whose spare checkout is being made ([`super::spares`]).
    refilling: Mutex<std::collections::HashSet<String>>,
    /// Held while an eviction runs: one at a time, the others have nothing left to do.
    evicting: Mutex<()>,
}

/// One mirror's lock (fetches and rebuilds one at a time) and the attempts holding it.
#[derive(Default)]
struct Held {
    lock: Arc<tokio::sync::Mutex<()>>,
    leases: usize,
}

impl std::fmt::Debug for Mirrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mirrors")
            .field("root", &self.inner.root)
            .field("limit", &self.inner.limit)
            .finish_non_exhaustive()
    }
}

/// A mirror in use: it is not evicted while this lives. Attempts hold one per repository
/// of their workspace until they end.
pub struct Lease {
    inner: Arc<Inner>,
    name: String,
    objects: PathBuf,
    /// The spare checkout to make when the lease ends: after the attempt, not beside it,
    /// so making it takes nothing from the start it follows.
    refill: Option<Refill>,
}

/// A spare checkout to make ([`super::spares`]).
pub(crate) struct Refill {
    pub url: String,
    pub history: History,
    pub default: Option<String>,
    pub branch: String,
    /// The workspace the lease's attempt worked in: the spare is given to whoever owns it
    /// by then (a Docker sandbox's user), so the next start hands over no file.
    pub workspace: PathBuf,
}

impl Lease {
    /// Makes the mirror's next spare checkout (of `refill`) once this lease ends.
    pub(crate) fn refill_when_done(&mut self, refill: Refill) {
        self.refill = Some(refill);
    }
}

/// Mounts the object stores of `leases` read-only at their own paths in a Docker
/// sandbox's `profile`, where the workspace's alternates name them. A process sandbox
/// sees the host's files as they are.
pub(crate) fn mount_shared(profile: &mut gatehouse_sandbox::Profile, leases: &[Lease]) {
    if profile.kind != gatehouse_sandbox::SandboxKind::Docker {
        return;
    }
    for lease in leases {
        let target = lease.objects.to_string_lossy().into_owned();
        if profile.mounts.iter().any(|m| m.target == target) {
            continue;
        }
        profile.mounts.push(gatehouse_sandbox::Mount {
            source: lease.objects.clone(),
            target,
        });
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        {
            let mut held = lock(&self.inner.held);
            if let Some(entry) = held.get_mut(&self.name) {
                entry.leases = entry.leases.saturating_sub(1);
            }
        }
        if let Some(refill) = self.refill.take()
            && tokio::runtime::Handle::try_current().is_ok()
        {
            let mirrors = Mirrors {
                inner: self.inner.clone(),
            };
            mirrors.refill(refill);
        }
    }
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Lease").field(&self.name).finish()
    }
}

/// What the marker records: for people looking at the directory, and the time of last use
/// the eviction orders by.
#[derive(Debug, Serialize, Deserialize)]
struct Marker {
    url: String,
    history: History,
    /// Milliseconds since the epoch.
    used: u64,
}

/// A mirror brought up to date for one repository.
pub(crate) struct Mirror {
    /// The bare repository.
    pub dir: PathBuf,
    /// Whether it was there before (a failure made from it may be its fault).
    pub warm: bool,
    /// The remote's default branch, when it names one.
    pub default: Option<String>,
    /// Its branches and tags as fetched ([`super::spares::mirror_refs`]).
    pub refs: HashMap<String, String>,
    pub lease: Lease,
}

impl Mirror {
    /// Its object store, which workspaces name as their alternates.
    pub(crate) fn objects(&self) -> PathBuf {
        self.dir.join("objects")
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Mirrors {
    /// Mirrors under `root` (made when first needed), `limit` bytes together. The root is
    /// made absolute: workspaces name their mirror's objects by that path.
    pub fn new(root: PathBuf, limit: u64) -> Self {
        let root = std::path::absolute(&root).unwrap_or(root);
        // Spares a killed runner was making are of no use.
        if let Ok(entries) = std::fs::read_dir(&root) {
            for entry in entries.flatten() {
                if super::spares::is_half_made(&entry.file_name().to_string_lossy()) {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        Self {
            inner: Arc::new(Inner {
                root,
                limit,
                held: Mutex::new(HashMap::new()),
                refilling: Mutex::new(std::collections::HashSet::new()),
                evicting: Mutex::new(()),
            }),
        }
    }

    /// Marks the spare of `key` as being made; `false` when it is already.
    pub(crate) fn start_refilling(&self, key: &str) -> bool {
        lock(&self.inner.refilling).insert(key.to_owned())
    }

    pub(crate) fn done_refilling(&self, key: &str) {
        lock(&self.inner.refilling).remove(key);
    }

    /// Holds the mirror of `url` while its spare is made.
    pub(crate) fn hold_for_spare(&self, url: &str, history: History) -> Lease {
        self.lease(&Self::name(url, history)).0
    }

    /// The directory name of the mirror of `url`: a digest of the url (no credential is
    /// ever in it), so two repositories never share one and the name reveals nothing.
    fn name(url: &str, history: History) -> String {
        let digest = gatehouse_blobs::Digest::of(url.as_bytes());
        format!("{}-{}", &digest.as_str()[..32], history.as_str())
    }

    fn dir(&self, name: &str) -> PathBuf {
        self.inner.root.join(format!("{name}.git"))
    }

    /// The object store a workspace of the repository at `url` may name as its alternates:
    /// its mirror's, whether or not the mirror exists right now.
    pub(crate) fn shared(&self, url: &str, history: History) -> PathBuf {
        self.dir(&Self::name(url, history)).join("objects")
    }

    /// Holds the mirror `name` against eviction; its lock, to take for changing it.
    fn lease(&self, name: &str) -> (Lease, Arc<tokio::sync::Mutex<()>>) {
        let mut held = lock(&self.inner.held);
        let entry = held.entry(name.to_owned()).or_default();
        entry.leases += 1;
        let lease = Lease {
            inner: self.inner.clone(),
            name: name.to_owned(),
            objects: self.dir(name).join("objects"),
            refill: None,
        };
        (lease, entry.lock.clone())
    }

    /// Holds the mirror of `url` as it is, without asking the remote, when it is complete
    /// and has the commit `start`; `None` when it must be fetched.
    pub(crate) async fn hold(&self, url: &str, history: History, start: &str) -> Option<Lease> {
        let name = Self::name(url, history);
        let dir = self.dir(&name);
        let (lease, lock) = self.lease(&name);
        let _guard = lock.lock().await;
        let marker = read_marker(&dir)?;
        let object = format!("{start}^{{commit}}");
        crate::git::local(&dir, None, &["cat-file", "-e", &object])
            .await
            .ok()?;
        write_marker(&dir, &marker.url, history).ok()?;
        Some(lease)
    }

    /// Removes the least recently used mirrors nobody holds until all of them together
    /// fit the limit. Errors are logged: a mirror that cannot be removed is only space.
    fn evict(&self) {
        let Ok(_one) = self.inner.evicting.try_lock() else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(&self.inner.root) else {
            return;
        };
        let mut mirrors: Vec<(u64, u64, String)> = Vec::new();
        let mut total = 0u64;
        for entry in entries.flatten() {
            let file_name = entry.file_name().to_string_lossy().into_owned();
            let Some(name) = file_name.strip_suffix(".git") else {
                continue;
            };
            let size = size_of(&entry.path())
                .saturating_add(size_of(&entry.path().with_extension("spare")));
            total = total.saturating_add(size);
            let used = read_marker(&entry.path()).map_or(0, |m| m.used);
            mirrors.push((used, size, name.to_owned()));
        }
        if total <= self.inner.limit {
            return;
        }
        mirrors.sort();
        for (_, size, name) in mirrors {
            if total <= self.inner.limit {
                break;
            }
            // Held, or being fetched: kept. The map's lock is held while removing, so no
            // lease is taken on a mirror half removed.
            let held = lock(&self.inner.held);
            if held.get(&name).is_some_and(|h| h.leases > 0) {
                continue;
            }
            super::spares::remove_spare_of(&self.dir(&name));
            match discard(&self.dir(&name)) {
                Ok(()) => {
                    tracing::info!(mirror = %name, bytes = size, "removed a mirror (least recently used)");
                    total = total.saturating_sub(size);
                }
                Err(e) => tracing::warn!(mirror = %name, error = %e, "removing a mirror failed"),
            }
        }
    }
}

impl Deliverer {
    /// The mirror of `repo` at `remote`, made or brought up to date, and held. `wanted`:
    /// the branches a shallow mirror must have at their tips besides the default (a full
    /// one fetches every branch and tag). `Err`: why it cannot be (the remote refused or
    /// is unreachable), named.
    pub(crate) async fn mirror(
        &self,
        mirrors: &Mirrors,
        repo: &str,
        remote: &Remote<'_>,
        history: History,
        wanted: &[&str],
        session: &mut Session,
    ) -> Result<Mirror, String> {
        let name = Mirrors::name(&remote.url, history);
        let dir = mirrors.dir(&name);
        let (lease, lock) = mirrors.lease(&name);
        let guard = lock.lock().await;
        let warm = read_marker(&dir).is_some();
        if warm {
            remove_stale_locks(&dir);
        } else {
            self.create(&dir, repo, session).await?;
        }
        let (default, refs) = match self.update(&dir, remote, history, wanted, session).await {
            Ok(updated) => updated,
            Err(reason)
                if warm
                    && self
                        .answers(&remote.url, &mirrors.inner.root, session)
                        .await =>
            {
                session.lines.push(format!(
                    "[gatehouse] the mirror of {repo} could not be updated ({reason}); discarding it and fetching {repo} again"
                ));
                self.create(&dir, repo, session).await?;
                self.update(&dir, remote, history, wanted, session).await?
            }
            Err(reason) if warm => return Err(format!("fetching {repo}: {}", plain(&reason))),
            Err(reason) => return Err(format!("cloning {repo}: {}", plain(&reason))),
        };
        write_marker(&dir, &remote.url, history)
            .map_err(|e| format!("recording the mirror of {repo}: {e}"))?;
        drop(guard);
        // Off the way to the checkout: sizing the mirrors walks every spare's files.
        let evicting = mirrors.clone();
        tokio::task::spawn_blocking(move || evicting.evict());
        Ok(Mirror {
            dir,
            warm,
            default,
            refs,
            lease,
        })
    }

    /// Discards the mirror (a checkout from it failed) and fetches it again from scratch.
    pub(crate) async fn rebuild(
        &self,
        mirrors: &Mirrors,
        repo: &str,
        remote: &Remote<'_>,
        history: History,
        wanted: &[&str],
        session: &mut Session,
    ) -> Result<Mirror, String> {
        let name = Mirrors::name(&remote.url, history);
        let dir = mirrors.dir(&name);
        {
            let (_lease, lock) = mirrors.lease(&name);
            let _guard = lock.lock().await;
            let _ = std::fs::remove_file(dir.join(MARKER));
        }
        session.lines.push(format!(
            "[gatehouse] a checkout from the mirror of {repo} failed; discarding it and fetching {repo} again"
        ));
        let mirror = self
            .mirror(mirrors, repo, remote, history, wanted, session)
            .await?;
        Ok(Mirror {
            warm: false,
            ..mirror
        })
    }

    /// An empty bare repository at `dir`, whatever was there before.
    async fn create(&self, dir: &Path, repo: &str, session: &mut Session) -> Result<(), String> {
        let failed = |e: std::io::Error| format!("making the mirror of {repo}: {e}");
        if dir.exists() {
            discard(dir).map_err(failed)?;
        }
        let parent = dir.parent().unwrap_or(dir);
        std::fs::create_dir_all(parent).map_err(failed)?;
        let path = dir.to_string_lossy();
        self.run(
            "",
            parent,
            None,
            Network::Local,
            &["init", "--quiet", "--bare", "--", &path],
            session,
        )
        .await
        .map(drop)
    }

    /// Fetches what the remote has that the mirror lacks: every branch and tag (full), or
    /// the default branch's and `wanted` branches' tips (shallow). Asks the remote for its
    /// refs first and fetches nothing when the mirror has them all. The remote's default
    /// branch, when it names one, and the mirror's refs as they are now.
    async fn update(
        &self,
        dir: &Path,
        remote: &Remote<'_>,
        history: History,
        wanted: &[&str],
        session: &mut Session,
    ) -> Result<(Option<String>, HashMap<String, String>), String> {
        let url = remote.url.as_str();
        let listed = self
            .run(
                url,
                dir,
                None,
                Network::Remote,
                &[
                    "ls-remote",
                    "--symref",
                    "--",
                    url,
                    "HEAD",
                    "refs/heads/*",
                    "refs/tags/*",
                ],
                session,
            )
            .await?;
        let advertised = Advertised::parse(&listed);
        let have = mirror_refs(dir).await?;
        let mut refspecs: Vec<String> = Vec::new();
        match history {
            History::Full => {
                if advertised.refs != have {
                    refspecs.push("+refs/heads/*:refs/heads/*".into());
                    refspecs.push("+refs/tags/*:refs/tags/*".into());
                }
            }
            History::Shallow => {
                let branches = advertised
                    .default
                    .iter()
                    .map(String::as_str)
                    .chain(wanted.iter().copied());
                for branch in branches {
                    let name = format!("refs/heads/{branch}");
                    let Some(tip) = advertised.refs.get(&name) else {
                        continue;
                    };
                    if have.get(&name) != Some(tip) {
                        refspecs.push(format!("+{name}:{name}"));
                    }
                }
            }
        }
        if refspecs.is_empty() {
            return Ok((advertised.default, have));
        }
        let mut args = vec!["fetch", "--quiet", "--no-tags", "--no-write-fetch-head"];
        match history {
            History::Full => args.push("--prune"),
            History::Shallow => args.extend(["--depth", "1"]),
        }
        args.extend(["--", url]);
        args.extend(refspecs.iter().map(String::as_str));
        self.run(url, dir, None, Network::Remote, &args, session)
            .await?;
        // Listed again, not taken from the advertisement: the remote may have moved on
        // between the two.
        Ok((advertised.default, mirror_refs(dir).await?))
    }

    /// Whether the remote answers at all (so a failed fetch was the mirror's fault).
    async fn answers(&self, url: &str, dir: &Path, session: &mut Session) -> bool {
        self.run(
            url,
            dir,
            None,
            Network::Remote,
            &["ls-remote", "--", url, "HEAD"],
            session,
        )
        .await
        .is_ok()
    }
}

/// What `git ls-remote --symref` said: the default branch and every ref's commit (peeled
/// tags left out: the mirror holds the tags themselves).
struct Advertised {
    default: Option<String>,
    refs: HashMap<String, String>,
}

/// The default branch `git ls-remote --symref` names, when it names a branch.
pub(crate) fn default_branch(listed: &str) -> Option<String> {
    Advertised::parse(listed).default
}

impl Advertised {
    fn parse(listed: &str) -> Self {
        let mut default = None;
        let mut refs = HashMap::new();
        for line in listed.lines() {
            if let Some(symref) = line.strip_prefix("ref: ") {
                if let Some((target, "HEAD")) = symref.split_once('\t') {
                    default = target
                        .strip_prefix("refs/heads/")
                        .filter(|b| gatehouse_project::is_branch_name(b))
                        .map(str::to_owned);
                }
                continue;
            }
            let Some((id, name)) = line.split_once('\t') else {
                continue;
            };
            if name.starts_with("refs/") && !name.ends_with("^{}") {
                refs.insert(name.to_owned(), id.to_owned());
            }
        }
        Self { default, refs }
    }
}

/// Git's reason without the command it came from (`git ls-remote failed: fatal: x` → `x`).
pub(crate) fn plain(reason: &str) -> &str {
    let reason = reason
        .strip_prefix("git ")
        .and_then(|rest| rest.split_once(" failed: "))
        .map_or(reason, |(_, why)| why);
    reason.strip_prefix("fatal: ").unwrap_or(reason)
}

fn read_marker(dir: &Path) -> Option<Marker> {
    let bytes = std::fs::read(dir.join(MARKER)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn write_marker(dir: &Path, url: &str, history: History) -> std::io::Result<()> {
    let used = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let marker = Marker {
        url: url.to_owned(),
        history,
        used,
    };
    let partial = dir.join(format!("{MARKER}.partial"));
    std::fs::write(
        &partial,
        serde_json::to_vec(&marker).map_err(std::io::Error::other)?,
    )?;
    std::fs::rename(partial, dir.join(MARKER))
}

/// Removes a mirror: renamed aside first, so a half-removed one is never taken for a
/// mirror.
fn discard(dir: &Path) -> std::io::Result<()> {
    let _ = std::fs::remove_file(dir.join(MARKER));
    let aside = dir.with_extension(format!(
        "discarded-{}",
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    std::fs::rename(dir, &aside)?;
    std::fs::remove_dir_all(&aside)
}

/// Removes the lock files git leaves when it is killed mid-command: the runner holds the
/// mirror's lock, so no other git is at work in it.
fn remove_stale_locks(dir: &Path) {
    let mut pending = vec![dir.to_owned()];
    while let Some(path) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&path) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            if kind.is_dir() && name != "objects" {
                pending.push(entry.path());
            } else if kind.is_file() && name.to_string_lossy().ends_with(".lock") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Bytes of the files under `dir`, links not followed.
fn size_of(dir: &Path) -> u64 {
    let mut total = 0u64;
    let mut pending = vec![dir.to_owned()];
    while let Some(path) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&path) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                total = total.saturating_add(meta.len());
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advertised_refs_are_read_with_the_default_branch() {
        let listed = "ref: refs/heads/main\tHEAD\n\
            1111111111111111111111111111111111111111\tHEAD\n\
            1111111111111111111111111111111111111111\trefs/heads/main\n\
            2222222222222222222222222222222222222222\trefs/tags/v1\n\
            3333333333333333333333333333333333333333\trefs/tags/v1^{}\n";
        let advertised = Advertised::parse(listed);
        assert_eq!(advertised.default.as_deref(), Some("main"));
        assert_eq!(advertised.refs.len(), 2);
        assert_eq!(
            advertised.refs["refs/tags/v1"],
            "2222222222222222222222222222222222222222"
        );
    }

    #[test]
    fn a_mirror_is_named_by_its_url_and_history() {
        let full = Mirrors::name("https://github.com/acme/api.git", History::Full);
        let shallow = Mirrors::name("https://github.com/acme/api.git", History::Shallow);
        assert_ne!(full, shallow);
        assert!(full.ends_with("-full") && !full.contains("acme"));
        assert_ne!(
            full,
            Mirrors::name("https://github.com/acme/web.git", History::Full)
        );
    }
}
