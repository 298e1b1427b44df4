//! The one way tests run git: without the user's or the system's configuration, as a test
//! author on branch `main`, with automatic gc off, so what a test sees does not depend on
//! the machine. And bare repositories seeded with one commit, standing in for GitHub's.

use std::path::Path;

/// Runs git in `dir` and returns its output; panics with git's message when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@localhost"])
        .args(["-c", "init.defaultBranch=main", "-c", "gc.auto=0"])
        .args(["-c", "protocol.file.allow=always"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Commits everything in a test clone as a test author.
pub fn commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "--all"]);
    let author = ["-c", "user.name=t", "-c", "user.email=t@t"];
    git(
        dir,
        &[&author[..], &["commit", "--quiet", "-m", message]].concat(),
    );
}

/// A bare repository at `bare` whose `main` is one commit, `message`, of what `write` puts
/// in a fresh clone at `seed` (which stays, for the test to look at).
pub fn seeded_repository(bare: &Path, seed: &Path, message: &str, write: impl FnOnce(&Path)) {
    std::fs::create_dir_all(bare).expect("repository directory");
    git(
        bare,
        &["init", "--quiet", "--bare", "--initial-branch=main"],
    );
    std::fs::create_dir_all(seed).expect("seed directory");
    git(seed, &["init", "--quiet", "--initial-branch=main"]);
    write(seed);
    commit_all(seed, message);
    git(seed, &["push", "--quiet", &bare.to_string_lossy(), "main"]);
}

/// A bare repository with one commit on `main` (a `README.md`), standing in for GitHub's.
pub fn bare_repository(path: &Path) {
    seeded_repository(path, &path.with_extension("seed"), "init", |seed| {
        std::fs::write(seed.join("README.md"), "Hello World\n").expect("seed file");
    });
}
