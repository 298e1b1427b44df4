//! Skills: folders holding a `SKILL.md` (YAML front matter with `name` and `description`,
//! then instructions) and perhaps more files, the Agent Skills format Claude Code, Codex and
//! others read. This module holds what needs no I/O: where a skill comes from
//! (`[skills.NAME]`), its name's rules, the front matter, the checks on every path and size
//! of a folder's contents (all of it is untrusted: a repository's or a directory's), and
//! the bundle a folder is packed into — one byte string whose SHA-256 is the skill's
//! content hash, frozen with the run and stored content-addressed in the blob store.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The file every skill folder must have.
pub const SKILL_FILE: &str = "SKILL.md";
/// The largest file a skill may hold: skills are instructions and small scripts.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// The most one skill may hold in all.
pub const MAX_TOTAL_BYTES: u64 = 10 * 1024 * 1024;
/// The most files one skill may hold.
pub const MAX_FILES: usize = 512;
/// The deepest a file may sit below the skill's folder.
pub const MAX_DEPTH: usize = 8;
/// The longest skill name, as the Agent Skills format allows.
pub const MAX_NAME_LEN: usize = 64;
/// The longest path of a file inside a skill.
pub const MAX_PATH_LEN: usize = 512;
/// The longest `description` a skill's front matter may give.
pub const MAX_DESCRIPTION_LEN: usize = 1024;

/// Where a repository's own skills live, in each checked-out repository of a run.
pub const REPOSITORY_SKILLS_DIR: &str = ".gatehouse/skills";

/// `[skills.NAME]` as the configuration writes it: exactly one of `path` and `git`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillConfig {
    /// A folder on the runner's host; a relative one is read against the configuration
    /// file's folder when the configuration loads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A git repository's URL (`https://...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<String>,
    /// With `git`: the commit, as 40 hex digits. A branch or tag moves; a pin does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    /// With `git`: the skill's folder inside the repository; its root when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdir: Option<String>,
}

/// Where a skill's files come from, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum SkillSource {
    /// A folder on the runner's host (absolute once the configuration has loaded).
    Path { path: String },
    /// A folder of a git repository at a commit.
    Git {
        url: String,
        rev: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subdir: Option<String>,
    },
    /// `.gatehouse/skills/<name>/` of a repository the run checked out.
    Repository { repo: String },
}

impl SkillSource {
    /// As the run page and `run show` name it.
    pub fn describe(&self) -> String {
        match self {
            Self::Path { path } => format!("directory {path}"),
            Self::Git { url, rev, subdir } => {
                let short = rev.get(..12).unwrap_or(rev);
                match subdir {
                    Some(dir) => format!("git {url} @ {short} ({dir})"),
                    None => format!("git {url} @ {short}"),
                }
            }
            Self::Repository { repo } => format!("repository {repo} ({REPOSITORY_SKILLS_DIR})"),
        }
    }
}

/// Why a skill's configuration or contents are refused; each message says what to change.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SkillError {
    #[error(
        "skill name {name:?} is not 1 to {MAX_NAME_LEN} lowercase letters, digits and `-` \
         (not starting or ending with `-`)"
    )]
    BadName { name: String },
    #[error("skill {name}: give `path` (a folder) or `git` with `rev` (a commit), not both")]
    PathAndGit { name: String },
    #[error("skill {name}: give `path` (a folder) or `git` with `rev` (a commit)")]
    NoSource { name: String },
    #[error("skill {name}: `rev` and `subdir` belong with `git`; remove them or add `git`")]
    RevWithoutGit { name: String },
    #[error(
        "skill {name}: `git` needs `rev`, the commit to pin as 40 hex digits (a branch or tag \
         moves, so it is not accepted)"
    )]
    NoRev { name: String },
    #[error(
        "skill {name}: rev {rev:?} is not a commit; pin the skill to a commit's 40 hex digits \
         (`git rev-parse {rev}`)"
    )]
    RevNotCommit { name: String, rev: String },
    #[error("skill {name}: git URL {url:?} must start with https:// (or file:// for a local copy)")]
    BadUrl { name: String, url: String },
    #[error("skill {name}: `path` is empty")]
    EmptyPath { name: String },
    #[error("skill {name}: {path} {problem}")]
    BadPath {
        name: String,
        path: String,
        problem: &'static str,
    },
    #[error("skill {name}: {path} is a symbolic link; skills may hold only files and folders")]
    Symlink { name: String, path: String },
    #[error(
        "skill {name}: {path} is neither a file nor a folder; skills may hold only files and \
         folders"
    )]
    Special { name: String, path: String },
    #[error("skill {name}: {path} is {size} bytes; a skill's file may be at most {MAX_FILE_BYTES}")]
    FileTooLarge {
        name: String,
        path: String,
        size: u64,
    },
    #[error("skill {name}: its files come to more than {MAX_TOTAL_BYTES} bytes")]
    TooLarge { name: String },
    #[error("skill {name}: more than {MAX_FILES} files")]
    TooManyFiles { name: String },
    #[error("skill {name}: {path} is more than {MAX_DEPTH} folders deep")]
    TooDeep { name: String, path: String },
    #[error("skill {name}: no {SKILL_FILE} at the top of its folder")]
    NoSkillFile { name: String },
    #[error("skill {name}: {SKILL_FILE} {problem}")]
    FrontMatter { name: String, problem: String },
    #[error(
        "skill {name}: {SKILL_FILE} names it {given:?}; the front matter's `name` must be the \
         skill's name ({name})"
    )]
    NameMismatch { name: String, given: String },
    #[error("skill {name}: the stored bundle is malformed ({problem})")]
    Bundle { name: String, problem: &'static str },
}

