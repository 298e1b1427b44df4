//! Reading a skill's folder from disk: a configured directory on the runner's host, or
//! `.gatehouse/skills/<name>/` in a checked-out repository. Everything in it is untrusted:
//! each entry is looked at without following it (a symbolic link, a FIFO or a device is
//! refused, naming its path), each file is read through [`untrusted::read`] (which opens
//! every component with `O_NOFOLLOW` and reads at most the limit), and the sizes and count
//! are bounded by [`SkillFiles`] before a byte is read.

use std::path::Path;

use gatehouse_agent::{MAX_DEPTH, MAX_FILE_BYTES, SkillError, SkillFiles};
use gatehouse_sandbox::untrusted;

/// Reads the skill `name` from `base/prefix` (`prefix` empty, or `/`-separated ending in
/// `/`): `base` is the caller's own folder, opened as a path; everything under it is not
/// followed. The result has passed [`SkillFiles::check`].
pub(crate) fn read(name: &str, base: &Path, prefix: &str) -> Result<SkillFiles, String> {
    let mut skill = SkillFiles::new(name).map_err(|e| e.to_string())?;
    // The folders on the way down must be folders, not links to one.
    let mut at = base.to_owned();
    for part in prefix.split('/').filter(|p| !p.is_empty()) {
        at.push(part);
        let shown = at.strip_prefix(base).unwrap_or(&at).display().to_string();
        kind(name, &at, &shown, true)?;
    }
    let mut stack = vec![(at, String::new(), 0usize)];
    while let Some((dir, relative, depth)) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .map_err(|e| format!("skill {name}: reading {}: {e}", shown(&relative)))?
            .collect::<Result<_, _>>()
            .map_err(|e| format!("skill {name}: reading {}: {e}", shown(&relative)))?;
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let Ok(file) = entry.file_name().into_string() else {
                return Err(format!(
                    "skill {name}: {}{} is not a UTF-8 name",
                    relative,
                    entry.file_name().to_string_lossy()
                ));
            };
            let path = format!("{relative}{file}");
            gatehouse_agent::check_path(name, &path).map_err(|e| e.to_string())?;
            let meta = std::fs::symlink_metadata(entry.path())
                .map_err(|e| format!("skill {name}: {path}: {e}"))?;
            if meta.is_dir() {
                if depth + 1 > MAX_DEPTH {
                    return Err(SkillError::TooDeep {
                        name: name.to_owned(),
                        path,
                    }
                    .to_string());
                }
                stack.push((entry.path(), format!("{path}/"), depth + 1));
                continue;
            }
            kind(name, &entry.path(), &path, false)?;
            skill
                .check_size(&path, meta.len())
                .map_err(|e| e.to_string())?;
            let bytes = untrusted::read(base, &format!("{prefix}{path}"), MAX_FILE_BYTES)
                .map_err(|e| format!("skill {name}: {path}: {e}"))?;
            skill.add(&path, bytes).map_err(|e| e.to_string())?;
        }
    }
    skill.check().map_err(|e| e.to_string())?;
    Ok(skill)
}

/// Refuses `path` unless it is a folder (`dir`) or a regular file, without following it.
fn kind(name: &str, path: &Path, shown: &str, dir: bool) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            format!("skill {name}: {shown} does not exist")
        } else {
            format!("skill {name}: {shown}: {e}")
        }
    })?;
    let t = meta.file_type();
    if t.is_symlink() {
        return Err(SkillError::Symlink {
            name: name.to_owned(),
            path: shown.to_owned(),
        }
        .to_string());
    }
    if (dir && !t.is_dir()) || (!dir && !t.is_file()) {
        return Err(SkillError::Special {
            name: name.to_owned(),
            path: shown.to_owned(),
        }
        .to_string());
    }
    Ok(())
}

fn shown(relative: &str) -> String {
    if relative.is_empty() {
        "its folder".to_owned()
    } else {
        relative.trim_end_matches('/').to_owned()
    }
}

/// The skills a checked-out repository holds: each folder `.gatehouse/skills/<name>/`
/// with a `SKILL.md`, by name. A `.gatehouse` or `skills` that is a link is refused, a
/// folder without `SKILL.md` is skipped (it is not a skill), a folder whose name no skill
/// may have is refused.
pub(crate) fn repository_skills(checkout: &Path) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut at = checkout.to_owned();
    for part in gatehouse_agent::REPOSITORY_SKILLS_DIR.split('/') {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(names),
            Err(e) => return Err(format!("{}: {e}", at.display())),
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(format!(
                    "the repository's {} is a symbolic link; skills may hold only files and folders",
                    at.strip_prefix(checkout).unwrap_or(&at).display()
                ));
            }
            Ok(meta) if !meta.is_dir() => return Ok(names),
            Ok(_) => {}
        }
    }
    for entry in std::fs::read_dir(&at).map_err(|e| format!("{}: {e}", at.display()))? {
        let entry = entry.map_err(|e| format!("{}: {e}", at.display()))?;
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        if meta.file_type().is_symlink() {
            return Err(SkillError::Symlink {
                name: name.clone(),
                path: format!("{}/{name}", gatehouse_agent::REPOSITORY_SKILLS_DIR),
            }
            .to_string());
        }
        if !meta.is_dir() || !entry.path().join(gatehouse_agent::SKILL_FILE).exists() {
            continue;
        }
        gatehouse_agent::check_skill_name(&name)
            .map_err(|e| format!("{}/{name}: {e}", gatehouse_agent::REPOSITORY_SKILLS_DIR))?;
        names.push(name);
    }
    names.sort();
    Ok(names)
}

/// Writes a skill's files under `dir/<name>/`, which must not exist yet.
pub(crate) fn write(dir: &Path, skill: &SkillFiles) -> std::io::Result<()> {
    let root = dir.join(skill.name());
    std::fs::create_dir_all(&root)?;
    for (path, bytes) in skill.files() {
        let to = root.join(path);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(to, bytes)?;
    }
    Ok(())
}
