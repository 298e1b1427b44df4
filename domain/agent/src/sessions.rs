//! Where each CLI keeps the sessions a later turn resumes, below its home, so that a runner
//! can tell before it asks for one whether the home it has holds it. A CLI asked to resume a
//! session its home lacks fails the turn (`No conversation found with session ID`), which
//! is what a turn on a runner without the conversation's saved home would do.
//!
//! - Claude Code: `~/.claude/projects/<project>/<session>.jsonl`, one directory per working
//!   directory; `--resume` finds a session in any of them, and keeps its id.
//! - Codex: `~/.codex/sessions/<year>/<month>/<day>/rollout-<time>-<thread>.jsonl`;
//!   `exec resume` finds it by the thread's id, and keeps it.
//! - Command: no session of its own.
//!
//! Both move the whole directory elsewhere when a variable says so (`CLAUDE_CONFIG_DIR`,
//! `CODEX_HOME`): a role setting it keeps its sessions where the runner cannot look.

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
}

impl SessionFiles {
    /// Sessions below `dir` (moved elsewhere by the variable `moved_by`), `depth`
    /// directories down, in files named `prefix` + (`stamped`: a time and `-`) + id +
    /// `.jsonl`.
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
        }
    }

    /// Whether a file named `name` holds session `id`.
    pub fn names(&self, name: &str, id: &str) -> bool {
        let Some(rest) = name
            .strip_prefix(self.prefix)
            .and_then(|rest| rest.strip_suffix(".jsonl"))
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
    fn a_command_has_no_sessions() {
        assert_eq!(Executor::Command.session_files(), None);
    }
}
