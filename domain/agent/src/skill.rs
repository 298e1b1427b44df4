//! Skills: folders holding a `SKILL.md` (YAML front matter with `name` and `description`,
//! then instructions) and perhaps more files, the Agent Skills format Claude Code, Codex and
//! others read. This module holds what needs no I/O: where a skill comes from
//! (`[skills.NAME]`), its name's rules, the front matter, the checks on every path and size
//! of a folder's contents (all of it is untrusted: a repository's or a directory's), and
//! the bundle a folder is packed into — one byte string whose SHA-256 is the skill's
//! content hash, frozen with the run and stored content-addressed in the blob store.

mod files;
mod front_matter;

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use files::SkillFiles;
pub use front_matter::{FrontMatter, front_matter};

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
