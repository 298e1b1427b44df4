//! Workspaces prepared and delivered end to end on local bare repositories: see
//! [`preparing`] and [`delivering`].

mod delivering;
mod preparing;

/// The branch the repository at `dir` is on.
fn branch_of(dir: &std::path::Path) -> String {
    super::scene::git(dir, &["symbolic-ref", "--short", "HEAD"])
        .trim()
        .to_owned()
}
