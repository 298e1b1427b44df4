//! How the runner runs git on a workspace that nodes have had their hands on.
//!
//! Earlier nodes ran code in the workspace, so its `.git` may hold whatever a hostile
//! script put there: configuration (`core.fsmonitor`, `core.hooksPath`, `core.sshCommand`,
//! `credential.helper`, filters, `include.path`, a remote pointing elsewhere, `ext::`
//! URLs), hooks, links out of the workspace. [`crate::gitdir`] refuses the redirections and
//! the deliverer rewrites the configuration; every command built here also:
//!
//! - reads no global or system configuration (`GIT_CONFIG_GLOBAL=/dev/null`,
//!   `GIT_CONFIG_NOSYSTEM=1`), nothing of the runner's own `GIT_*` environment but its
//!   certificate authorities, and is told where the repository is (`GIT_DIR`,
//!   `GIT_WORK_TREE`) instead of looking for one;
//! - overrides, from the command line (which wins over the repository's configuration),
//!   every setting that runs a program or reaches another place: hooks, fsmonitor,
//!   credential helpers, askpass, signing, submodule recursion, automatic maintenance,
//!   redirects; and allows only the protocol of Gatehouse's own remote (no `ext::`, no
//!   `ssh` for an `https` remote);
//! - gets the token only when it talks to the remote (clone, fetch, push), so no filter or
//!   helper a commit might run has it in its environment; and then only as an HTTP header
//!   scoped to the remote's URL (`http.<remote-url>.extraHeader`), never a global
//!   `http.extraHeader`, so git sends it to no other URL (a submodule's, another host's).
//!   It is passed in the environment (`GIT_CONFIG_COUNT`), not as a `-c` argument, so it
//!   is not in the process list. Redirects are not followed: after an initial redirect git
//!   would send its next requests, header included, to the host it was redirected to.

use std::path::{Path, PathBuf};

use base64::Engine;
use secrecy::{ExposeSecret, SecretString};

/// Settings given on every git command line, over whatever the repository configures.
const OVERRIDES: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.askPass=",
    "core.attributesFile=/dev/null",
    "credential.helper=",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "push.recurseSubmodules=no",
    "diff.ignoreSubmodules=all",
    "gc.auto=0",
    "maintenance.auto=false",
    "http.followRedirects=false",
    "protocol.allow=never",
    // A Docker sandbox leaves the workspace owned by its non-root user; the runner's git
    // must still work in it.
    "safe.directory=*",
];

/// The runner's own `GIT_*` variables passed on: where its certificate authorities are (a
/// GitHub Enterprise server with a private CA). Every other one is removed, so nothing of
/// the runner's environment (`GIT_DIR`, `GIT_SSH_COMMAND`, `GIT_CONFIG_PARAMETERS`, ...)
/// changes what git does.
const KEPT: &[&str] = &["GIT_SSL_CAINFO", "GIT_SSL_CAPATH"];

/// Git for one remote, authenticated as `auth` says.
pub(crate) struct Git<'a> {
    /// The remote's URL, as cloned from and pushed to.
    pub remote: &'a str,
    /// How it authenticates to `remote`, and to it only.
    pub auth: &'a Auth,
}

/// How git authenticates to a remote, given only to the commands that talk to it.
pub(crate) enum Auth {
    /// Nothing to give (a file:// remote, a public one, a command that stays local).
    None,
    /// A token, as HTTP Basic credentials (`user:token`) in a header scoped to the remote's
    /// URL: GitHub's user is `x-access-token`, GitLab's `oauth2`; Gitea reads the password.
    Basic {
        user: &'static str,
        token: SecretString,
    },
    /// An ssh key, in a file of the run's scratch directory (outside the workspace, mode
    /// 0600), named by the ssh command git runs; the key itself is in no argument,
    /// variable, URL or log.
    Ssh {
        key_file: PathBuf,
        /// The host keys ssh trusts: the configured file (checked strictly), or one of the
        /// session's own where a host's key is accepted the first time.
        known_hosts: PathBuf,
        strict: bool,
    },
}

impl Auth {
    /// The ssh command git runs for [`Auth::Ssh`]: the key alone (no agent, no other
    /// identities, no user configuration), never a prompt.
    fn ssh_command(key_file: &Path, known_hosts: &Path, strict: bool) -> String {
        let checking = if strict { "yes" } else { "accept-new" };
        format!(
            "ssh -F /dev/null -o IdentitiesOnly=yes -o IdentityAgent=none -o BatchMode=yes -o StrictHostKeyChecking={checking} -o UserKnownHostsFile={} -i {}",
            quoted(known_hosts),
            quoted(key_file)
        )
    }
}

