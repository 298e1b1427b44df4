//! The conversation so far, for a `command` executor's `{transcript_file}`: Claude Code and
//! Codex keep their own sessions, a user's program gets this file instead. One JSON object
//! per line, `{"role":"user"|"assistant","text":…}`, appended by the runner after each
//! assistant turn that replied; the CLI reads a copy, so it cannot rewrite the history.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

#[derive(Serialize)]
struct Entry<'a> {
    role: &'a str,
    text: &'a str,
}

/// The lines one exchange adds.
pub(crate) fn exchange(message: &str, reply: &str) -> String {
    let line = |role, text| {
        serde_json::to_string(&Entry { role, text }).unwrap_or_else(|_| String::from("{}"))
    };
    format!("{}\n{}\n", line("user", message), line("assistant", reply))
}

/// Appends one exchange to the transcript at `path`, creating it.
pub(crate) fn append(path: &Path, message: &str, reply: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(exchange(message, reply).as_bytes())?;
    file.sync_data()
}

/// Copies the transcript to `to` for an attempt to read; an empty file when there is none
/// yet (the first turn).
pub(crate) fn copy(path: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::copy(path, to) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::write(to, ""),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exchange_is_two_json_lines() {
        assert_eq!(
            exchange("fix \"it\"\nplease", "done"),
            "{\"role\":\"user\",\"text\":\"fix \\\"it\\\"\\nplease\"}\n{\"role\":\"assistant\",\"text\":\"done\"}\n"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c/transcript.jsonl");
        let copy_to = dir.path().join("copy");
        copy(&path, &copy_to).unwrap();
        assert_eq!(std::fs::read_to_string(&copy_to).unwrap(), "");
        append(&path, "a", "b").unwrap();
        append(&path, "c", "d").unwrap();
        copy(&path, &copy_to).unwrap();
        assert_eq!(
            std::fs::read_to_string(&copy_to).unwrap().lines().count(),
            4
        );
    }
}
