//! Packs: many files' contents in one blob, a tar archive whose members are named by their
//! digests. One upload per checkpoint rather than one per file keeps a repository of
//! thousands of files to a handful of object-store writes; naming members by content
//! makes a file that did not change cost nothing in the next pack.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use gatehouse_blobs::{Digest, Hasher};

use super::walk::open_no_follow;

/// Writes the contents of `files` (digest → a file in the workspace holding it) to `pack`.
/// A file that no longer has its digest (changed after it was hashed) fails the pack.
pub(crate) fn write(files: &BTreeMap<Digest, PathBuf>, pack: &Path) -> io::Result<u64> {
    let out = std::fs::File::create(pack)?;
    let mut builder = tar::Builder::new(io::BufWriter::new(out));
    for (digest, path) in files {
        let mut file = open_no_follow(path)?;
        let size = file.metadata()?.len();
        let mut header = tar::Header::new_gnu();
        header.set_size(size);
        header.set_mode(0o600);
        header.set_entry_type(tar::EntryType::Regular);
        header.set_cksum();
        let mut checked = Checked::new(&mut file);
        builder.append_data(&mut header, digest.as_str(), &mut checked)?;
        if checked.digest() != *digest {
            return Err(io::Error::other(format!(
                "{} changed while it was being checkpointed",
                path.display()
            )));
        }
    }
    let out = builder.into_inner()?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    Ok(file.metadata()?.len())
}

/// Takes the members of `pack` named in `wanted` out into `objects/<digest>`, checking
/// each against its name; the digests taken. Anything else in the pack is skipped.
pub(crate) fn extract(
    pack: &Path,
    wanted: &BTreeSet<&Digest>,
    objects: &Path,
) -> io::Result<BTreeSet<Digest>> {
    std::fs::create_dir_all(objects)?;
    let mut archive = tar::Archive::new(io::BufReader::new(std::fs::File::open(pack)?));
    let mut taken = BTreeSet::new();
    for member in archive.entries()? {
        let mut member = member?;
        if member.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let name = member.path()?.to_string_lossy().into_owned();
        let Ok(digest) = name.parse::<Digest>() else {
            continue;
        };
        if !wanted.contains(&digest) || taken.contains(&digest) {
            continue;
        }
        let dest = objects.join(digest.as_str());
        let partial = objects.join(format!("{}.partial", digest.as_str()));
        let mut out = std::fs::File::create(&partial)?;
        let mut checked = Checked::new(&mut member);
        io::copy(&mut checked, &mut out)?;
        if checked.digest() != digest {
            std::fs::remove_file(&partial)?;
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the pack's member {} does not hold what its name says",
                    digest.as_str()
                ),
            ));
        }
        out.flush()?;
        std::fs::rename(&partial, &dest)?;
        taken.insert(digest);
    }
    Ok(taken)
}

/// A reader that hashes what passes through it.
struct Checked<R> {
    inner: R,
    hasher: Hasher,
}

impl<R: Read> Checked<R> {
    fn new(inner: R) -> Self {
        Self {
            inner,
            hasher: Hasher::new(),
        }
    }

    fn digest(self) -> Digest {
        self.hasher.finish().digest
    }
}

impl<R: Read> Read for Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}
