//! The tree of a repository in the workspace: every file, tracked and untracked (except what
//! its `.gitignore` files leave out), as `git write-tree` names it. An approval binds the
//! trees it saw, and delivery commits exactly the tree it compared, so what is pushed is
//! byte for byte what was approved.
//!
//! The workspace is hostile, and after an attempt its `.git` is left as the node made it
//! (its configuration may be the agent's own), so the tree is computed without it:
//! after [`crate::gitdir::check`], git runs with a git directory of the runner's own, a
//! fresh one under the run's scratch directory, outside the workspace. Only data is taken
//! from the workspace's `.git`: its objects (as alternates) and the commit `HEAD` names,
//! read here without git. Its configuration (filters a `git add` would run, excludes),
//! index and hooks are never read; settings from the command line do the rest
//! ([`crate::git`]). The index starts from `HEAD`'s tree, so a tracked file that a
//! `.gitignore` matches stays, as it would in a commit; `git add --all` then takes
//! additions, changes and deletions.
//!
//! After an attempt the new objects go to the scratch directory (uncompressed: they are
//! thrown away) and the workspace is not written; for a delivery they go to the
//! workspace's own object store, where the commit that follows needs them.

use std::path::Path;

use crate::git::{Auth, Git, Network, checked};
use crate::scratch::Scratch;

/// What a tree that could not be computed is recorded as: it never equals a tree.
pub(crate) const UNVERIFIABLE: &str = "unverifiable: ";

/// Where `git add` writes the objects of new and changed files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Objects {
    /// A scratch store, removed afterwards; the repository's objects are read only.
    Scratch,
    /// The repository's own object store (for a commit that follows).
    Repository,
}

/// The tree of the repository checked out at `repo`, computed in a scratch git directory
/// under `scratch`; `shared`: the mirror's object store its alternates may name. `Err`:
/// why it cannot be (a tampered `.git`, a missing object, a file git refuses), which makes
/// the tree [unverifiable](UNVERIFIABLE).
pub(crate) async fn tree(
    repo: &Path,
    scratch: &Path,
    objects: Objects,
    shared: Option<&Path>,
) -> Result<String, String> {
    crate::gitdir::check(repo, shared)?;
    let head = head_commit(&repo.join(".git"))?;
    let git = ScratchGit::new(repo, scratch, objects)?;
    if let Some(head) = &head {
        git.run(&["read-tree", head]).await?;
    }
    let compression = match objects {
        Objects::Scratch => "core.looseCompression=0",
        Objects::Repository => "core.looseCompression=-1",
    };
    git.run(&["-c", compression, "add", "--all"]).await?;
    object_id(&git.run(&["write-tree"]).await?)
}

/// The tree of `commit` in the repository at `repo`, read the same way.
pub(crate) async fn tree_of_commit(
    repo: &Path,
    scratch: &Path,
    commit: &str,
    shared: Option<&Path>,
) -> Result<String, String> {
    crate::gitdir::check(repo, shared)?;
    let git = ScratchGit::new(repo, scratch, Objects::Scratch)?;
    object_id(
        &git.run(&["rev-parse", "--verify", &format!("{commit}^{{tree}}")])
            .await?,
    )
}

fn object_id(out: &str) -> Result<String, String> {
    let id = out.trim();
    if is_object_id(id) {
        Ok(id.to_owned())
    } else {
        Err(format!("git gave `{id}` for an object id"))
    }
}

/// Git on a repository's work tree and objects, with a git directory of the runner's own
/// (removed when this is dropped) instead of the repository's.
struct ScratchGit<'a> {
    repo: &'a Path,
    own: Scratch,
    objects: Objects,
}

impl<'a> ScratchGit<'a> {
    fn new(repo: &'a Path, scratch: &Path, objects: Objects) -> Result<Self, String> {
        let own = Scratch::new(scratch, "tree").map_err(|e| format!("a scratch directory: {e}"))?;
        let dir = own.path();
        std::fs::create_dir_all(dir.join("objects"))
            .and_then(|()| std::fs::create_dir_all(dir.join("refs")))
            .and_then(|()| std::fs::write(dir.join("HEAD"), "ref: refs/heads/tree\n"))
            .and_then(|()| {
                std::fs::write(
                    dir.join("config"),
                    "[core]\n\trepositoryformatversion = 0\n\tbare = false\n",
                )
            })
            .map_err(|e| format!("a scratch git directory: {e}"))?;
        Ok(Self { repo, own, objects })
    }

