//! A skill's files, checked as they are added, and the bundle they pack into: the bytes
//! whose SHA-256 is the skill's content hash.

use std::collections::BTreeMap;

use super::front_matter::{FrontMatter, front_matter};
use super::{
    MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES, SKILL_FILE, SkillError, check_path,
    check_skill_name,
};

/// A skill's files, by `/`-separated path inside its folder, each checked as it was added.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillFiles {
    name: String,
    files: BTreeMap<String, Vec<u8>>,
    total: u64,
}

impl SkillFiles {
    /// An empty skill named `name` (checked).
    pub fn new(name: &str) -> Result<Self, SkillError> {
        check_skill_name(name)?;
        Ok(Self {
            name: name.to_owned(),
            ..Self::default()
        })
    }

    /// The skill's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Adds one file, refusing a bad path, a file past [`MAX_FILE_BYTES`], a skill past
    /// [`MAX_TOTAL_BYTES`] or [`MAX_FILES`].
    pub fn add(&mut self, path: &str, bytes: Vec<u8>) -> Result<(), SkillError> {
        check_path(&self.name, path)?;
        self.check_size(path, bytes.len() as u64)?;
        if self.files.len() >= MAX_FILES {
            return Err(SkillError::TooManyFiles {
                name: self.name.clone(),
            });
        }
        self.total += bytes.len() as u64;
        self.files.insert(path.to_owned(), bytes);
        Ok(())
    }

    /// Refuses a file of `size` bytes before it is read: past [`MAX_FILE_BYTES`], or
    /// taking the skill past [`MAX_TOTAL_BYTES`].
    pub fn check_size(&self, path: &str, size: u64) -> Result<(), SkillError> {
        if size > MAX_FILE_BYTES {
            return Err(SkillError::FileTooLarge {
                name: self.name.clone(),
                path: path.to_owned(),
                size,
            });
        }
        if self.total.saturating_add(size) > MAX_TOTAL_BYTES {
            return Err(SkillError::TooLarge {
                name: self.name.clone(),
            });
        }
        Ok(())
    }

    /// The files, sorted by path.
    pub fn files(&self) -> &BTreeMap<String, Vec<u8>> {
        &self.files
    }

    /// Checks the whole: `SKILL.md` at the top, its front matter with a `name` equal to the
    /// skill's and a `description`. Returns the front matter.
    pub fn check(&self) -> Result<FrontMatter, SkillError> {
        let Some(text) = self.files.get(SKILL_FILE) else {
            return Err(SkillError::NoSkillFile {
                name: self.name.clone(),
            });
        };
        let front = front_matter(&self.name, text)?;
        if front.name != self.name {
            return Err(SkillError::NameMismatch {
                name: self.name.clone(),
                given: front.name,
            });
        }
        Ok(front)
    }

    /// The bundle: a header, then each file in path order as its path's length (4 bytes),
    /// the path, its length (8 bytes), its bytes. Its SHA-256 is the skill's content hash:
    /// a digest over the sorted (path, bytes) pairs, and the blob it is stored as.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.total as usize + 64 * self.files.len() + 32);
        out.extend_from_slice(BUNDLE_MAGIC);
        for (path, bytes) in &self.files {
            out.extend_from_slice(&(path.len() as u32).to_be_bytes());
            out.extend_from_slice(path.as_bytes());
            out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
            out.extend_from_slice(bytes);
        }
        out
    }

    /// A bundle read back (from the blob store, which checked its digest), every path and
    /// size checked again and the whole checked as [`SkillFiles::check`] does.
    pub fn decode(name: &str, mut bundle: &[u8]) -> Result<Self, SkillError> {
        let malformed = |problem| SkillError::Bundle {
            name: name.to_owned(),
            problem,
        };
        let mut skill = Self::new(name)?;
        bundle = bundle
            .strip_prefix(BUNDLE_MAGIC)
            .ok_or_else(|| malformed("no header"))?;
        let mut last: Option<String> = None;
        while !bundle.is_empty() {
            let (len, rest) = take::<4>(bundle).ok_or_else(|| malformed("cut short"))?;
            let len = u32::from_be_bytes(len) as usize;
            let path = rest.get(..len).ok_or_else(|| malformed("cut short"))?;
            let path = std::str::from_utf8(path).map_err(|_| malformed("a path is not UTF-8"))?;
            let (size, rest) = take::<8>(&rest[len..]).ok_or_else(|| malformed("cut short"))?;
            let size = u64::from_be_bytes(size);
            skill.check_size(path, size)?;
            let size = size as usize;
            let bytes = rest.get(..size).ok_or_else(|| malformed("cut short"))?;
            if last.as_deref().is_some_and(|l| l >= path) {
                return Err(malformed("paths out of order"));
            }
            skill.add(path, bytes.to_vec())?;
            last = Some(path.to_owned());
            bundle = &rest[size..];
        }
        skill.check()?;
        Ok(skill)
    }
}

const BUNDLE_MAGIC: &[u8] = b"gatehouse-skill-1\n";

fn take<const N: usize>(bytes: &[u8]) -> Option<([u8; N], &[u8])> {
    let head: [u8; N] = bytes.get(..N)?.try_into().ok()?;
    Some((head, &bytes[N..]))
}
