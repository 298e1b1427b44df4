//! Files a checkpoint records as git blobs: known as such when the runner checks a
//! repository out ([`seed`]), written back from this runner's mirror after a restore
//! ([`fill_blobs`]).
//!
//! Only the runner's own checkout is taken at its word, right after it made it and before
//! any node ran: each file of the commit's tree that is a regular file of the blob's size
//! is recorded as that blob. A repository whose `.gitattributes` may convert files on
//! checkout (line endings, filters, encodings) is not seeded: its files are hashed as any
//! other. After that a file stays a blob only while it holds the blob's bytes
//! ([`super::walk`]).
//!
//! Writing back reads each blob from the mirror of the repository the run's plan puts at
//! that directory (never from the workspace's own `.git`, which nodes could have changed):
//! the blob must be there, of the size the manifest records, and its file must not exist
//! yet.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use super::manifest::Manifest;
use super::walk::{Content, Seen, SeenFiles};
use super::{Local, Pending, blocking, pending_path};
use crate::git::{Auth, Git, Network};

/// One file of a commit's tree, as `git ls-tree -r -l` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    /// Relative to the repository.
    pub path: String,
    pub id: String,
    pub size: u64,
}

/// Parses `git ls-tree -r -l -z` output: regular files only (no links, submodules or
/// trees).
pub(crate) fn parse_listing(out: &str) -> Vec<Listed> {
    out.split('\0')
        .filter_map(|record| {
            let (meta, path) = record.split_once('\t')?;
            let mut words = meta.split_whitespace();
            let (mode, kind, id, size) =
                (words.next()?, words.next()?, words.next()?, words.next()?);
            if kind != "blob" || !(mode == "100644" || mode == "100755") {
                return None;
            }
            Some(Listed {
                path: path.to_owned(),
                id: id.to_owned(),
                size: size.parse().ok()?,
            })
        })
        .collect()
}

/// Words of a `.gitattributes` line that make a checkout write other bytes than the blob's.
const CONVERTING: &[&str] = &[
    "text",
    "eol",
    "crlf",
    "filter",
    "ident",
    "working-tree-encoding",
];

/// Whether the repository at `dir` has a `.gitattributes` (among `listed`) that may convert
/// files on checkout.
fn converts(dir: &Path, listed: &[Listed]) -> bool {
    listed
        .iter()
        .filter(|l| l.path == ".gitattributes" || l.path.ends_with("/.gitattributes"))
        .any(|l| {
            std::fs::read_to_string(dir.join(&l.path)).map_or(true, |text| {
                text.lines().any(|line| {
                    // `-text` and `!text` unset an attribute: they convert nothing.
                    line.split_whitespace().skip(1).any(|attr| {
                        let name = attr.split('=').next().unwrap_or(attr);
                        CONVERTING.contains(&name)
                    })
                })
            })
        })
}

/// Records what the runner just checked out as blobs in a fresh record of the workspace at
/// `local` (kept when one exists: the workspace was taken or restored before). `repos`:
/// each repository's directory in the workspace (empty for its root) with the files of the
/// commit it checked out.
pub(crate) async fn seed(
    local: PathBuf,
    workspace: PathBuf,
    repos: Vec<(String, Vec<Listed>)>,
) -> io::Result<usize> {
    blocking(move || {
        if local.exists() {
            return Ok(0);
        }
        let mut seen = SeenFiles::new();
        for (repo, listed) in &repos {
            let dir = if repo.is_empty() {
                workspace.clone()
            } else {
                workspace.join(repo)
            };
            if converts(&dir, listed) {
                continue;
            }
            for file in listed {
                let Ok(meta) = std::fs::symlink_metadata(dir.join(&file.path)) else {
                    continue;
                };
                if !meta.is_file() || meta.len() != file.size {
                    continue;
                }
                let path = if repo.is_empty() {
                    file.path.clone()
                } else {
                    format!("{repo}/{}", file.path)
                };
                let content = Content::Blob {
                    repo: repo.clone(),
                    id: file.id.clone(),
                };
                seen.insert(path, Seen::of(&meta, content));
            }
        }
        let count = seen.len();
        let manifest = Manifest::new(Vec::new(), Vec::new(), None);
        let record = Local {
            digest: gatehouse_blobs::Digest::of(&manifest.to_json()),
            manifest,
            seen,
        };
        record.write(&local)?;
        Ok(count)
    })
    .await
}

