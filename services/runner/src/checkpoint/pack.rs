//! Packs: many files' contents in one blob, a tar archive whose members are named by their
//! digests. One upload per checkpoint rather than one per file keeps a repository of
//! thousands of files to a handful of object-store writes; naming members by content
//! makes a file that did not change cost nothing in the next pack.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use gatehouse_blobs::{Digest, Hasher};

use super::walk::open_no_follow;

/// A tar block: every header and every member's padded contents are made of them.
const BLOCK: u64 = 512;

/// The size [`write`] gives a pack of contents of `sizes`: a header block per member (its
/// name, a digest, fits in one), the contents padded to whole blocks, and two empty
/// blocks at the end; 0 for no contents, as no pack is written then.
pub(crate) fn size(sizes: impl IntoIterator<Item = u64>) -> u64 {
    let mut members = sizes.into_iter().peekable();
    if members.peek().is_none() {
        return 0;
    }
    members
        .map(|size| BLOCK.saturating_add(size.div_ceil(BLOCK).saturating_mul(BLOCK)))
        .fold(2 * BLOCK, u64::saturating_add)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packs_size_is_known_before_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = BTreeMap::new();
        let mut sizes = Vec::new();
        for (n, len) in [0usize, 1, 511, 512, 513, 40_000].into_iter().enumerate() {
            let path = dir.path().join(format!("f{n}"));
            // Different contents each, so each is a member of its own.
            let text = format!("{n}{}", "x".repeat(len));
            std::fs::write(&path, &text).unwrap();
            files.insert(gatehouse_blobs::Digest::of(text.as_bytes()), path);
            sizes.push(text.len() as u64);
        }
        let pack = dir.path().join("pack.tar");
        assert_eq!(write(&files, &pack).unwrap(), size(sizes));
        assert_eq!(size([]), 0);
    }
}
