//! A repository's own git remote (`repositories[].url`): which transport it speaks, and
//! so which credential it may take. The one reading of a remote's URL, for the
//! configuration's check and for the runner choosing how git authenticates.

/// How git reaches a remote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// `file:///path`: a repository on this machine (or a mounted volume); no credential.
    File,
    /// `https://host/path` (or `http://`): a `token`, sent as an HTTP header.
    Http,
    /// `ssh://[user@]host[:port]/path` or `user@host:path`: a `deploy_key`.
    Ssh,
}

impl Transport {
    /// The protocol git must allow for it.
    pub fn protocol(self, url: &str) -> &'static str {
        match self {
            Self::File => "file",
            Self::Http if url.starts_with("http://") => "http",
            Self::Http => "https",
            Self::Ssh => "ssh",
        }
    }
}

/// The transport of `url`, or why it is no remote Gatehouse clones from: another scheme
/// (`ext::` runs a program), a user and password written in it (the token goes in
/// `token`), a relative path, spaces or control characters, a leading `-` (git would read
/// an option).
pub fn transport(url: &str) -> Result<Transport, String> {
    if url.is_empty() {
        return Err("the url is empty".into());
    }
    if url.starts_with('-') {
        return Err(format!(
            "`{url}` starts with `-`, which git reads as an option"
        ));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("`{url}` holds spaces or control characters"));
    }
    if let Some((scheme, rest)) = url.split_once("://") {
        let transport = match scheme {
            "file" => Transport::File,
            "https" | "http" => Transport::Http,
            "ssh" => Transport::Ssh,
            _ => {
                return Err(format!(
                    "`{url}`: the scheme `{scheme}` is not one Gatehouse clones over; write file://, https://, ssh:// or user@host:path"
                ));
            }
        };
        let (authority, path) = match transport {
            Transport::File => ("", rest),
            _ => rest.split_once('/').unwrap_or((rest, "")),
        };
        if transport == Transport::File && !path.starts_with('/') {
            return Err(format!(
                "`{url}`: a file:// url names an absolute path (file:///srv/git/app.git)"
            ));
        }
        if transport != Transport::File && (authority.is_empty() || path.is_empty()) {
            return Err(format!("`{url}` names no host and repository path"));
        }
        if transport == Transport::Http && authority.contains('@') {
            return Err(format!(
                "`{url}` has credentials in it; give the token as the repository's `token` (a secret) instead"
            ));
        }
        if path.split('/').any(|part| part == "..") {
            return Err(format!("`{url}` climbs out of its path with `..`"));
        }
        return Ok(transport);
    }
    if url.contains("::") {
        return Err(format!(
            "`{url}` names a git transport helper (`<helper>::`), which runs a program; write file://, https://, ssh:// or user@host:path"
        ));
    }
    // scp-like `user@host:path`: a colon before any slash.
    match url.split_once(':') {
        Some((host, path)) if !host.is_empty() && !host.contains('/') && !path.is_empty() => {
            if path.split('/').any(|part| part == "..") {
                return Err(format!("`{url}` climbs out of its path with `..`"));
            }
            Ok(Transport::Ssh)
        }
        _ => Err(format!(
            "`{url}` is not a git remote Gatehouse clones from: write file:///path, https://host/path, ssh://host/path or user@host:path"
        )),
    }
}

/// `url` to show and log: without a user name, the part that can be a secret.
pub fn shown(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('/') {
            Some((authority, path)) => {
                let host = authority.rsplit('@').next().unwrap_or(authority);
                format!("{scheme}://{host}/{path}")
            }
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transports_git_speaks_are_told_apart() {
        assert_eq!(transport("file:///srv/git/app.git"), Ok(Transport::File));
        assert_eq!(
            transport("https://git.example.com/team/app.git"),
            Ok(Transport::Http)
        );
        assert_eq!(
            transport("http://127.0.0.1:3000/team/app.git"),
            Ok(Transport::Http)
        );
        assert_eq!(
            transport("ssh://git@git.example.com:2222/team/app.git"),
            Ok(Transport::Ssh)
        );
        assert_eq!(
            transport("git@git.example.com:team/app.git"),
            Ok(Transport::Ssh)
        );
        assert_eq!(Transport::Http.protocol("http://h/x"), "http");
        assert_eq!(Transport::Http.protocol("https://h/x"), "https");
    }

    #[test]
    fn what_is_no_remote_is_refused_saying_why() {
        for (url, says) in [
            ("", "empty"),
            ("ext::sh -c touch% /tmp/x", "spaces"),
            ("ext::sh", "transport helper"),
            ("fd::17", "transport helper"),
            ("--upload-pack=touch /tmp/x", "starts with `-`"),
            ("file://relative/path", "absolute path"),
            ("https://user:s3cret@example.com/a.git", "credentials"),
            ("https://example.com", "no host and repository path"),
            ("ftp://example.com/a.git", "scheme `ftp`"),
            ("../app.git", "not a git remote"),
            ("/srv/git/app.git", "not a git remote"),
            ("file:///srv/../etc", "`..`"),
            ("git@host:../x", "`..`"),
        ] {
            let refused = transport(url).unwrap_err();
            assert!(refused.contains(says), "{url}: {refused}");
        }
    }

    #[test]
    fn a_user_name_is_not_shown() {
        assert_eq!(
            shown("ssh://git@host:22/team/app.git"),
            "ssh://host:22/team/app.git"
        );
        assert_eq!(shown("file:///srv/app.git"), "file:///srv/app.git");
    }
}
