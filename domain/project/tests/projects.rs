//! Projects as a configuration file writes them: what is refused, and how requests resolve.

use gatehouse_events::RepositoryMode;
use gatehouse_project::{ProjectConfig, Projects, Request, ResolveError, Right};

#[derive(serde::Deserialize)]
struct File {
    projects: Vec<ProjectConfig>,
}

fn projects(toml: &str) -> Result<Projects, String> {
    let file: File = toml::from_str(toml).map_err(|e| e.to_string())?;
    Projects::new(file.projects).map_err(|e| e.to_string())
}

const TWO: &str = r#"
[[projects]]
name = "api"
repositories = [{ repo = "acme/api", branch = "main" },
                { repo = "acme/shared", mode = "read-only" },
                { repo = "acme/docs", mode = "existing", branch_name = "next" }]
channels = ["slack:C0API", "discord:1234567890"]
sops = ["bug-fix", "platform-check"]
default_sop = "bug-fix"
test_command = "cargo test"
settings = { language = "rust" }
run = ["group:devs"]
approve = ["group:leads", "ana"]

[[projects]]
name = "web"
repositories = [{ repo = "acme/web", mode = "new", branch_name = "gatehouse/work" },
                { repo = "acme/shared" }]
"#;

fn request<'a>(project: Option<&'a str>, repos: &'a [String]) -> Request<'a> {
    Request {
        project,
        repositories: repos,
        ..Request::default()
    }
}

#[test]
fn a_project_alone_checks_out_all_its_repositories() {
    let projects = projects(TWO).unwrap();
    let workspace = projects
        .resolve(request(Some("api"), &[]))
        .unwrap()
        .unwrap();
    assert_eq!(workspace.project, "api");
    let repos: Vec<_> = workspace
        .repositories
        .iter()
        .map(|r| (r.repo.as_str(), r.mode))
        .collect();
    assert_eq!(
        repos,
        [
            ("acme/api", RepositoryMode::Auto),
            ("acme/shared", RepositoryMode::ReadOnly),
            ("acme/docs", RepositoryMode::Existing)
        ]
    );
    assert_eq!(workspace.repositories[0].branch.as_deref(), Some("main"));
    assert_eq!(workspace.settings["test_command"], "cargo test");
    assert_eq!(workspace.settings["language"], "rust");
}

#[test]
fn named_repositories_are_a_subset_in_the_projects_order() {
    let projects = projects(TWO).unwrap();
    let repos = ["acme/docs".to_owned(), "ACME/Api".to_owned()];
    let workspace = projects
        .resolve(request(Some("api"), &repos))
        .unwrap()
        .unwrap();
    let names: Vec<_> = workspace
        .repositories
        .iter()
        .map(|r| r.repo.as_str())
        .collect();
    assert_eq!(names, ["acme/api", "acme/docs"]);

    // Without a project, the one project listing them all.
    let workspace = projects.resolve(request(None, &repos)).unwrap().unwrap();
    assert_eq!(workspace.project, "api");
}

#[test]
fn an_issue_brings_its_repository_and_its_project() {
    let projects = projects(TWO).unwrap();
    let workspace = projects
        .resolve(Request {
            issue_repo: Some("acme/web"),
            ..Request::default()
        })
        .unwrap()
        .unwrap();
    assert_eq!(workspace.project, "web");
    assert_eq!(
        workspace.repositories.len(),
        2,
        "all of the project's repositories"
    );
    let repos = ["acme/shared".to_owned()];
    let workspace = projects
        .resolve(Request {
            project: Some("web"),
            repositories: &repos,
            issue_repo: Some("acme/web"),
            sop: None,
        })
        .unwrap()
        .unwrap();
    let names: Vec<_> = workspace
        .repositories
        .iter()
        .map(|r| r.repo.as_str())
        .collect();
    assert_eq!(names, ["acme/web", "acme/shared"]);
}

#[test]
fn bad_requests_say_what_to_change() {
    let projects = projects(TWO).unwrap();
    let err = |r: Request<'_>| projects.resolve(r).unwrap_err().to_string();
    assert_eq!(
        err(request(Some("mobile"), &[])),
        "no project named `mobile`; the projects are `api`, `web`"
    );
    let outside = ["acme/web".to_owned()];
    assert_eq!(
        err(request(Some("api"), &outside)),
        "acme/web is not a repository of project `api`; its repositories are acme/api, acme/shared, acme/docs"
    );
    let nowhere = ["acme/secret".to_owned()];
    assert_eq!(
        err(request(None, &nowhere)),
        "no project lists acme/secret; add it to a [[projects]] entry's repositories"
    );
    let both = ["acme/shared".to_owned()];
    assert_eq!(
        err(request(None, &both)),
        "acme/shared belongs to several projects (api, web); name one with --project"
    );
    let mixed = ["acme/api".to_owned(), "acme/web".to_owned()];
    assert!(matches!(
        projects.resolve(request(None, &mixed)),
        Err(ResolveError::InNoProject(_))
    ));
    let glob = ["acme/*".to_owned()];
    assert_eq!(
        err(request(Some("api"), &glob)),
        "`acme/*` is not a repository (write owner/name)"
    );
    assert_eq!(
        err(Request {
            project: Some("api"),
            sop: Some("nightly"),
            ..Request::default()
        }),
        "project `api` does not allow the SOP `nightly`; it allows bug-fix, platform-check"
    );
}

