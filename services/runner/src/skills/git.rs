//! A skill from a git repository at a pinned commit: fetched by the runner with the same
//! hardened git as repositories ([`crate::git`]: no global or system configuration, no
//! hooks, helpers or redirects, only the URL's own protocol), into a bare repository
//! cached by commit under the data directory, then read from git's objects — never checked
//! out, so no filter or attribute of the repository runs — with a link (mode 120000) or a
//! submodule (160000) refused like a link in a folder.

use std::path::{Path, PathBuf};

use gatehouse_agent::{MAX_FILE_BYTES, SkillError, SkillFiles};

use crate::git::{Auth, Git, Network, checked, run};

/// Reads skill `name` from `url` at commit `rev` (40 hex digits, checked by the
/// configuration), in `subdir` when given; `cache` is the runner's folder of fetched skill
/// commits.
pub(crate) async fn read(
    name: &str,
    url: &str,
    rev: &str,
    subdir: Option<&str>,
    cache: &Path,
) -> Result<SkillFiles, String> {
    let fail = |e: String| format!("skill {name}: {e}");
    let repo = fetched(url, rev, cache).await.map_err(fail)?;
    // No credentials: a skill's repository is read as the public reads it.
    let git = Git {
        remote: url,
        auth: &Auth::None,
    };
    let tree = match subdir {
        Some(dir) => format!("{rev}:{dir}"),
        None => format!("{rev}^{{tree}}"),
    };
    let listing = checked(
        git_dir(&git, &repo, &["ls-tree", "-r", "-z", "--full-tree", &tree]),
        "ls-tree",
    )
    .await
    .map_err(|e| match subdir {
        Some(dir) => fail(format!("{dir} is not a folder at {rev}: {e}")),
        None => fail(e),
    })?;
    let mut skill = SkillFiles::new(name).map_err(|e| e.to_string())?;
    for line in listing.split('\0').filter(|l| !l.is_empty()) {
        // `<mode> <type> <object>\t<path>`
        let (head, path) = line
            .split_once('\t')
            .ok_or_else(|| fail(format!("git ls-tree printed {line:?}")))?;
        let mut fields = head.split(' ');
        let (mode, object) = (fields.next().unwrap_or(""), fields.nth(1).unwrap_or(""));
        gatehouse_agent::check_path(name, path).map_err(|e| e.to_string())?;
        match mode {
            "100644" | "100755" => {}
            "120000" => {
                return Err(SkillError::Symlink {
                    name: name.to_owned(),
                    path: path.to_owned(),
                }
                .to_string());
            }
            _ => {
                return Err(SkillError::Special {
                    name: name.to_owned(),
                    path: path.to_owned(),
                }
                .to_string());
            }
        }
        let size: u64 = checked(
            git_dir(&git, &repo, &["cat-file", "-s", object]),
            "cat-file",
        )
        .await
        .map_err(fail)?
        .trim()
        .parse()
        .map_err(|_| fail(format!("git gave no size for {path}")))?;
        skill.check_size(path, size).map_err(|e| e.to_string())?;
        let bytes = blob(&git, &repo, object).await.map_err(fail)?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(fail(format!("{path} grew while read")));
        }
        skill.add(path, bytes).map_err(|e| e.to_string())?;
    }
    skill.check().map_err(|e| e.to_string())?;
    Ok(skill)
}

/// The bare repository holding commit `rev` of `url`: the cached one when it has it,
/// else fetched (the commit alone when the server serves one by its id, else everything).
async fn fetched(url: &str, rev: &str, cache: &Path) -> Result<PathBuf, String> {
    let repo = cache.join(format!("{rev}.git"));
    let git = Git {
        remote: url,
        auth: &Auth::None,
    };
    let commit = format!("{rev}^{{commit}}");
    if repo.exists()
        && run(
            git_dir(&git, &repo, &["cat-file", "-e", &commit]),
            "cat-file",
        )
        .await?
        .code
            == Some(0)
    {
        return Ok(repo);
    }
    // Fetched beside the cache and moved in whole, so a half-fetched one is never used.
    tokio::fs::create_dir_all(cache)
        .await
        .map_err(|e| format!("{}: {e}", cache.display()))?;
    let staging = Staging(cache.join(format!(".fetch-{}", uuid::Uuid::new_v4())));
    tokio::fs::create_dir_all(&staging.0)
        .await
        .map_err(|e| format!("{}: {e}", staging.0.display()))?;
    let bare = staging.0.join("repo.git");
    checked(
        git.command(
            &staging.0,
            None,
            Network::Local,
            &["init", "-q", "--bare", "repo.git"],
        ),
        "init",
    )
    .await?;
    let by_id = run(
        git_dir(
            &git,
            &bare,
            &["fetch", "-q", "--depth", "1", "--no-tags", url, rev],
        ),
        "fetch",
    )
    .await?;
    if by_id.code != Some(0) {
        checked(
            git_dir(
                &git,
                &bare,
                &[
                    "fetch",
                    "-q",
                    "--no-tags",
                    url,
                    "+refs/heads/*:refs/heads/*",
                    "+refs/tags/*:refs/tags/*",
                ],
            ),
            "fetch",
        )
        .await
        .map_err(|e| format!("fetching {url}: {e}"))?;
    }
    checked(
        git_dir(&git, &bare, &["cat-file", "-e", &commit]),
        "cat-file",
    )
    .await
    .map_err(|_| format!("{url} has no commit {rev}"))?;
    match tokio::fs::rename(&bare, &repo).await {
        Ok(()) => Ok(repo),
        // Another attempt cached it meanwhile.
        Err(_) if repo.exists() => Ok(repo),
        Err(e) => Err(format!("{}: {e}", repo.display())),
    }
}

/// `git <args>` on the bare repository `repo`.
fn git_dir(git: &Git<'_>, repo: &Path, args: &[&str]) -> tokio::process::Command {
    let mut command = git.command(repo, None, Network::Local, args);
    command.env("GIT_DIR", repo);
    command
}

/// One blob's bytes.
async fn blob(git: &Git<'_>, repo: &Path, object: &str) -> Result<Vec<u8>, String> {
    let output = git_dir(git, repo, &["cat-file", "blob", object])
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| format!("git cat-file: {e}"))?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(format!(
            "git cat-file failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// A folder removed when dropped: a fetch that failed or was cancelled leaves nothing.
struct Staging(PathBuf);

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