/// Checks a skill's name: 1 to [`MAX_NAME_LEN`] of `a-z`, `0-9` and `-`, not starting or
/// ending with `-` — the Agent Skills rule, and a safe folder name in every sandbox.
pub fn check_skill_name(name: &str) -> Result<(), SkillError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && !name.starts_with('-')
        && !name.ends_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(SkillError::BadName {
            name: name.to_owned(),
        })
    }
}

impl SkillConfig {
    /// The source this configuration names, or why it names none: both `path` and `git`,
    /// neither, a `git` without a commit `rev`.
    pub fn source(&self, name: &str) -> Result<SkillSource, SkillError> {
        check_skill_name(name)?;
        let name = name.to_owned();
        match (&self.path, &self.git) {
            (Some(_), Some(_)) => Err(SkillError::PathAndGit { name }),
            (None, None) => Err(SkillError::NoSource { name }),
            (Some(path), None) => {
                if self.rev.is_some() || self.subdir.is_some() {
                    return Err(SkillError::RevWithoutGit { name });
                }
                if path.trim().is_empty() || path.contains('\0') {
                    return Err(SkillError::EmptyPath { name });
                }
                Ok(SkillSource::Path { path: path.clone() })
            }
            (None, Some(url)) => {
                if !(url.starts_with("https://") || url.starts_with("file://"))
                    || url.contains(char::is_whitespace)
                    || url.contains('\0')
                {
                    return Err(SkillError::BadUrl {
                        name,
                        url: url.clone(),
                    });
                }
                let Some(rev) = &self.rev else {
                    return Err(SkillError::NoRev { name });
                };
                if rev.len() != 40 || !rev.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(SkillError::RevNotCommit {
                        name,
                        rev: rev.clone(),
                    });
                }
                let subdir = match self.subdir.as_deref() {
                    None | Some("") | Some(".") => None,
                    Some(dir) => {
                        check_path(&name, dir.trim_end_matches('/'))?;
                        Some(dir.trim_end_matches('/').to_owned())
                    }
                };
                Ok(SkillSource::Git {
                    url: url.clone(),
                    rev: rev.to_ascii_lowercase(),
                    subdir,
                })
            }
        }
    }
}

/// Checks one `/`-separated path inside a skill: relative, no `.`, `..` or empty part, no
/// backslash or NUL, at most [`MAX_PATH_LEN`] bytes and [`MAX_DEPTH`] folders deep.
pub fn check_path(name: &str, path: &str) -> Result<(), SkillError> {
    let bad = |problem: &'static str| SkillError::BadPath {
        name: name.to_owned(),
        path: path.to_owned(),
        problem,
    };
    if path.is_empty() {
        return Err(bad("is an empty path"));
    }
    if path.len() > MAX_PATH_LEN {
        return Err(bad("is too long a path"));
    }
    if path.starts_with('/') {
        return Err(bad(
            "is an absolute path; paths stay inside the skill's folder",
        ));
    }
    if path.contains('\\') || path.contains('\0') {
        return Err(bad("holds a backslash or NUL"));
    }
    let parts: Vec<&str> = path.split('/').collect();
    if parts.contains(&"..") {
        return Err(bad(
            "climbs out with `..`; paths stay inside the skill's folder",
        ));
    }
    if parts.iter().any(|p| p.is_empty() || *p == ".") {
        return Err(bad("has an empty or `.` part"));
    }
    if parts.len() > MAX_DEPTH + 1 {
        return Err(SkillError::TooDeep {
            name: name.to_owned(),
            path: path.to_owned(),
        });
    }
    Ok(())
}

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

