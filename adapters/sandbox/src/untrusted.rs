//! Reading what a node wrote: artifacts, and the copies of them that later nodes get.
//!
//! Anything a node wrote is untrusted, and it is read by Gatehouse's own processes (the
//! runner collecting artifacts and copying inputs, the notifier excerpting them for cards),
//! on the host, with the host's view of the filesystem and the reader's own `/proc/self`.
//! A link a node left behind would be followed *there*: `report.md -> /proc/self/environ`
//! hands the reader's environment (its tokens) to whoever reads the artifact. So every read
//! of such a file goes through [`open`], which:
//!
//! - takes a name of plain components only (no empty, `.` or `..` component, no leading
//!   `/`, no NUL): a name can only go down from the directory it is resolved in;
//! - opens each component itself, relative to the one before (`openat`), with `O_NOFOLLOW`
//!   (and `O_DIRECTORY` on the way), so a symbolic link is refused wherever it is — the
//!   file itself or any directory on the way to it. Only `base`, the caller's own directory
//!   (the data directory an operator configured), is opened as a path;
//! - accepts regular files only: it looks at each entry without following it before opening
//!   it, opens with `O_NONBLOCK | O_NOCTTY` (a FIFO swapped in meanwhile does not block the
//!   reader), and checks the open descriptor with `fstat`: directories, FIFOs, sockets and
//!   devices are refused;
//! - refuses a file with more than one name (`st_nlink > 1`), see below;
//! - checks the size from `fstat` before reading, and reads at most the limit (plus one
//!   byte, to tell), so a file still growing after the check cannot get past it.
//!
//! Hard links are the case links checks cannot see: a hard link *is* a regular file, the
//! same inode as its other name. The process sandbox cannot stop a node from making one (it
//! runs as the runner's user, on the runner's filesystem; then again it can read anything
//! the runner can), and Docker sandboxes cannot make one to a host file outside their mounts
//! (`link(2)` does not cross mounts, and the artifact directory is a mount of its own). What
//! is checked here is the link count: a file that still has another name when it is read
//! is refused, because that other name may be a file outside the artifact directory, and
//! because the stored artifact could change through it afterwards. A file whose other name
//! was removed before the read is the node's own file, and is read as such.
//!
//! Why a walk of `openat` calls and not `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`:
//! for names of plain components the walk gives the same guarantee, and it works on every
//! kernel and under seccomp profiles and gVisor that refuse `openat2` — one path, always the
//! one that is tested.

use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// Why a file a node wrote was not read. Its text names the file as given to [`open`].
#[derive(Debug, thiserror::Error)]
#[error("artifact `{name}` {problem}")]
pub struct Refused {
    /// The name as given (relative to the directory it was looked up in).
    pub name: String,
    pub problem: Problem,
}

/// What is wrong with a file a node wrote.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    /// Nothing by that name.
    #[error("does not exist")]
    Missing,
    /// Not a relative path of plain components.
    #[error(
        "is not a relative path of plain names (no empty, `.` or `..` component, no leading `/`, no NUL)"
    )]
    BadName,
    /// The file is a symbolic link.
    #[error("is a symbolic link; artifacts must be regular files inside the artifact directory")]
    Link,
    /// A directory on the way to the file is a symbolic link.
    #[error(
        "is under a symbolic link (`{0}`); artifacts must be regular files inside the artifact directory"
    )]
    LinkOnTheWay(String),
    /// A directory on the way to the file is something else.
    #[error("is under `{0}`, which is not a directory")]
    NotUnderADirectory(String),
    /// A directory, FIFO, socket or device.
    #[error("is {0}; artifacts must be regular files inside the artifact directory")]
    NotRegular(&'static str),
    /// Hard-linked: it has other names, possibly outside the artifact directory.
    #[error(
        "has {0} names (hard links); artifacts must be regular files of their own inside the artifact directory"
    )]
    HardLinked(u64),
    /// Bigger than allowed, seen before reading.
    #[error("is {}, over the {} limit", iec(*.size), iec(*.limit))]
    TooLarge { size: u64, limit: u64 },
    /// It grew past the limit while being read.
    #[error("grew past the {} limit while it was read", iec(*.0))]
    Grew(u64),
    /// Reading failed.
    #[error("could not be read: {0}")]
    Io(#[from] std::io::Error),
}

/// A regular file a node wrote, opened without following links.
#[derive(Debug)]
pub struct Untrusted {
    name: String,
    file: File,
    size: u64,
}

/// Opens `name` (plain components separated by `/`) under the directory `base`, following
/// no link below `base`; regular files with a single name only.
pub fn open(base: &Path, name: &str) -> Result<Untrusted, Refused> {
    open_in(base, "", name)
}

