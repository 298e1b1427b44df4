//! What `config check` (and `up`, `serve`) says about where the projects' repositories
//! are.

use gatehouse_sop::Catalog;

use crate::config::Config;
use crate::settings::check::refusals;

/// Everything a check of `toml` refuses: what loading refuses, else every refusal of a
/// start.
fn check(toml: &str) -> Vec<String> {
    let config: Config = match toml::from_str(toml) {
        Ok(config) => config,
        Err(e) => return vec![e.to_string()],
    };
    if let Err(e) = config.validate() {
        return vec![e.to_string()];
    }
    refusals(&config, &Catalog::default())
}

fn project(repository: &str) -> String {
    format!("[[projects]]\nname = \"app\"\n[[projects.repositories]]\n{repository}\n")
}

fn refused(toml: &str, says: &str) {
    let problems = check(toml);
    assert!(
        problems.iter().any(|p| p.contains(says)),
        "expected a refusal saying `{says}`, got {problems:?}"
    );
}

#[test]
fn a_repository_with_its_own_url_needs_no_github() {
    assert_eq!(
        check(&project(
            "repo = \"team/app\"\nurl = \"file:///srv/git/app.git\""
        )),
        Vec::<String>::new()
    );
    // SAFETY: the variable is this test's own.
    unsafe {
        std::env::set_var(
            "REMOTES_TEST_DEPLOY_KEY",
            "-----BEGIN OPENSSH PRIVATE KEY-----",
        )
    };
    assert_eq!(
        check(&project(
            "repo = \"team/app\"\nurl = \"git@git.example.com:team/app.git\"\ndeploy_key = { env = \"REMOTES_TEST_DEPLOY_KEY\" }"
        )),
        Vec::<String>::new()
    );
}

// Building GitHub's client needs a runtime.
#[tokio::test]
async fn a_repository_on_github_without_github_is_refused_before_any_run() {
    refused(
        &project("repo = \"acme/api\""),
        "project `app`: acme/api is on GitHub (it names no `url` or `forge`), but there is no [github]",
    );
    let with_github = format!(
        "[github]\ntoken = \"ghp_x\"\n{}",
        project("repo = \"acme/api\"")
    );
    assert_eq!(check(&with_github), Vec::<String>::new());
    refused(
        &format!(
            "[github]\nwebhook_secrets = [\"s\"]\n{}",
            project("repo = \"acme/api\"")
        ),
        "but [github] has no `token` or app to clone it with",
    );
}

#[test]
fn a_credential_the_transport_does_not_take_is_refused() {
    refused(
        &project("repo = \"team/app\"\nurl = \"file:///srv/git/app.git\"\ntoken = \"t\""),
        "`token` is sent over https, but the repository is on a file:// url",
    );
    refused(
        &project("repo = \"team/app\"\nurl = \"ssh://git@host/team/app.git\"\ntoken = \"t\""),
        "give it a `deploy_key` instead",
    );
    refused(
        &project(
            "repo = \"team/app\"\nurl = \"https://git.example.com/team/app.git\"\ndeploy_key = \"k\"",
        ),
        "`deploy_key` is for ssh, but the repository is on an https url; give it a `token` instead",
    );
    refused(
        &project("repo = \"team/app\"\nurl = \"file:///srv/app.git\"\ndeploy_key = \"k\""),
        "`deploy_key` is for ssh",
    );
    refused(
        &project("repo = \"acme/api\"\ntoken = \"t\""),
        "GitHub's token is [github]'s `token`",
    );
}

#[test]
fn an_unparsable_url_is_refused() {
    refused(
        &project("repo = \"team/app\"\nurl = \"ext::sh -c whoami\""),
        "project `app`: team/app: url:",
    );
    refused(
        &project("repo = \"team/app\"\nurl = \"https://me:pw@git.example.com/app.git\""),
        "has credentials in it",
    );
    refused(
        &project("repo = \"team/app\"\nurl = \"relative/app.git\""),
        "is not a git remote",
    );
}

#[test]
fn a_forge_that_is_not_configured_is_refused() {
    refused(
        &project("repo = \"team/app\"\nforge = \"gitlab\""),
        "project `app`: team/app names the forge `gitlab`, but there is no [forges.gitlab]; no forges are configured",
    );
    let forge = "[forges.gitea]\nkind = \"gitea\"\napi_url = \"https://gitea.example.com/api/v1\"\ntoken = \"t\"\n";
    assert_eq!(
        check(&format!(
            "{forge}{}",
            project("repo = \"team/app\"\nforge = \"gitea\"")
        )),
        Vec::<String>::new()
    );
    refused(
        &format!(
            "{forge}{}",
            project("repo = \"team/app\"\nforge = \"gitea\"\npath = \"group/sub/app\"")
        ),
        "is no path on the Gitea forge `gitea`",
    );
    refused(
        &format!(
            "{forge}{}",
            project("repo = \"team/app\"\nforge = \"gitlab\"")
        ),
        "the forges are gitea",
    );
    refused(
        "[forges.x]\nkind = \"gitea\"\napi_url = \"ftp://x\"\ntoken = \"t\"\n",
        "is not an http(s) address",
    );
    refused(
        "[forges.x]\nkind = \"bitbucket\"\napi_url = \"https://x\"\ntoken = \"t\"\n",
        "unknown variant `bitbucket`",
    );
    refused(
        &project("repo = \"team/app\"\nurl = \"file:///srv/app.git\"\npath = \"team/app\""),
        "`path` is the repository's path on its `forge`",
    );
}

#[test]
fn an_unreadable_credential_is_named() {
    refused(
        &project(
            "repo = \"team/app\"\nurl = \"https://git.example.com/team/app.git\"\ntoken = { env = \"REMOTES_TEST_SURELY_UNSET\" }",
        ),
        "projects.app.repositories.team/app.token: environment variable REMOTES_TEST_SURELY_UNSET is not set",
    );
}

#[test]
fn a_token_over_plain_http_is_warned_of() {
    let config: Config = toml::from_str(
        "[forges.lab]\nkind = \"gitlab\"\napi_url = \"http://gitlab.lan/api/v4\"\ntoken = \"t\"\n[[projects]]\nname = \"app\"\n[[projects.repositories]]\nrepo = \"team/app\"\nurl = \"http://git.lan/team/app.git\"\ntoken = \"t\"\n",
    )
    .unwrap();
    let warnings = config.warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("forges.lab: api_url is plain http://")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("projects.app.repositories.team/app: its url is plain http://")),
        "{warnings:?}"
    );
}
