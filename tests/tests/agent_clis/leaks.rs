//! Looking for a secret in every file a CLI could have written.

use std::path::{Path, PathBuf};

/// The files under `dirs` (symbolic links not followed) whose bytes contain `secret`.
pub fn files_containing(dirs: &[&Path], secret: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    while let Some(path) = pending.pop() {
        let Ok(metadata) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if metadata.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&path) {
                pending.extend(entries.filter_map(|e| e.ok().map(|e| e.path())));
            }
        } else if metadata.is_file()
            && let Ok(bytes) = std::fs::read(&path)
            && bytes
                .windows(secret.len())
                .any(|window| window == secret.as_bytes())
        {
            found.push(path);
        }
    }
    found
}

/// How many files there are under `dir`, to show the search looked at something.
pub fn count_files(dir: &Path) -> usize {
    let mut count = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => {
                if let Ok(entries) = std::fs::read_dir(&path) {
                    pending.extend(entries.filter_map(|e| e.ok().map(|e| e.path())));
                }
            }
            Ok(m) if m.is_file() => count += 1,
            _ => {}
        }
    }
    count
}
