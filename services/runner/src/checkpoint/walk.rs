//! Reading a workspace into manifest entries, on the blocking pool. A file is hashed only
//! when its size, modification time, change time or inode differ from what this runner
//! saw at the last checkpoint or restore (as git's index does), so checkpointing a large
//! unchanged repository costs a walk of `stat` calls, not a read of every byte. A file the
//! runner knows as a git blob of a repository in the workspace (checked out by the runner
//! itself, see [`super::seed`]) stays one while it holds that blob: when its `stat`
//! changed, its git id is computed with its digest, in the same read.

use std::collections::BTreeMap;
use std::fs::Metadata;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use gatehouse_blobs::Digest;
use serde::{Deserialize, Serialize};

use super::manifest::{Entry, Kind};

/// What this runner knew of a file when it last hashed or wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Seen {
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    ino: u64,
    content: Content,
}

/// What a file holds: contents packed by digest, or a git blob of a repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub(crate) enum Content {
    Packed {
        #[serde(with = "super::manifest::as_text")]
        digest: Digest,
    },
    Blob {
        /// The repository's directory in the workspace.
        repo: String,
        id: String,
    },
}

impl Seen {
    pub(crate) fn of(meta: &Metadata, content: Content) -> Self {
        Self {
            size: meta.len(),
            mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
            ctime_ns: meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
            ino: meta.ino(),
            content,
        }
    }

    fn matches(&self, meta: &Metadata) -> bool {
        let now = Self::of(meta, self.content.clone());
        now == *self
    }

    /// The manifest's kind for a file with these contents.
    fn kind(&self) -> Kind {
        match &self.content {
            Content::Packed { digest } => Kind::File {
                digest: digest.clone(),
                size: self.size,
            },
            Content::Blob { repo, id } => Kind::Blob {
                repo: repo.clone(),
                id: id.clone(),
                size: self.size,
            },
        }
    }
}

/// Files by relative path, as last seen.
pub(crate) type SeenFiles = BTreeMap<String, Seen>;

/// The workspace as entries, parents first, and each file as seen now.
pub(crate) struct Walked {
    pub entries: Vec<Entry>,
    pub seen: SeenFiles,
}

/// What a walk leaves out besides special files.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules {
    /// Whether links are taken (a workspace's) or left out with a warning (a home's).
    pub links: bool,
    /// Top-level names left out.
    pub left_out: &'static [&'static str],
}

impl Default for Rules {
    /// A workspace's: everything.
    fn default() -> Self {
        Self {
            links: true,
            left_out: &[],
        }
    }
}

/// Walks `workspace` without following links; other special files (FIFOs, sockets,
/// devices) are left out, as they cannot be restored elsewhere, and so is what `rules`
/// leave out.
pub(crate) fn walk(workspace: &Path, before: &SeenFiles, rules: Rules) -> io::Result<Walked> {
    let mut walked = Walked {
        entries: Vec::new(),
        seen: SeenFiles::new(),
    };
    std::fs::create_dir_all(workspace)?;
    walk_dir(workspace, "", before, rules, &mut walked)?;
    Ok(walked)
}

fn walk_dir(
    dir: &Path,
    prefix: &str,
    before: &SeenFiles,
    rules: Rules,
    out: &mut Walked,
) -> io::Result<()> {
    let mut names: Vec<_> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()?;
    names.sort();
    for name in names {
        let Some(name) = name.to_str() else {
            tracing::warn!(dir = %dir.display(), "a name that is not UTF-8 is left out of the checkpoint");
            continue;
        };
        if prefix.is_empty() && rules.left_out.contains(&name) {
            continue;
        }
        let path = dir.join(name);
        let relative = if prefix.is_empty() {
            name.to_owned()
        } else {
            format!("{prefix}/{name}")
        };
        let meta = std::fs::symlink_metadata(&path)?;
        let kind = meta.file_type();
        let entry = |kind| Entry {
            path: relative.clone(),
            kind,
            mode: meta.permissions().mode() & 0o7777,
            uid: meta.uid(),
            gid: meta.gid(),
        };
        if kind.is_dir() {
            out.entries.push(entry(Kind::Dir));
            walk_dir(&path, &relative, before, rules, out)?;
        } else if kind.is_symlink() && !rules.links {
            tracing::warn!(path = %relative, "a link is left out of the checkpoint of a conversation's home");
        } else if kind.is_symlink() {
            let target = std::fs::read_link(&path)?;
            let Some(target) = target.to_str() else {
                tracing::warn!(path = %relative, "a link whose target is not UTF-8 is left out of the checkpoint");
                continue;
            };
            out.entries.push(entry(Kind::Link {
                target: target.to_owned(),
            }));
        } else if kind.is_file() {
            let seen = match before.get(&relative) {
                Some(seen) if seen.matches(&meta) => seen.clone(),
                Some(Seen {
                    content: Content::Blob { repo, id },
                    ..
                }) => {
                    let (digest, git_id) = hash_file_and_blob(&path)?;
                    let content = if git_id == *id {
                        Content::Blob {
                            repo: repo.clone(),
                            id: git_id,
                        }
                    } else {
                        Content::Packed { digest }
                    };
                    Seen::of(&std::fs::symlink_metadata(&path)?, content)
                }
                _ => {
                    let digest = hash_file(&path)?;
                    // Stat again: the size read may differ from a file still being written.
                    let content = Content::Packed { digest };
                    Seen::of(&std::fs::symlink_metadata(&path)?, content)
                }
            };
            out.entries.push(entry(seen.kind()));
            out.seen.insert(relative, seen);
        }
    }
    Ok(())
}

/// The SHA-256 of a file's contents, read without following a link.
pub(crate) fn hash_file(path: &Path) -> io::Result<Digest> {
    Ok(gatehouse_blobs::hash_reader(open_no_follow(path)?)?.digest)
}

/// The SHA-256 of a file's contents and its git blob id (SHA-1 of `blob <size>\0` and the
/// contents), in one read.
pub(crate) fn hash_file_and_blob(path: &Path) -> io::Result<(Digest, String)> {
    use sha1::Digest as _;
    use std::io::Read;
    let mut file = open_no_follow(path)?;
    let size = file.metadata()?.len();
    let mut digest = gatehouse_blobs::Hasher::new();
    let mut git = sha1::Sha1::new();
    git.update(format!("blob {size}\0").as_bytes());
    let mut buffer = vec![0u8; 64 * 1024];
    let mut read = 0u64;
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        digest.update(&buffer[..n]);
        git.update(&buffer[..n]);
        read += n as u64;
    }
    // A file that grew or shrank while read has no such blob id: another stat will differ.
    let id = if read == size {
        hex(&git.finalize())
    } else {
        String::new()
    };
    Ok((digest.finish().digest, id))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Opens a regular file for reading, refusing a link in its place.
pub(crate) fn open_no_follow(path: &Path) -> io::Result<std::fs::File> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::empty())?;
    let file = std::fs::File::from(fd);
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    Ok(file)
}
