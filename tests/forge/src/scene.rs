//! The forge as one scene: bare repositories in a temporary directory standing in for
//! GitHub's git, beside a fake GitHub for its API.

use std::path::{Path, PathBuf};

use crate::git::{git, seeded_repository};
use crate::github::FakeGithub;

/// Remotes under `git/<owner>/<name>.git` of a temporary directory, and a fake GitHub.
pub struct Forge {
    /// Holds the remotes (`git/`), their seeds (`seed/`) and other people's clones
    /// (`others/`); a test may keep its own files beside them.
    pub tmp: tempfile::TempDir,
    /// The API side of the forge.
    pub github: FakeGithub,
}

impl Forge {
    /// A forge with no repositories yet; its fake GitHub stops with the test's runtime.
    pub async fn start() -> Self {
        Self {
            tmp: tempfile::tempdir().expect("forge directory"),
            github: FakeGithub::start().await,
        }
    }

    /// `relative` inside the forge's directory.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.tmp.path().join(relative)
    }

    /// Where a deliverer clones from and pushes to: `<git_url>/<owner>/<name>.git`.
    pub fn git_url(&self) -> String {
        format!("file://{}", self.path("git").display())
    }

    /// The bare repository standing in for `repo` on GitHub.
    pub fn bare(&self, repo: &str) -> PathBuf {
        self.path(&format!("git/{repo}.git"))
    }

    /// A remote `repo` with a `README.md` (`<repo>\n`) on `main`, and `files` more under
    /// `src/`, in one commit.
    pub fn remote(&self, repo: &str, files: usize) -> PathBuf {
        let bare = self.bare(repo);
        seeded_repository(&bare, &self.path(&format!("seed/{repo}")), "seed", |seed| {
            write_files(seed, repo, files)
        });
        bare
    }

    /// A clone of the remote `repo` for pushing to it as someone else would.
    pub fn someone_else(&self, repo: &str) -> PathBuf {
        let other = self.path(&format!("others/{repo}"));
        std::fs::create_dir_all(other.parent().expect("others/")).expect("others directory");
        let (bare, dest) = (self.bare(repo), other.to_string_lossy().into_owned());
        git(
            self.tmp.path(),
            &["clone", "--quiet", &bare.to_string_lossy(), &dest],
        );
        other
    }
}

/// The seed of [`Forge::remote`].
fn write_files(seed: &Path, repo: &str, files: usize) {
    std::fs::write(seed.join("README.md"), format!("{repo}\n")).expect("README.md");
    for n in 0..files {
        let file = seed.join(format!("src/{}/file{n}.txt", n % 10));
        std::fs::create_dir_all(file.parent().expect("src/")).expect("src directory");
        std::fs::write(file, format!("{repo} {n}\n").repeat(20)).expect("seed file");
    }
}