/// Opens `name` in `dir` under `base`: as [`open`] does `dir/name`, with `dir` (plain
/// components too, or empty) walked the same way; a refusal names `name`, and a link on
/// the way by its path (in `dir`, or in `name`).
pub fn open_in(base: &Path, dir: &str, name: &str) -> Result<Untrusted, Refused> {
    let refused = |problem| Refused {
        name: name.to_owned(),
        problem,
    };
    let plain = |path: &str| {
        path.split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains('\0'))
    };
    if !plain(name) || !(dir.is_empty() || plain(dir)) {
        return Err(refused(Problem::BadName));
    }
    // Each directory on the way, with the path it is shown by.
    let mut on_the_way: Vec<(&str, String)> = Vec::new();
    for path in [dir, name] {
        let components: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        for (i, component) in components.iter().enumerate() {
            on_the_way.push((component, components[..=i].join("/")));
        }
    }
    let Some((last, _)) = on_the_way.pop() else {
        return Err(refused(Problem::BadName));
    };
    let flags = OFlags::RDONLY | OFlags::CLOEXEC;
    let mut at = rustix::fs::open(base, flags | OFlags::DIRECTORY, Mode::empty())
        .map_err(|e| refused(Problem::Io(e.into())))?;
    for (component, shown) in on_the_way {
        match kind(&at, component) {
            Ok(FileType::Directory) => {}
            Ok(FileType::Symlink) => return Err(refused(Problem::LinkOnTheWay(shown))),
            Ok(_) => return Err(refused(Problem::NotUnderADirectory(shown))),
            Err(problem) => return Err(refused(problem)),
        }
        let nofollow = flags | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::NONBLOCK;
        at = rustix::fs::openat(&at, component, nofollow, Mode::empty()).map_err(|e| {
            refused(match e {
                Errno::LOOP => Problem::LinkOnTheWay(shown.clone()),
                Errno::NOTDIR => Problem::NotUnderADirectory(shown.clone()),
                e => opening(e),
            })
        })?;
    }
    match kind(&at, last) {
        Ok(FileType::RegularFile) => {}
        Ok(FileType::Symlink) => return Err(refused(Problem::Link)),
        Ok(other) => return Err(refused(Problem::NotRegular(described(other)))),
        Err(problem) => return Err(refused(problem)),
    }
    let nofollow = flags | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    let fd: OwnedFd = rustix::fs::openat(&at, last, nofollow, Mode::empty()).map_err(|e| {
        refused(match e {
            Errno::LOOP => Problem::Link,
            e => opening(e),
        })
    })?;
    let file = File::from(fd);
    // The descriptor decides: whatever was looked at before, this is what would be read.
    let meta = file.metadata().map_err(|e| refused(Problem::Io(e)))?;
    let opened = FileType::from_raw_mode(std::os::unix::fs::MetadataExt::mode(&meta));
    if opened != FileType::RegularFile {
        return Err(refused(Problem::NotRegular(described(opened))));
    }
    let links = std::os::unix::fs::MetadataExt::nlink(&meta);
    if links > 1 {
        return Err(refused(Problem::HardLinked(links)));
    }
    Ok(Untrusted {
        name: name.to_owned(),
        file,
        size: meta.len(),
    })
}

/// The whole of `name` in `dir` under `base` ([`open_in`]), refused (unread) when it is over
/// `limit` bytes.
pub fn read_in(base: &Path, dir: &str, name: &str, limit: u64) -> Result<Vec<u8>, Refused> {
    open_in(base, dir, name)?.read_all(limit)
}

/// The whole of `name` under `base`, refused (unread) when it is over `limit` bytes.
pub fn read(base: &Path, name: &str, limit: u64) -> Result<Vec<u8>, Refused> {
    open(base, name)?.read_all(limit)
}

impl Untrusted {
    /// Its size when it was opened.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// All of it, refused before reading when it is over `limit` bytes and while reading
    /// when it grows past them.
    pub fn read_all(self, limit: u64) -> Result<Vec<u8>, Refused> {
        if self.size > limit {
            let size = self.size;
            return Err(self.refused(Problem::TooLarge { size, limit }));
        }
        let bytes = self.read_start(limit.saturating_add(1))?;
        if bytes.len() as u64 > limit {
            return Err(self.refused(Problem::Grew(limit)));
        }
        Ok(bytes)
    }

    /// Up to its first `max` bytes, whatever its size.
    pub fn read_start(&self, max: u64) -> Result<Vec<u8>, Refused> {
        let capacity = usize::try_from(self.size.min(max)).unwrap_or(0);
        let mut bytes = Vec::with_capacity(capacity);
        (&self.file)
            .take(max)
            .read_to_end(&mut bytes)
            .map_err(|e| self.refused(Problem::Io(e)))?;
        Ok(bytes)
    }

    fn refused(&self, problem: Problem) -> Refused {
        Refused {
            name: self.name.clone(),
            problem,
        }
    }
}

/// What `name` in `dir` is, without following it.
fn kind(dir: &OwnedFd, name: &str) -> Result<FileType, Problem> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(FileType::from_raw_mode(stat.st_mode)),
        Err(e) => Err(opening(e)),
    }
}

fn opening(e: Errno) -> Problem {
    if e == Errno::NOENT {
        Problem::Missing
    } else {
        Problem::Io(e.into())
    }
}

fn iec(bytes: u64) -> String {
    bytesize::ByteSize::b(bytes).display().iec().to_string()
}

fn described(kind: FileType) -> &'static str {
    match kind {
        FileType::Directory => "a directory",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        FileType::Symlink => "a symbolic link",
        _ => "not a regular file",
    }
}