    /// `git <args>`: its stdout, or why it failed.
    async fn run(&self, args: &[&str]) -> Result<String, String> {
        let git = Git {
            remote: "file:///dev/null",
            auth: &Auth::None,
        };
        let (dir, objects) = (self.own.path(), self.repo.join(".git/objects"));
        let mut command = git.command(self.repo, None, Network::Local, args);
        command
            .env("GIT_DIR", dir)
            .env("GIT_WORK_TREE", self.repo)
            .env("GIT_INDEX_FILE", dir.join("index"));
        match self.objects {
            Objects::Scratch => command
                .env("GIT_OBJECT_DIRECTORY", dir.join("objects"))
                .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", objects),
            Objects::Repository => command.env("GIT_OBJECT_DIRECTORY", objects),
        };
        let what = args
            .iter()
            .find(|a| !a.starts_with('-') && !a.contains('='))
            .unwrap_or(&"");
        checked(command, what).await
    }
}

/// The commit `HEAD` names in `git_dir` (checked by [`crate::gitdir::check`]: no links),
/// read without git; `None` on a branch with no commit yet.
pub(crate) fn head_commit(git_dir: &Path) -> Result<Option<String>, String> {
    let mut value = read_small(&git_dir.join("HEAD"))?;
    for _ in 0..5 {
        let Some(name) = value.strip_prefix("ref: ") else {
            return if is_object_id(&value) {
                Ok(Some(value))
            } else {
                Err(format!("`.git/HEAD` names no commit: `{value}`"))
            };
        };
        let name = name.trim().to_owned();
        if !is_ref_name(&name) {
            return Err(format!("`.git/HEAD` points at `{name}`, not a branch"));
        }
        let loose = git_dir.join(&name);
        value = if loose.is_file() {
            read_small(&loose)?
        } else {
            match packed(git_dir, &name)? {
                Some(id) => id,
                None if git_dir.join("reftable").exists() => {
                    return Err(
                        "its refs are kept in a reftable, which delivery cannot read".into(),
                    );
                }
                None => return Ok(None),
            }
        };
    }
    Err("`.git/HEAD` is a chain of symbolic refs".into())
}

/// `name`'s object id in `.git/packed-refs`, if it is there.
fn packed(git_dir: &Path, name: &str) -> Result<Option<String>, String> {
    let text = match std::fs::read_to_string(git_dir.join("packed-refs")) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("reading `.git/packed-refs`: {e}")),
    };
    Ok(text
        .lines()
        .filter_map(|line| line.split_once(' '))
        .find(|(id, found)| *found == name && is_object_id(id))
        .map(|(id, _)| id.to_owned()))
}

/// The start of a small file in `.git`, trimmed.
fn read_small(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let shown = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(4096).read_to_string(&mut text))
        .map_err(|e| format!("reading `{shown}` in `.git`: {e}"))?;
    Ok(text.trim().to_owned())
}

/// A full SHA-1 or SHA-256 object id in lowercase hex.
pub(crate) fn is_object_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A ref under `refs/` that stays inside `.git`: no `..`, no empty or hidden component.
fn is_ref_name(name: &str) -> bool {
    name.starts_with("refs/")
        && name.split('/').all(|part| {
            !part.is_empty()
                && !part.starts_with('.')
                && part.bytes().all(|b| {
                    b > b' ' && !matches!(b, b'~' | b'^' | b':' | b'?' | b'*' | b'[' | b'\\' | 0x7f)
                })
        })
}

/// The first twelve characters of an object id, as messages show it.
pub(crate) fn short(id: &str) -> &str {
    if id.starts_with(UNVERIFIABLE) {
        return id;
    }
    id.get(..12).unwrap_or(id)
}
