//! A delivery refuses changes that add a configured secret's value, as an attempt refuses
//! an artifact holding one: every file the work adds or changes (from where the work
//! started to the tree about to be committed) is read from the repository's objects, and
//! one holding a secret's value more often than it did before stops the whole delivery,
//! naming the file and the secret, never the value. Nothing of the files reaches the log.

use std::path::Path;
use std::process::Stdio;

use tokio::io::AsyncWriteExt;

use crate::git::{Auth, Git, Network};
use crate::secrets::Secrets;

/// The tree of no files: what a repository with no commit yet started from.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
/// An object id of zeros: no file on that side of a change.
const NO_OBJECT: &str = "0000000000000000000000000000000000000000";
/// Git's mode of a submodule: a commit of another repository, not a file here.
const GITLINK: &str = "160000";

/// `Err` naming the first file that the change from `from` (a commit; `None`: nothing)
/// to `tree` makes hold a secret's value (more often than before), and the secret.
pub(super) async fn refuse_added_secrets(
    repo: &str,
    dir: &Path,
    from: Option<&str>,
    tree: &str,
    secrets: &Secrets,
) -> Result<(), String> {
    if secrets.is_empty() {
        return Ok(());
    }
    let from = from.unwrap_or(EMPTY_TREE);
    let listed = quiet(
        dir,
        &[
            "diff-tree",
            "-r",
            "-z",
            "--no-renames",
            "--no-commit-id",
            from,
            tree,
        ],
        None,
    )
    .await
    .map_err(|reason| format!("{repo}: its changes cannot be read: {reason}"))?;
    let changes = changes(&listed);
    let mut ids: Vec<&str> = Vec::new();
    for change in &changes {
        ids.push(&change.new);
        if change.old != NO_OBJECT {
            ids.push(&change.old);
        }
    }
    if ids.is_empty() {
        return Ok(());
    }
    let mut batch = ids.join("\n");
    batch.push('\n');
    let out = quiet(dir, &["cat-file", "--batch"], Some(batch.into_bytes()))
        .await
        .map_err(|reason| format!("{repo}: its changed files cannot be read: {reason}"))?;
    let blobs = blobs(&out)
        .ok_or_else(|| format!("{repo}: its changed files cannot be read: git's answer is cut"))?;
    let mut blobs = blobs.into_iter();
    for change in &changes {
        let new = blobs.next().unwrap_or_default();
        let old = if change.old == NO_OBJECT {
            &[][..]
        } else {
            blobs.next().unwrap_or_default()
        };
        let before = secrets.count_in(old);
        for (name, count) in secrets.count_in(new) {
            let had = before
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(0, |(_, c)| *c);
            if count > had {
                return Err(format!(
                    "refused: the changes to {repo} add the value of the secret {name} (in {}); nothing was delivered",
                    change.path
                ));
            }
        }
    }
    Ok(())
}

/// One file the change adds or changes.
struct Change {
    old: String,
    new: String,
    path: String,
}

/// The files `diff-tree -r -z` lists that hold something afterwards (not deleted, not a
/// submodule).
fn changes(listed: &[u8]) -> Vec<Change> {
    let mut fields = listed.split(|&b| b == 0);
    let mut changes = Vec::new();
    while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
        let meta = String::from_utf8_lossy(meta);
        let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let [_, new_mode, old, new, _status] = parts.as_slice() else {
            continue;
        };
        if *new == NO_OBJECT || *new_mode == GITLINK {
            continue;
        }
        changes.push(Change {
            old: (*old).to_owned(),
            new: (*new).to_owned(),
            path: String::from_utf8_lossy(path).into_owned(),
        });
    }
    changes
}

/// The contents in `cat-file --batch`'s answer, in order; `None` when it is cut short.
fn blobs(mut out: &[u8]) -> Option<Vec<&[u8]>> {
    let mut blobs = Vec::new();
    while !out.is_empty() {
        let end = out.iter().position(|&b| b == b'\n')?;
        let header = std::str::from_utf8(&out[..end]).ok()?;
        out = &out[end + 1..];
        let size = match header.rsplit(' ').next() {
            Some("missing") | None => {
                blobs.push(&[][..]);
                continue;
            }
            Some(size) => size.parse::<usize>().ok()?,
        };
        blobs.push(out.get(..size)?);
        out = out.get(size + 1..)?;
    }
    Some(blobs)
}

/// `git <args>` in the repository at `dir`, `input` on its stdin: its stdout, which is
/// never logged.
async fn quiet(dir: &Path, args: &[&str], input: Option<Vec<u8>>) -> Result<Vec<u8>, String> {
    let git = Git {
        remote: "file:///dev/null",
        auth: &Auth::None,
    };
    let mut command = git.command(dir, Some(dir), Network::Local, args);
    command
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let what = args.first().copied().unwrap_or_default();
    let mut child = command.spawn().map_err(|e| format!("git {what}: {e}"))?;
    let writer = match (child.stdin.take(), input) {
        (Some(mut stdin), Some(input)) => Some(tokio::spawn(async move {
            // A git that stops reading has failed, and says so by its exit.
            let _ = stdin.write_all(&input).await;
        })),
        _ => None,
    };
    let output = child
        .wait_with_output()
        .await
        .map_err(|e| format!("git {what}: {e}"))?;
    if let Some(writer) = writer {
        let _ = writer.await;
    }
    if output.status.success() {
        Ok(output.stdout)
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(format!(
            "git {what} failed: {}",
            stderr.lines().next_back().unwrap_or("no message").trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_answers_are_read_as_they_are_written() {
        let listed = b":100644 100644 1111111111111111111111111111111111111111 2222222222222222222222222222222222222222 M\0a b.txt\0:000000 100644 0000000000000000000000000000000000000000 3333333333333333333333333333333333333333 A\0new\0:100644 000000 4444444444444444444444444444444444444444 0000000000000000000000000000000000000000 D\0gone\0:000000 160000 0000000000000000000000000000000000000000 5555555555555555555555555555555555555555 A\0sub\0";
        let changes = changes(listed);
        let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["a b.txt", "new"]);
        assert_eq!(changes[1].old, NO_OBJECT);

        let out = b"2222 blob 5\nhello\n1111 blob 0\n\n9999 missing\n3333 blob 3\na\nb\n";
        let blobs = blobs(out).unwrap();
        assert_eq!(blobs, [&b"hello"[..], b"", b"", b"a\nb"]);
        assert_eq!(super::blobs(b"2222 blob 5\nhel"), None);
    }
}