/// What a `SKILL.md`'s front matter says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrontMatter {
    pub name: String,
    pub description: String,
}

/// Reads the front matter of a `SKILL.md`: a first line `---`, `key: value` lines, a line
/// `---`. Only `name` and `description` are read (plain, quoted, or a `|`/`>` block);
/// other keys, and lines indented under them, are skipped. `skill` names the skill in
/// messages.
pub fn front_matter(skill: &str, text: &[u8]) -> Result<FrontMatter, SkillError> {
    let problem = |problem: &str| SkillError::FrontMatter {
        name: skill.to_owned(),
        problem: problem.to_owned(),
    };
    let text = std::str::from_utf8(text).map_err(|_| problem("is not UTF-8 text"))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(problem(
            "has no front matter: start it with a line `---`, then `name:` and \
             `description:`, then `---`",
        ));
    }
    let mut body = Vec::new();
    let mut closed = false;
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        body.push(line);
    }
    if !closed {
        return Err(problem("front matter has no closing `---` line"));
    }
    let mut fields: BTreeMap<&str, String> = BTreeMap::new();
    let mut at = 0;
    while at < body.len() {
        let line = body[at];
        at += 1;
        if line.trim().is_empty() || line.trim_start().starts_with('#') || line.starts_with(' ') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(problem(&format!(
                "front matter line {} is not `key: value`",
                at + 1
            )));
        };
        let key = key.trim();
        let value = value.trim();
        let mut block = Vec::new();
        while at < body.len() && (body[at].starts_with(' ') || body[at].trim().is_empty()) {
            block.push(body[at].trim());
            at += 1;
        }
        if key != "name" && key != "description" {
            continue;
        }
        let value = match value.chars().next() {
            Some('|') => block.join("\n").trim().to_owned(),
            Some('>') => fold(&block),
            Some('"') => unquote_double(value)
                .ok_or_else(|| problem(&format!("`{key}` has an unclosed quote")))?,
            Some('\'') => value
                .strip_prefix('\'')
                .and_then(|v| v.strip_suffix('\''))
                .map(|v| v.replace("''", "'"))
                .ok_or_else(|| problem(&format!("`{key}` has an unclosed quote")))?,
            _ => {
                let mut all = vec![value];
                all.extend(block.iter().copied());
                fold(&all)
            }
        };
        if fields
            .insert(if key == "name" { "name" } else { "description" }, value)
            .is_some()
        {
            return Err(problem(&format!("front matter gives `{key}` twice")));
        }
    }
    let name = fields.remove("name").filter(|n| !n.is_empty());
    let description = fields.remove("description").filter(|d| !d.is_empty());
    let (Some(name), Some(description)) = (name, description) else {
        return Err(problem(
            "front matter needs both `name:` and `description:`",
        ));
    };
    if description.len() > MAX_DESCRIPTION_LEN {
        return Err(problem(&format!(
            "`description` is longer than {MAX_DESCRIPTION_LEN} bytes"
        )));
    }
    Ok(FrontMatter { name, description })
}

/// Plain lines folded into one, as YAML folds them.
fn fold(lines: &[&str]) -> String {
    lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn unquote_double(value: &str) -> Option<String> {
    let inner = value.strip_prefix('"')?.strip_suffix('"')?;
    if inner.is_empty() {
        return Some(String::new());
    }
    serde_json::from_str(value)
        .ok()
        .or_else(|| Some(inner.to_owned()))
}

/// The system text's note for a CLI that reads no skills of its own: where each skill is
/// and when to read it, so the agent still can. `dir` is the skills folder as the sandbox
/// sees it; `skills` are (name, description) pairs.
pub fn skills_note(dir: &str, skills: &[(String, String)]) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let mut text = String::from(
        "Skills: each is a folder of instructions (and perhaps scripts). When a task matches \
         one's description, read its SKILL.md first and follow it:",
    );
    for (name, description) in skills {
        text.push_str(&format!(
            "\n- {dir}/{name}/SKILL.md — {}",
            description.replace('\n', " ")
        ));
    }
    Some(text)
}

/// What a run freezes for each skill it uses (setting kind [`PINNED_KIND`], the skill's
/// name): where it came from, its content hash (the SHA-256 of its bundle, which is also
/// the bundle's name in the blob store) and its description, so every later attempt of the
/// run — on any runner — copies exactly these files, and the run page can list them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedSkill {
    pub source: SkillSource,
    /// 64 lower-case hex digits.
    pub digest: String,
    pub description: String,
}

/// The run setting kind a [`PinnedSkill`] is frozen under.
pub const PINNED_KIND: &str = "skill";
