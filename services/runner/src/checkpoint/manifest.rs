//! What a checkpoint records: every entry of the workspace (directories, files by content
//! digest, symbolic links by target) with its mode and owner, the packs holding the files'
//! contents, and the record of the checkouts kept beside the workspace. A file still as
//! its repository's checkout wrote it is recorded by its git blob id instead of packed: a
//! runner restores it from its own mirror of that repository, so a checkpoint of a large
//! repository costs what changed in it, not the repository.
//!
//! A manifest is read back on another runner, so it is checked before anything is made of
//! it: every path is relative and plain (no `..`, no empty or `.` parts), entries come
//! parents first, and nothing lies below a link or a file — restoring never writes
//! through a link or outside the workspace. What it restores is no more trusted than what
//! it checks: modes lose their setuid, setgid and sticky bits, owners are not restored,
//! no pack is fetched past the size recorded for it ([`super::restore`]), and the
//! checkouts record is held to the plan of the run or conversation whenever it is read
//! ([`crate::deliver::checkouts::load`]).

use std::collections::{BTreeMap, BTreeSet};

use gatehouse_blobs::Digest;
use serde::{Deserialize, Serialize};

/// The format this runner writes; it reads this one and the one before (no blob entries).
const VERSION: u32 = 2;

/// A checkpoint of a workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    pub version: u32,
    /// Parents before children, in the order a walk found them.
    pub entries: Vec<Entry>,
    /// Tar archives whose members, named by digest, hold the files' contents. Earlier
    /// checkpoints' packs are kept while they hold enough of what is still there, so an
    /// unchanged file is uploaded once (see [`super::Checkpoints::take`]).
    pub packs: Vec<Pack>,
    /// The checkouts record kept beside the workspace, when the repositories were cloned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkouts: Option<String>,
}

/// One entry below the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// Relative, `/`-separated.
    pub path: String,
    #[serde(flatten)]
    pub kind: Kind,
    /// Permission bits; restored without setuid, setgid and sticky.
    pub mode: u32,
    /// The owner as taken: recorded, never restored.
    pub uid: u32,
    pub gid: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Kind {
    Dir,
    File {
        #[serde(with = "as_text")]
        digest: Digest,
        size: u64,
    },
    Link {
        target: String,
    },
    /// A file holding blob `id` of the repository checked out at `repo` (relative to the
    /// workspace, empty for its root), restored from this runner's mirror of it.
    Blob {
        repo: String,
        id: String,
        size: u64,
    },
}

/// A pack and its size, for deciding when to repack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pack {
    #[serde(with = "as_text")]
    pub digest: Digest,
    pub size: u64,
}

impl Manifest {
    pub(crate) fn new(entries: Vec<Entry>, packs: Vec<Pack>, checkouts: Option<String>) -> Self {
        Self {
            version: VERSION,
            entries,
            packs,
            checkouts,
        }
    }

    /// Reads and checks a manifest (see the module's rules).
    pub(crate) fn parse(bytes: &[u8]) -> Result<Self, String> {
        let manifest: Self = serde_json::from_slice(bytes)
            .map_err(|e| format!("the manifest does not read: {e}"))?;
        if !(1..=VERSION).contains(&manifest.version) {
            return Err(format!(
                "the manifest is of format {}, this runner reads {VERSION}",
                manifest.version
            ));
        }
        let mut dirs = BTreeSet::new();
        let mut seen = BTreeSet::new();
        for entry in &manifest.entries {
            check_path(&entry.path)?;
            if let Some((parent, _)) = entry.path.rsplit_once('/')
                && !dirs.contains(parent)
            {
                return Err(format!(
                    "`{}` comes before its directory, or lies below something that is not one",
                    entry.path
                ));
            }
            if !seen.insert(entry.path.as_str()) {
                return Err(format!("`{}` is recorded twice", entry.path));
            }
            if let Kind::Blob { repo, id, .. } = &entry.kind {
                check_blob(&entry.path, repo, id)?;
            }
            if entry.kind == Kind::Dir {
                dirs.insert(entry.path.as_str());
            }
        }
        Ok(manifest)
    }