/// `path` in single quotes for the shell git runs the ssh command with.
fn quoted(path: &Path) -> String {
    format!("'{}'", path.to_string_lossy().replace('\'', "'\\''"))
}

/// Whether a command talks to the remote (and so gets the token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Network {
    /// Clone, fetch, push.
    Remote,
    /// Everything else.
    Local,
}

impl Git<'_> {
    /// `git <args>` in `dir`; `repo` is the work tree the command works on (none for a
    /// clone).
    pub(crate) fn command(
        &self,
        dir: &Path,
        repo: Option<&Path>,
        network: Network,
        args: &[&str],
    ) -> tokio::process::Command {
        let mut command = tokio::process::Command::new("git");
        for (name, _) in std::env::vars_os() {
            let name_text = name.to_string_lossy();
            if name_text.starts_with("GIT_") && !KEPT.contains(&name_text.as_ref()) {
                command.env_remove(name);
            }
        }
        command.env_remove("SSH_ASKPASS");
        let protocol = format!("protocol.{}.allow=always", scheme(self.remote));
        for setting in OVERRIDES.iter().copied().chain([protocol.as_str()]) {
            command.args(["-c", setting]);
        }
        command
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_ATTR_NOSYSTEM", "1")
            .env("GIT_NO_REPLACE_OBJECTS", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(std::process::Stdio::null());
        if let Some(repo) = repo {
            command
                .env("GIT_DIR", repo.join(".git"))
                .env("GIT_WORK_TREE", repo);
        }
        if network == Network::Remote {
            match self.auth {
                Auth::None => {}
                Auth::Basic { user, token } => {
                    let credentials = base64::engine::general_purpose::STANDARD
                        .encode(format!("{user}:{}", token.expose_secret()));
                    command
                        .env("GIT_CONFIG_COUNT", "1")
                        .env("GIT_CONFIG_KEY_0", header_key(self.remote))
                        .env(
                            "GIT_CONFIG_VALUE_0",
                            format!("Authorization: Basic {credentials}"),
                        );
                }
                Auth::Ssh {
                    key_file,
                    known_hosts,
                    strict,
                } => {
                    command.env(
                        "GIT_SSH_COMMAND",
                        Auth::ssh_command(key_file, known_hosts, *strict),
                    );
                }
            }
        }
        command
    }
}

/// What a git command printed, and whether it succeeded.
pub(crate) struct Ran {
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// Its stdout when it succeeded; else why not, from its last line of stderr.
    pub(crate) fn into_result(self, what: &str) -> Result<String, String> {
        if self.code == Some(0) {
            Ok(self.stdout)
        } else {
            Err(format!("git {what} failed: {}", self.reason()))
        }
    }

    /// The line of stderr that says what went wrong: git's first `fatal:` (or `error:`),
    /// whose next lines are advice ("Please make sure you have the correct access
    /// rights..."); else its last line.
    pub(crate) fn reason(&self) -> &str {
        let lines = || self.stderr.lines().map(str::trim).filter(|l| !l.is_empty());
        lines()
            .find(|l| l.starts_with("fatal:"))
            .or_else(|| lines().find(|l| l.starts_with("error:")))
            .or_else(|| lines().next_back())
            .unwrap_or("no message")
    }
}

/// Runs a command built by [`Git::command`].
pub(crate) async fn run(mut command: tokio::process::Command, what: &str) -> Result<Ran, String> {
    let output = command
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| format!("git {what}: {e}"))?;
    Ok(Ran {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

/// Runs a command built by [`Git::command`]: its stdout, or why it failed.
pub(crate) async fn checked(
    command: tokio::process::Command,
    what: &str,
) -> Result<String, String> {
    run(command, what).await?.into_result(what)
}

/// Runs git on this machine alone (no remote, so no credential) in `dir`, on the work tree
/// `repo` when given: its stdout, or why it failed.
pub(crate) async fn local(
    dir: &Path,
    repo: Option<&Path>,
    args: &[&str],
) -> Result<String, String> {
    let git = Git {
        remote: "",
        auth: &Auth::None,
    };
    let what = args.first().copied().unwrap_or("");
    checked(git.command(dir, repo, Network::Local, args), what).await
}

/// The configuration key of an HTTP header sent to `remote` only.
pub(crate) fn header_key(remote: &str) -> String {
    format!("http.{remote}.extraHeader")
}

/// The protocol git needs for `remote`: its URL scheme, `ssh` for `host:path`, `file` for a
/// path.
fn scheme(remote: &str) -> &str {
    match remote.split_once("://") {
        Some((scheme, _)) => scheme,
        None if remote.starts_with('/') => "file",
        None => "ssh",
    }
}

#[cfg(test)]
mod tests;
