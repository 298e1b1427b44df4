//! The filesystem moves both backends share: opening a stored blob without following a
//! link, and writing a file so that it appears under its name whole or not at all.
//!
//! Every file is written under a temporary name in its final directory (or the store's
//! `tmp/`, on the same filesystem), fsynced, then renamed into place and its directory
//! fsynced: a crash or a failed check never leaves half a file under the real name, and a
//! reader never sees one being written. A [`Staged`] file that is dropped before it is
//! committed removes itself.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::Blob;
use crate::digest::{BUFFER, Hasher};

/// Mode of the files inside the local store: artifacts may hold anything a node saw.
pub(crate) const PRIVATE: u32 = 0o600;
/// Mode of a file written for a caller ([`crate::BlobStore::get_to_file`]), before the
/// umask: what `File::create` would give.
pub(crate) const ORDINARY: u32 = 0o666;

/// Why a stored blob could not be opened.
pub(crate) enum OpenFailure {
    /// Nothing under that name.
    Missing,
    /// Something that is not a regular file: never read.
    NotRegular(&'static str),
    Io(io::Error),
}

/// Opens the regular file at `path` for reading, without following a symbolic link at
/// `path` itself (`O_NOFOLLOW`) and without blocking on a FIFO (`O_NONBLOCK`, which does
/// nothing to a regular file); the open descriptor is checked to be a regular file.
/// Returns it with its size at open.
///
/// Directories above `path` are followed: they are the store's own, and whatever a link
/// among them led to would still have to hash to the digest it is read as.
pub(crate) fn open_regular(path: &Path) -> Result<(File, u64), OpenFailure> {
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK;
    let fd =
        rustix::fs::open(path, flags | OFlags::NOCTTY, Mode::empty()).map_err(|e| match e {
            Errno::NOENT => OpenFailure::Missing,
            Errno::LOOP => OpenFailure::NotRegular("it is a symbolic link"),
            e => OpenFailure::Io(e.into()),
        })?;
    let file = File::from(fd);
    let meta = file.metadata().map_err(OpenFailure::Io)?;
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok((file, meta.len()));
    }
    Err(OpenFailure::NotRegular(if kind.is_dir() {
        "it is a directory"
    } else if kind.is_fifo() {
        "it is a FIFO"
    } else if kind.is_socket() {
        "it is a socket"
    } else {
        "it is a device or other special file"
    }))
}

/// A file being written under a temporary name, removed if dropped uncommitted.
pub(crate) struct Staged {
    path: PathBuf,
    file: File,
    committed: bool,
}

impl Staged {
    /// A new, empty file in `dir` named `.<hint>.<unique>.part`.
    pub(crate) fn create_in(dir: &Path, hint: &str, mode: u32) -> io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        loop {
            let unique = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!(".{hint}.{}-{unique}.part", std::process::id()));
            let opened = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .custom_flags(nofollow_flag())
                .open(&path);
            match opened {
                Ok(file) => {
                    return Ok(Self {
                        path,
                        file,
                        committed: false,
                    });
                }
                // Left by an earlier process with the same id: take the next number.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// A new file beside `dest`, to become `dest`.
    pub(crate) fn beside(dest: &Path, mode: u32) -> io::Result<Self> {
        let name = dest
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
        Self::create_in(parent(dest), &name.to_string_lossy(), mode)
    }

    /// The open file, for writing.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// Makes the contents durable and gives them the name `dest` (replacing what was
    /// there, a symbolic link itself and not what it pointed to), durably.
    pub(crate) fn commit(mut self, dest: &Path) -> io::Result<()> {
        self.file.sync_all()?;
        std::fs::rename(&self.path, dest)?;
        self.committed = true;
        sync_dir(parent(dest))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            // Nothing better to do with a failure here: the file is under a temporary name.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// `O_NOFOLLOW` for `OpenOptionsExt::custom_flags`: a temporary name is never created
/// through a link planted in its place (with `O_CREAT | O_EXCL` it would fail anyway).
fn nofollow_flag() -> i32 {
    // Flag bits are small positive numbers on every target; the cast cannot truncate.
    OFlags::NOFOLLOW.bits() as i32
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Makes a rename in `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Copies at most `max` bytes of `from` into `to`, hashing them, in pieces.
pub(crate) fn copy_hashing(from: impl Read, mut to: impl Write, max: u64) -> io::Result<Blob> {
    let mut from = from.take(max);
    let mut hasher = Hasher::new();
    let mut buffer = vec![0u8; BUFFER];
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buffer[..n]);
        to.write_all(&buffer[..n])?;
    }
    to.flush()?;
    Ok(hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_file_vanishes_unless_committed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dest = dir.path().join("out.txt");
        let staged = Staged::beside(&dest, ORDINARY).expect("stage");
        staged.file().write_all(b"half").expect("write");
        drop(staged);
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);

        let staged = Staged::beside(&dest, ORDINARY).expect("stage");
        staged.file().write_all(b"whole").expect("write");
        staged.commit(&dest).expect("commit");
        assert_eq!(std::fs::read(&dest).expect("read"), b"whole");
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 1);
    }

    #[test]
    fn opens_regular_files_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("file");
        std::fs::write(&file, b"data").expect("write");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).expect("symlink");
        assert!(matches!(open_regular(&file), Ok((_, 4))));
        assert!(matches!(
            open_regular(&link),
            Err(OpenFailure::NotRegular(_))
        ));
        assert!(matches!(
            open_regular(dir.path()),
            Err(OpenFailure::NotRegular(_))
        ));
        assert!(matches!(
            open_regular(&dir.path().join("none")),
            Err(OpenFailure::Missing)
        ));
    }
}
