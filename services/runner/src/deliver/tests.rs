//! Workspaces prepared and delivered end to end on local bare repositories: see
//! [`preparing`] and [`delivering`]; what a delivery refuses to push, [`guarded`]; a
//! delivery answering feedback on its pull request, [`answering`]; repositories that are
//! not on GitHub, [`remotes`].

mod answering;
mod delivering;
mod guarded;
mod mirroring;
mod preparing;
mod remotes;

/// The branch the repository at `dir` is on.
fn branch_of(dir: &std::path::Path) -> String {
    super::scene::git(dir, &["symbolic-ref", "--short", "HEAD"])
        .trim()
        .to_owned()
}