#[test]
fn without_projects_a_run_names_no_repositories() {
    let none = Projects::default();
    assert_eq!(none.resolve(Request::default()), Ok(None));
    assert_eq!(
        none.resolve(Request {
            issue_repo: Some("acme/api"),
            ..Request::default()
        }),
        Ok(None),
        "an issue's run works on the issue's repository, as before projects"
    );
    let repos = ["acme/api".to_owned()];
    assert_eq!(
        none.resolve(request(None, &repos)),
        Err(ResolveError::NoProjects)
    );
}

#[test]
fn rights_lists_restrict_only_when_given() {
    let projects = projects(TWO).unwrap();
    let api = projects.get("api").unwrap();
    let devs = ["devs".to_owned()];
    assert!(api.grants(Right::Run, "bo", &devs));
    assert!(!api.grants(Right::Run, "bo", &[]));
    assert!(api.grants(Right::Approve, "ana", &[]));
    assert!(
        api.grants(Right::Converse, "anyone", &[]),
        "no list: no restriction"
    );
    assert_eq!(projects.of_channel("slack:C0API").unwrap().name(), "api");
    assert!(projects.of_channel("slack:C0OTHER").is_none());
}

#[test]
fn reads_follow_the_read_list_else_whoever_has_another_right() {
    let configured = projects(
        r#"
[[projects]]
name = "closed"
run = ["group:devs"]
converse = ["cy"]
approve = ["group:leads"]

[[projects]]
name = "listed"
run = ["group:devs"]
converse = ["cy"]
approve = ["group:leads"]
read = ["dee", "group:auditors"]

[[projects]]
name = "open"
run = ["group:devs"]
approve = ["group:leads"]

[[projects]]
name = "gated"
run = ["group:devs"]
converse = ["cy"]
"#,
    )
    .unwrap();
    let (devs, leads, auditors) = (
        ["devs".to_owned()],
        ["leads".to_owned()],
        ["auditors".to_owned()],
    );
    let closed = configured.get("closed").unwrap();
    assert!(closed.grants(Right::Read, "bo", &devs), "run gives read");
    assert!(closed.grants(Right::Read, "cy", &[]), "converse gives read");
    assert!(
        closed.grants(Right::Read, "bo", &leads),
        "approve gives read"
    );
    assert!(!closed.grants(Right::Read, "bo", &[]), "someone in no list");
    let listed = configured.get("listed").unwrap();
    assert!(listed.grants(Right::Read, "dee", &[]));
    assert!(listed.grants(Right::Read, "bo", &auditors));
    assert!(
        !listed.grants(Right::Read, "bo", &devs),
        "a read list is the whole list"
    );
    let open = configured.get("open").unwrap();
    assert!(
        open.grants(Right::Read, "bo", &[]),
        "anyone may converse there, so anyone may read"
    );
    let gated = configured.get("gated").unwrap();
    assert!(
        !gated.grants(Right::Read, "bo", &leads),
        "an empty approve list leaves gates to their approvers and lets nobody read"
    );
    assert!(gated.grants(Right::Read, "bo", &devs));
    assert_eq!(
        projects("[[projects]]\nname = \"api\"\nread = [\"group:\"]\n")
            .unwrap_err()
            .split(": read: ")
            .next(),
        Some("projects: project `api`"),
        "read entries are checked as the other lists' are"
    );
}

