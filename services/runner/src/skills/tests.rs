//! Reading skills from folders and git commits: what is refused, and what is read.

use std::path::Path;

use super::{folder, git};

const SKILL_MD: &str = "---\nname: rust-style\ndescription: How we write Rust.\n---\nUse fmt.\n";

fn skill_folder(root: &Path) {
    std::fs::create_dir_all(root.join("scripts")).expect("dirs");
    std::fs::write(root.join("SKILL.md"), SKILL_MD).expect("SKILL.md");
    std::fs::write(root.join("scripts/check.sh"), "cargo clippy\n").expect("script");
}

#[test]
fn a_folder_is_read_whole_and_sorted() {
    let dir = tempfile::tempdir().expect("dir");
    skill_folder(dir.path());
    let skill = folder::read("rust-style", dir.path(), "").expect("read");
    let paths: Vec<&String> = skill.files().keys().collect();
    assert_eq!(paths, ["SKILL.md", "scripts/check.sh"]);
}

#[test]
fn links_and_special_files_are_refused_by_path() {
    let dir = tempfile::tempdir().expect("dir");
    skill_folder(dir.path());
    std::os::unix::fs::symlink("/etc/passwd", dir.path().join("scripts/x")).expect("link");
    let err = folder::read("rust-style", dir.path(), "").expect_err("a link");
    assert_eq!(
        err,
        "skill rust-style: scripts/x is a symbolic link; skills may hold only files and folders"
    );

    let dir = tempfile::tempdir().expect("dir");
    skill_folder(dir.path());
    std::os::unix::fs::symlink("/etc", dir.path().join("etc")).expect("dir link");
    let err = folder::read("rust-style", dir.path(), "").expect_err("a link");
    assert!(err.contains("etc is a symbolic link"), "{err}");

    let dir = tempfile::tempdir().expect("dir");
    skill_folder(dir.path());
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let err = folder::read("rust-style", dir.path(), "").expect_err("a FIFO");
    assert!(err.contains("pipe is neither a file nor a folder"), "{err}");
}

#[test]
fn oversize_and_missing_or_bad_skill_md_are_refused() {
    let dir = tempfile::tempdir().expect("dir");
    skill_folder(dir.path());
    let big = usize::try_from(gatehouse_agent::MAX_FILE_BYTES).expect("fits") + 1;
    std::fs::write(dir.path().join("big.bin"), vec![0u8; big]).expect("big");
    let err = folder::read("rust-style", dir.path(), "").expect_err("too big");
    assert!(err.contains("big.bin is 1048577 bytes"), "{err}");

    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("README.md"), "hi").expect("readme");
    let err = folder::read("rust-style", dir.path(), "").expect_err("no SKILL.md");
    assert_eq!(
        err,
        "skill rust-style: no SKILL.md at the top of its folder"
    );

    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("SKILL.md"), "# Rust style\n").expect("no front matter");
    let err = folder::read("rust-style", dir.path(), "").expect_err("bad front matter");
    assert!(err.contains("SKILL.md has no front matter"), "{err}");

    let missing = folder::read("rust-style", Path::new("/nonexistent/x"), "").expect_err("none");
    assert!(
        missing.starts_with("skill rust-style: reading"),
        "{missing}"
    );
}

#[test]
fn a_repository_lists_its_skills_and_refuses_a_linked_folder() {
    let repo = tempfile::tempdir().expect("repo");
    assert!(
        folder::repository_skills(repo.path())
            .expect("none")
            .is_empty()
    );
    let skills = repo.path().join(".gatehouse/skills");
    skill_folder(&skills.join("rust-style"));
    std::fs::create_dir_all(skills.join("notes")).expect("not a skill");
    assert_eq!(
        folder::repository_skills(repo.path()).expect("one"),
        ["rust-style"]
    );
    let read =
        folder::read("rust-style", repo.path(), ".gatehouse/skills/rust-style/").expect("read");
    assert_eq!(read.files().len(), 2);

    let other = tempfile::tempdir().expect("other");
    skill_folder(&other.path().join("rust-style"));
    std::os::unix::fs::symlink(other.path(), skills.join("linked")).expect("link");
    let err = folder::repository_skills(repo.path()).expect_err("a link");
    assert!(err.contains("is a symbolic link"), "{err}");

    let linked = tempfile::tempdir().expect("repo");
    std::fs::create_dir_all(linked.path().join(".gatehouse")).expect(".gatehouse");
    std::os::unix::fs::symlink(other.path(), linked.path().join(".gatehouse/skills"))
        .expect("link");
    let err = folder::repository_skills(linked.path()).expect_err("a linked skills folder");
    assert!(
        err.contains(".gatehouse/skills is a symbolic link"),
        "{err}"
    );
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test]
async fn a_git_skill_is_read_at_its_commit_and_cached() {
    let origin = tempfile::tempdir().expect("origin");
    git(origin.path(), &["init", "-q", "-b", "main"]);
    skill_folder(&origin.path().join("house"));
    git(origin.path(), &["add", "."]);
    git(origin.path(), &["commit", "-qm", "one"]);
    let first = git(origin.path(), &["rev-parse", "HEAD"]);
    std::fs::write(origin.path().join("house/SKILL.md"), "changed").expect("change");
    git(origin.path(), &["commit", "-qam", "two"]);
    let url = format!("file://{}", origin.path().display());
    let cache = tempfile::tempdir().expect("cache");

    let skill = git::read("rust-style", &url, &first, Some("house"), cache.path())
        .await
        .expect("the first commit");
    assert_eq!(skill.files()["SKILL.md"], SKILL_MD.as_bytes());
    assert!(cache.path().join(format!("{first}.git")).is_dir());
    // Cached: read again with the origin gone.
    drop(origin);
    let again = git::read("rust-style", &url, &first, Some("house"), cache.path())
        .await
        .expect("from the cache");
    assert_eq!(again, skill);

    let missing = "0".repeat(40);
    let err = git::read("rust-style", &url, &missing, None, cache.path())
        .await
        .expect_err("no such repository any more");
    assert!(err.starts_with("skill rust-style: "), "{err}");
}

#[tokio::test]
async fn a_git_skill_with_a_link_is_refused() {
    let origin = tempfile::tempdir().expect("origin");
    git(origin.path(), &["init", "-q", "-b", "main"]);
    skill_folder(origin.path());
    std::os::unix::fs::symlink("/etc/passwd", origin.path().join("scripts/x")).expect("link");
    git(origin.path(), &["add", "."]);
    git(origin.path(), &["commit", "-qm", "one"]);
    let rev = git(origin.path(), &["rev-parse", "HEAD"]);
    let cache = tempfile::tempdir().expect("cache");
    let url = format!("file://{}", origin.path().display());
    let err = git::read("rust-style", &url, &rev, None, cache.path())
        .await
        .expect_err("a link");
    assert_eq!(
        err,
        "skill rust-style: scripts/x is a symbolic link; skills may hold only files and folders"
    );
    let missing = git::read("rust-style", &url, &rev, Some("nowhere"), cache.path())
        .await
        .expect_err("no such folder");
    assert!(missing.contains("nowhere is not a folder"), "{missing}");
}
