//! The fake forge the tests stand on, at every level: the runner's delivery unit tests, the
//! end-to-end suites of `gatehouse-tests` and the binary-level tests of `gatehouse` all use
//! this one. It is a crate of its own because `gatehouse-tests` depends on
//! `gatehouse-runner`: the runner's unit tests could not use that crate without a second
//! copy of the runner's types.
//!
//! - [`github`]: a stateful fake of the GitHub REST endpoints Gatehouse calls.
//! - [`git`]: git run without the machine's configuration, and seeded bare repositories.
//! - [`gitlab`], [`gitea`]: stateful fakes of the GitLab and Gitea (Forgejo) REST
//!   endpoints Gatehouse calls for merge requests and pull requests.
//! - [`Forge`]: the scene of both, bare repositories under one temporary directory beside a
//!   fake GitHub, with verbs to add remotes and push to them as someone else.

pub mod git;
pub mod gitea;
pub mod github;
pub mod gitlab;
mod requests;
mod scene;

pub use requests::Request;

pub use scene::Forge;

/// Serves a fake outside API on a free loopback port for the rest of the test; returns its
/// URL.
pub async fn serve_fake(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}