#[test]
fn bad_projects_are_refused_with_the_reason() {
    let err = |toml: &str| projects(toml).unwrap_err();
    let one = |repos: &str| format!("[[projects]]\nname = \"api\"\nrepositories = [{repos}]\n");
    assert_eq!(
        err(&one(r#"{ repo = "acme/*" }"#)),
        "projects: project `api`: `acme/*` is not owner/name (letters, digits, `-`, `_` and `.`; no globs)"
    );
    assert_eq!(
        err(&one(r#"{ repo = "acme/api", mode = "existing" }"#)),
        "projects: project `api`: acme/api: mode `existing` needs branch_name (the branch to check out and push to)"
    );
    assert_eq!(
        err(&one(r#"{ repo = "acme/api", branch_name = "x" }"#)),
        "projects: project `api`: acme/api: branch_name is for modes `new` and `existing`; mode `auto` names its branch after the requirement"
    );
    assert_eq!(
        err(&one(
            r#"{ repo = "acme/api", mode = "new", branch_name = "--force" }"#
        )),
        "projects: project `api`: acme/api: `--force` is not a branch name"
    );
    assert_eq!(
        err(&one(r#"{ repo = "acme/api" }, { repo = "other/api" }"#)),
        "projects: project `api`: two repositories are named `api`; a workspace holds each under its name"
    );
    assert!(err(&one(r#"{ repo = "acme/api", mode = "sideways" }"#)).contains("unknown variant"));
    assert_eq!(
        err("[[projects]]\nname = \"a\"\n[[projects]]\nname = \"a\"\n"),
        "projects: two projects are named `a`"
    );
    assert_eq!(
        err("[[projects]]\nname = \"a\"\nchannels = [\"C0API\"]\n"),
        "projects: project `a`: `C0API` is not a channel: write slack:<channel id> or discord:<channel id>"
    );
    assert_eq!(
        err(
            "[[projects]]\nname = \"a\"\nchannels = [\"slack:C1\"]\n[[projects]]\nname = \"b\"\nchannels = [\"slack:C1\"]\n"
        ),
        "projects: the channel `slack:C1` is in projects `a` and `b`; chat there must work on one"
    );
    assert_eq!(
        err("[[projects]]\nname = \"a\"\nsettings = { Test = \"x\" }\n"),
        "projects: project `a`: setting `Test`: names are lowercase letters, digits and `_` (they become GATEHOUSE_PROJECT_<NAME>)"
    );
    assert_eq!(
        err("[[projects]]\nname = \"a\"\napprove = [\"group:\"]\n"),
        "projects: project `a`: approve: `group:` names no group; write group:<name>"
    );
    assert_eq!(
        err("[[projects]]\nname = \"a\"\nmcp = [\"docs\", \"docs\"]\n"),
        "projects: project `a`: `mcp`: MCP server `docs` is listed twice; list it once"
    );
    assert!(
        err("[[projects]]\nname = \"a\"\nmcp = [\"gatehouse\"]\n")
            .contains("is Gatehouse's own server")
    );
    assert!(projects("[[projects]]\nname = \"a\"\nmcp = [\"docs\"]\n").is_ok());
}

#[test]
fn a_repository_off_github_is_frozen_with_where_it_is() {
    let projects = projects(
        r#"
[[projects]]
name = "own"
repositories = [{ repo = "team/app", url = "file:///srv/git/app.git" },
                { repo = "team/web", forge = "lab", path = "platform/web" },
                { repo = "team/docs", forge = "lab" },
                { repo = "acme/api" }]
"#,
    )
    .unwrap();
    let workspace = projects
        .resolve(request(Some("own"), &[]))
        .unwrap()
        .unwrap();
    let frozen: Vec<_> = workspace
        .repositories
        .iter()
        .map(|r| {
            (
                r.repo.as_str(),
                r.url.as_deref(),
                r.forge.as_deref(),
                r.path.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        frozen,
        [
            ("team/app", Some("file:///srv/git/app.git"), None, None),
            ("team/web", None, Some("lab"), Some("platform/web")),
            ("team/docs", None, Some("lab"), Some("team/docs")),
            ("acme/api", None, None, None),
        ]
    );
    let own = projects.get("own").unwrap();
    let on_github: Vec<bool> = own
        .config()
        .repositories
        .iter()
        .map(|r| r.on_github())
        .collect();
    assert_eq!(on_github, [false, false, false, true]);
}

#[test]
fn a_remote_and_its_credential_are_checked() {
    let one = |repository: &str| {
        projects(&format!(
            "[[projects]]\nname = \"own\"\nrepositories = [{{ {repository} }}]\n"
        ))
        .err()
        .unwrap_or_default()
    };
    assert_eq!(
        one(r#"repo = "team/app", url = "https://git.example.com/team/app.git", token = "t""#),
        ""
    );
    assert_eq!(
        one(
            r#"repo = "team/app", url = "ssh://git@host/team/app.git", deploy_key = "k", known_hosts = "/etc/kh""#
        ),
        ""
    );
    for (repository, says) in [
        (
            r#"repo = "team/app", url = "file:///srv/app.git", token = "t""#,
            "project `own`: team/app: `token` is sent over https, but the repository is on a file:// url; a file:// remote takes no credential",
        ),
        (
            r#"repo = "team/app", url = "git@host:app.git", token = "t""#,
            "on an ssh url; give it a `deploy_key` instead",
        ),
        (
            r#"repo = "team/app", url = "https://h/app.git", deploy_key = "k""#,
            "`deploy_key` is for ssh, but the repository is on an https url; give it a `token` instead",
        ),
        (
            r#"repo = "team/app", url = "https://h/app.git", token = "t", deploy_key = "k""#,
            "not both",
        ),
        (
            r#"repo = "team/app", url = "https://h/app.git", known_hosts = "/kh""#,
            "`known_hosts` is for ssh",
        ),
        (
            r#"repo = "team/app", url = "ext::sh -c id""#,
            "team/app: url:",
        ),
        (
            r#"repo = "team/app", forge = "a lab""#,
            "is not a forge's name",
        ),
        (
            r#"repo = "team/app", forge = "lab", path = "../x""#,
            "is not a path on a forge",
        ),
        (r#"repo = "team/app", path = "x/y""#, "name the forge"),
        (
            r#"repo = "app", url = "file:///srv/app.git""#,
            "is not owner/name",
        ),
    ] {
        let refused = one(repository);
        assert!(refused.contains(says), "{repository}: {refused}");
    }
}
