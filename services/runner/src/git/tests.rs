//! The token goes to the remote's URL only, and only with commands that talk to it.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use super::*;

/// A loopback HTTP server answering every request with `answer`; keeps each request's
/// head.
fn server(answer: impl Fn(&str) -> String + Send + 'static) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut head = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let response = answer(&head);
            kept.lock().unwrap().push(head);
            let _ = stream.write_all(response.as_bytes());
        }
    });
    (url, seen)
}

const NOT_FOUND: &str = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

async fn ls_remote(git: &Git<'_>, network: Network, url: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = git
        .command(dir.path(), None, network, &["ls-remote", url])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success(), "the fake has no repository");
}

fn authorized(heads: &[String]) -> bool {
    heads
        .iter()
        .any(|h| h.to_ascii_lowercase().contains("authorization: basic"))
}

#[tokio::test]
async fn the_token_goes_to_the_remote_only() {
    let (url, seen) = server(|_| NOT_FOUND.to_owned());
    let remote = format!("{url}/acme/api.git");
    let auth = Auth::Basic {
        user: "x-access-token",
        token: SecretString::from("ghs_scoped"),
    };
    let git = Git {
        remote: &remote,
        auth: &auth,
    };
    ls_remote(&git, Network::Remote, &remote).await;
    assert!(
        authorized(&seen.lock().unwrap()),
        "the remote gets the header"
    );

    // Another repository on the same host (a submodule's URL, say) gets nothing.
    seen.lock().unwrap().clear();
    ls_remote(&git, Network::Remote, &format!("{url}/evil/other.git")).await;
    let heads = seen.lock().unwrap().clone();
    assert!(!heads.is_empty() && !authorized(&heads), "{heads:?}");

    // Commands that stay in the workspace never have the token.
    seen.lock().unwrap().clear();
    ls_remote(&git, Network::Local, &remote).await;
    let heads = seen.lock().unwrap().clone();
    assert!(!heads.is_empty() && !authorized(&heads), "{heads:?}");
    let command = git.command(Path::new("/"), None, Network::Local, &["status"]);
    assert!(
        command
            .as_std()
            .get_envs()
            .all(|(k, _)| k != "GIT_CONFIG_VALUE_0"),
        "no token in a local command's environment"
    );
}

#[tokio::test]
async fn a_redirect_is_not_followed() {
    let (elsewhere, followed) = server(|_| NOT_FOUND.to_owned());
    let target = elsewhere.replace("127.0.0.1", "localhost");
    let (url, seen) = server(move |head| {
        let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
        format!(
            "HTTP/1.1 302 Found\r\nLocation: {target}{path}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
    });
    let remote = format!("{url}/acme/api.git");
    let auth = Auth::Basic {
        user: "x-access-token",
        token: SecretString::from("ghs_scoped"),
    };
    let git = Git {
        remote: &remote,
        auth: &auth,
    };
    ls_remote(&git, Network::Remote, &remote).await;
    assert!(!seen.lock().unwrap().is_empty());
    assert!(
        followed.lock().unwrap().is_empty(),
        "git went where it was redirected"
    );
}

#[tokio::test]
async fn only_the_remotes_protocol_is_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let auth = Auth::Basic {
        user: "x-access-token",
        token: SecretString::from("ghs_scoped"),
    };
    let git = Git {
        remote: "https://github.com/acme/api.git",
        auth: &auth,
    };
    let marker = dir.path().join("ran");
    let ext = format!("ext::sh -c touch% {}", marker.display());
    let out = git
        .command(dir.path(), None, Network::Remote, &["ls-remote", &ext])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(!marker.exists(), "an ext:: URL ran a command");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not allowed"), "{stderr}");
}

#[test]
fn an_ssh_key_reaches_git_only_as_a_file_the_ssh_command_names() {
    let scratch = tempfile::tempdir().unwrap();
    let key_file = scratch.path().join("key");
    let auth = Auth::Ssh {
        key_file: key_file.clone(),
        known_hosts: scratch.path().join("known_hosts"),
        strict: false,
    };
    let git = Git {
        remote: "git@git.example.com:team/app.git",
        auth: &auth,
    };
    let workspace = tempfile::tempdir().unwrap();
    let envs = |network| -> Vec<(String, String)> {
        let command = git.command(
            workspace.path(),
            Some(workspace.path()),
            network,
            &["fetch"],
        );
        command
            .as_std()
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v?.to_str()?.to_owned())))
            .collect()
    };
    let remote = envs(Network::Remote);
    let ssh = remote
        .iter()
        .find(|(k, _)| k == "GIT_SSH_COMMAND")
        .map(|(_, v)| v.clone())
        .expect("the ssh command is set");
    assert!(
        ssh.contains(&format!("-i '{}'", key_file.display())),
        "{ssh}"
    );
    for option in [
        "IdentitiesOnly=yes",
        "StrictHostKeyChecking=accept-new",
        "-F /dev/null",
        "BatchMode=yes",
    ] {
        assert!(ssh.contains(option), "{ssh}");
    }
    assert!(
        !ssh.contains(&workspace.path().display().to_string()),
        "nothing of it is in the workspace: {ssh}"
    );
    assert!(
        !remote.iter().any(|(k, _)| k.starts_with("GIT_CONFIG_KEY")),
        "no header for ssh"
    );
    // A command that stays in the repository has no way to the key.
    assert!(
        !envs(Network::Local)
            .iter()
            .any(|(k, _)| k == "GIT_SSH_COMMAND")
    );

    let strict = Auth::Ssh {
        key_file: PathBuf::from("/run/key's"),
        known_hosts: PathBuf::from("/etc/gatehouse/known_hosts"),
        strict: true,
    };
    let Auth::Ssh {
        key_file,
        known_hosts,
        strict,
    } = &strict
    else {
        unreachable!()
    };
    let command = Auth::ssh_command(key_file, known_hosts, *strict);
    assert!(command.contains("StrictHostKeyChecking=yes"), "{command}");
    assert!(
        command.contains("-i '/run/key'\\''s'"),
        "quoted for the shell: {command}"
    );
}