    pub(crate) fn to_json(&self) -> Vec<u8> {
        // A manifest is plain data: it always serialises.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The files' sizes as recorded, each path counted (the same contents at two paths
    /// twice): what a restore writes.
    pub(crate) fn file_sizes(&self) -> u64 {
        self.entries
            .iter()
            .filter_map(|e| match &e.kind {
                Kind::File { size, .. } | Kind::Blob { size, .. } => Some(*size),
                _ => None,
            })
            .fold(0, u64::saturating_add)
    }

    /// What the files recorded by their git blob id hold together.
    pub(crate) fn blob_sizes(&self) -> u64 {
        self.entries
            .iter()
            .filter_map(|e| match &e.kind {
                Kind::Blob { size, .. } => Some(*size),
                _ => None,
            })
            .fold(0, u64::saturating_add)
    }

    /// Whether any file is recorded by its git blob id.
    #[cfg(test)]
    pub(crate) fn has_blobs(&self) -> bool {
        self.entries
            .iter()
            .any(|e| matches!(e.kind, Kind::Blob { .. }))
    }

    /// Each file's content digest and size.
    pub(crate) fn contents(&self) -> BTreeMap<&Digest, u64> {
        self.entries
            .iter()
            .filter_map(|e| match &e.kind {
                Kind::File { digest, size } => Some((digest, *size)),
                _ => None,
            })
            .collect()
    }
}

/// A digest as its hex text, parsed (and so checked) when read.
pub(crate) mod as_text {
    use gatehouse_blobs::Digest;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(digest: &Digest, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(digest.as_str())
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Digest, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A blob entry names a git object id (40 or 64 lower-case hex digits) of a repository
/// at a plain path (or the root) that holds the entry.
fn check_blob(path: &str, repo: &str, id: &str) -> Result<(), String> {
    let hex = (id.len() == 40 || id.len() == 64)
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !hex {
        return Err(format!("`{path}` names `{id}`, which is no git object id"));
    }
    if !repo.is_empty() {
        check_path(repo)?;
        let inside = path
            .strip_prefix(repo)
            .is_some_and(|rest| rest.starts_with('/'));
        if !inside {
            return Err(format!("`{path}` is not in the repository at `{repo}`"));
        }
    }
    Ok(())
}

/// A plain relative path: no leading `/`, no empty, `.` or `..` part, no NUL.
fn check_path(path: &str) -> Result<(), String> {
    let plain = !path.is_empty()
        && !path.contains('\0')
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..");
    if plain {
        Ok(())
    } else {
        Err(format!("`{path}` is not a plain relative path"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, kind: Kind) -> Entry {
        Entry {
            path: path.into(),
            kind,
            mode: 0o644,
            uid: 0,
            gid: 0,
        }
    }

    fn digest() -> Digest {
        "0".repeat(64).parse().unwrap()
    }

    fn parsed(entries: Vec<Entry>) -> Result<Manifest, String> {
        Manifest::parse(&Manifest::new(entries, Vec::new(), None).to_json())
    }

    #[test]
    fn a_manifest_reads_back_as_written() {
        let file = Kind::File {
            digest: digest(),
            size: 3,
        };
        let entries = vec![
            entry("src", Kind::Dir),
            entry("src/a.rs", file),
            entry(
                "link",
                Kind::Link {
                    target: "../outside".into(),
                },
            ),
        ];
        let manifest = parsed(entries.clone()).unwrap();
        assert_eq!(manifest.entries, entries);
        assert_eq!(manifest.contents().len(), 1);
    }

    #[test]
    fn paths_that_reach_out_or_go_through_links_are_refused() {
        let file = || Kind::File {
            digest: digest(),
            size: 1,
        };
        for path in ["/etc/passwd", "../x", "a/../../x", "", "a//b", "./a"] {
            assert!(parsed(vec![entry(path, file())]).is_err(), "{path}");
        }
        let through_link = vec![
            entry(
                "l",
                Kind::Link {
                    target: "/etc".into(),
                },
            ),
            entry("l/passwd", file()),
        ];
        assert!(parsed(through_link).unwrap_err().contains("l/passwd"));
        let below_file = vec![entry("f", file()), entry("f/x", file())];
        assert!(parsed(below_file).is_err());
        let child_first = vec![entry("d/x", file()), entry("d", Kind::Dir)];
        assert!(parsed(child_first).is_err());
        let twice = vec![entry("a", file()), entry("a", file())];
        assert!(parsed(twice).is_err());
    }

    #[test]
    fn blobs_name_object_ids_of_a_repository_holding_them() {
        let blob = |repo: &str, id: &str| Kind::Blob {
            repo: repo.into(),
            id: id.into(),
            size: 1,
        };
        let id = "a".repeat(40);
        let ok = vec![
            entry("api", Kind::Dir),
            entry("api/a.rs", blob("api", &id)),
            entry("b.rs", blob("", &id)),
        ];
        let manifest = parsed(ok).unwrap();
        assert!(manifest.has_blobs());
        assert_eq!(manifest.file_sizes(), 2);
        assert!(
            manifest.contents().is_empty(),
            "nothing of a blob is packed"
        );
        for (path, repo, id) in [
            ("a.rs", "", "../../etc/passwd"),
            ("a.rs", "", "A".repeat(40).as_str()),
            ("a.rs", "web", id.as_str()),
            ("a.rs", "..", id.as_str()),
        ] {
            let entries = vec![entry(path, blob(repo, id))];
            assert!(parsed(entries).is_err(), "{path} {repo} {id}");
        }
    }

    #[test]
    fn digests_must_be_digests() {
        let json = br#"{"version":1,"entries":[{"path":"a","kind":"file","digest":"../../x","size":1,"mode":420,"uid":0,"gid":0}],"packs":[]}"#;
        assert!(Manifest::parse(json).is_err());
    }
}