/// The files a restore left pending beside the record at `local`; none when there is no
/// list (the common case, one `stat`).
fn pending(local: &Path) -> Vec<Pending> {
    std::fs::read(pending_path(local))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// The directories of the repositories whose files a restore left pending beside the
/// record at `local`.
pub(crate) fn pending_repos(local: &Path) -> std::collections::BTreeSet<String> {
    pending(local).into_iter().map(|p| p.repo).collect()
}

/// Writes the files a restore left pending (see [`super::Pending`]) from `mirrors` (each
/// repository's directory in the workspace → its mirror, a bare repository) and records
/// them as seen. How many it wrote. `Err`: why not; the files stay pending.
pub(crate) async fn fill_blobs(
    local: &Path,
    workspace: &Path,
    mirrors: &BTreeMap<String, PathBuf>,
) -> Result<usize, String> {
    let listed = pending(local);
    if listed.is_empty() {
        return Ok(0);
    }
    let Some(mut record) = Local::read(local) else {
        return Err("the workspace's record is missing; it is restored again".to_owned());
    };
    let mut by_repo: BTreeMap<&str, Vec<&Pending>> = BTreeMap::new();
    for pending in &listed {
        by_repo
            .entry(pending.repo.as_str())
            .or_default()
            .push(pending);
    }
    let mut written: Vec<(String, Seen)> = Vec::new();
    for (repo, files) in by_repo {
        let shown = if repo.is_empty() {
            "the workspace"
        } else {
            repo
        };
        let mirror = mirrors.get(repo).ok_or_else(|| {
            format!("the checkpoint has {} files of the repository in {shown}, but this runner has no mirror of it (storage.mirror_limit is 0, or the run does not plan it)", files.len())
        })?;
        let batch = cat_blobs(mirror, workspace, &files)
            .await
            .map_err(|e| format!("writing the files of {shown} from its mirror: {e}"))?;
        written.extend(batch);
    }
    let count = written.len();
    record.seen.extend(written);
    let local = local.to_owned();
    blocking(move || {
        record.write(&local)?;
        std::fs::remove_file(pending_path(&local))
    })
    .await
    .map_err(|e| format!("recording the workspace: {e}"))?;
    Ok(count)
}

/// Writes `files` from the mirror at `mirror` through one `git cat-file --batch`.
async fn cat_blobs(
    mirror: &Path,
    workspace: &Path,
    files: &[&Pending],
) -> io::Result<Vec<(String, Seen)>> {
    let git = Git {
        remote: "",
        auth: &Auth::None,
    };
    let mut command = git.command(mirror, None, Network::Local, &["cat-file", "--batch"]);
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("no stdin"))?;
    let ids: String = files.iter().map(|f| format!("{}\n", f.id)).collect();
    let feeding = tokio::spawn(async move {
        stdin.write_all(ids.as_bytes()).await?;
        stdin.shutdown().await
    });
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("no stdout"))?;
    let mut out = BufReader::new(stdout);
    let mut seen = Vec::with_capacity(files.len());
    let mut buffer = vec![0u8; 64 * 1024];
    for file in files {
        let mut header = String::new();
        out.read_line(&mut header).await?;
        let mut words = header.split_whitespace();
        let (id, kind, size) = (words.next(), words.next(), words.next());
        if id != Some(file.id.as_str()) || kind != Some("blob") {
            return Err(io::Error::other(format!(
                "`{}` needs blob {}, which the mirror has not ({})",
                file.path,
                file.id,
                header.trim()
            )));
        }
        let size: u64 = size.and_then(|s| s.parse().ok()).unwrap_or(u64::MAX);
        if size != file.size {
            return Err(io::Error::other(format!(
                "`{}` is recorded as {} bytes, but its blob has {size}",
                file.path, file.size
            )));
        }
        let path = workspace.join(&file.path);
        let mut target = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        let mut left = size;
        while left > 0 {
            let want = usize::try_from(left.min(buffer.len() as u64)).unwrap_or(buffer.len());
            let n = out.read(&mut buffer[..want]).await?;
            if n == 0 {
                return Err(io::Error::other("the mirror's output ended early"));
            }
            target.write_all(&buffer[..n])?;
            left -= n as u64;
        }
        let mut newline = [0u8; 1];
        out.read_exact(&mut newline).await?;
        drop(target);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(file.mode & 0o777))?;
        let meta = std::fs::symlink_metadata(&path)?;
        let content = Content::Blob {
            repo: file.repo.clone(),
            id: file.id.clone(),
        };
        seen.push((file.path.clone(), Seen::of(&meta, content)));
    }
    feeding.await.map_err(io::Error::other)??;
    let status = child.wait().await?;
    if !status.success() {
        return Err(io::Error::other(format!(
            "git cat-file ended with {status}"
        )));
    }
    Ok(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_keeps_regular_files_only() {
        let out = [
            "100644 blob aaaa 12\tsrc/a.rs",
            "100755 blob bbbb 3\tbin/run",
            "120000 blob cccc 5\tlink",
            "160000 commit dddd -\tvendor/x",
            "",
        ]
        .join("\0");
        let listed = parse_listing(&out);
        let paths: Vec<&str> = listed.iter().map(|l| l.path.as_str()).collect();
        assert_eq!(paths, ["src/a.rs", "bin/run"]);
        assert_eq!(listed[0].size, 12);
    }

    #[test]
    fn attributes_that_convert_on_checkout_are_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let listed = vec![Listed {
            path: ".gitattributes".into(),
            id: "a".repeat(40),
            size: 1,
        }];
        std::fs::write(
            dir.path().join(".gitattributes"),
            "*.png binary -text\n*.md linguist-documentation\n",
        )
        .unwrap();
        assert!(!converts(dir.path(), &listed));
        std::fs::write(dir.path().join(".gitattributes"), "*.sh text eol=lf\n").unwrap();
        assert!(converts(dir.path(), &listed));
        std::fs::write(
            dir.path().join(".gitattributes"),
            "*.psd filter=lfs diff=lfs\n",
        )
        .unwrap();
        assert!(converts(dir.path(), &listed));
    }
}
