//! Where each CLI keeps the sessions a later turn resumes, below its home, so that a runner
//! can tell before it asks for one whether the home it has holds it. A CLI asked to resume a
//! session its home lacks fails the turn (`No conversation found with session ID`), which
//! is what a turn on a runner without the conversation's saved home would do.
//!
//! - Claude Code: `~/.claude/projects/<project>/<session>.jsonl`, one directory per working
//!   directory; `--resume` finds a session in any of them, and keeps its id.
//! - Codex: `~/.codex/sessions/<year>/<month>/<day>/rollout-<time>-<thread>.jsonl`;
//!   `exec resume` finds it by the thread's id, and keeps it.
//! - Gemini CLI: `~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl`, named by the
//!   first 8 characters of the session's id only (Gemini's own lookup matches on them too).
//! - Copilot CLI: `~/.copilot/session-state/<id>/events.jsonl`, a directory per session;
//!   the file that names the id is its lock, `session-state/.session-operation-locks/<id>.lock`,
//!   created with the session and left in place.
//! - Command: no session of its own.
//!
//! Each moves the whole directory elsewhere when a variable says so (`CLAUDE_CONFIG_DIR`,
//! `CODEX_HOME`, `GEMINI_CLI_HOME`, `COPILOT_HOME`): a role setting it keeps its sessions
//! where the runner cannot look.

/// Where one CLI's sessions are, below its home.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionFiles {
    /// The variable that moves the CLI's state out of `dir`'s parent.
    pub moved_by: &'static str,
    /// The directory, relative to the home, the session files are below.
    pub dir: &'static str,
    /// How many directories down from `dir` a session's file is.
    pub depth: usize,
    /// What a session's file name starts with before anything naming its time.
    prefix: &'static str,
    /// Whether something (its time, then `-`) lies between the prefix and the id.
    stamped: bool,
    /// How many of the id's characters the name holds; `None` for all of them.
    id_chars: Option<usize>,
    /// What the name ends with after the id.
    suffix: &'static str,
}

impl SessionFiles {
    /// Sessions below `dir` (moved elsewhere by the variable `moved_by`), `depth`
    /// directories down, in files named `prefix` + (`stamped`: a time and `-`) + id +
    /// `.jsonl` (see [`SessionFiles::named`] for other names).
    pub(crate) const fn new(
        moved_by: &'static str,
        dir: &'static str,
        depth: usize,
        prefix: &'static str,
        stamped: bool,
    ) -> Self {
        Self {
            moved_by,
            dir,
            depth,
            prefix,
            stamped,
            id_chars: None,
            suffix: ".jsonl",
        }
    }

    /// The same, for files that hold only the first `id_chars` characters of the id
    /// (`None`: all of it) and end in `suffix` instead of `.jsonl`.
    pub(crate) const fn named(self, id_chars: Option<usize>, suffix: &'static str) -> Self {
        Self {
            id_chars,
            suffix,
            ..self
        }
    }

    /// Whether a file named `name` holds session `id`.
    pub fn names(&self, name: &str, id: &str) -> bool {
        let id = match self.id_chars {
            Some(chars) => match id.char_indices().nth(chars) {
                Some((end, _)) => &id[..end],
                None => id,
            },
            None => id,
        };
        let Some(rest) = name
            .strip_prefix(self.prefix)
            .and_then(|rest| rest.strip_suffix(self.suffix))
            .and_then(|rest| rest.strip_suffix(id))
        else {
            return false;
        };
        if self.stamped {
            rest.ends_with('-')
        } else {
            rest.is_empty()
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::executor::Executor;

    const ID: &str = "02a36d6e-05a4-414d-8679-28e3d204ac55";

    #[test]
    fn claude_code_names_a_session_file_by_its_id() {
        let files = Executor::ClaudeCode.session_files().unwrap();
        assert!(files.names(&format!("{ID}.jsonl"), ID));
        assert!(!files.names(&format!("x{ID}.jsonl"), ID));
        assert!(!files.names(&format!("{ID}.json"), ID));
        assert!(!files.names("other.jsonl", ID));
        assert_eq!(
            (files.dir, files.depth, files.moved_by),
            (".claude/projects", 1, "CLAUDE_CONFIG_DIR")
        );
    }

    #[test]
    fn codex_names_a_rollout_by_its_time_and_thread() {
        let files = Executor::Codex.session_files().unwrap();
        let id = "01a24d73-eafc-7562-b609-57083dc1a915";
        assert!(files.names(&format!("rollout-2026-12-06T22-22-52-{id}.jsonl"), id));
        assert!(!files.names(&format!("rollout-{id}.jsonl"), id));
        assert!(!files.names(&format!("2026-12-06T22-22-52-{id}.jsonl"), id));
        assert!(!files.names(&format!("rollout-2026-12-06T22-22-52-x{id}.jsonl"), id));
        assert_eq!(files.depth, 3);
    }

    #[test]
    fn gemini_names_a_session_file_by_the_start_of_its_id() {
        let files = Executor::Gemini.session_files().unwrap();
        let id = "5132a22f-712a-4f15-b9e7-a5392557591c";
        assert!(files.names("session-2026-12-07T01-51-5132a22f.jsonl", id));
        assert!(!files.names("session-2026-12-07T01-51-5132a22e.jsonl", id));
        assert!(!files.names("session-5132a22f.jsonl", id));
        assert!(!files.names(&format!("session-2026-12-07T01-51-{id}.jsonl"), id));
        assert!(!files.names("session-2026-12-07T01-51-5132a22f.json", id));
        assert_eq!(
            (files.dir, files.depth, files.moved_by),
            (".gemini/tmp", 2, "GEMINI_CLI_HOME")
        );
    }

    #[test]
    fn copilot_names_a_session_by_its_lock() {
        let files = Executor::Copilot.session_files().unwrap();
        let id = "e0d17482-1df0-4b0b-8bb6-0d0d1f4f05b4";
        assert!(files.names(&format!("{id}.lock"), id));
        assert!(!files.names("events.jsonl", id));
        assert!(!files.names(&format!("{id}.jsonl"), id));
        assert!(!files.names(&format!("x{id}.lock"), id));
        assert_eq!(
            (files.dir, files.depth, files.moved_by),
            (".copilot/session-state", 1, "COPILOT_HOME")
        );
    }

    #[test]
    fn a_command_has_no_sessions() {
        assert_eq!(Executor::Command.session_files(), None);
    }
}
