//! Credentials out of connection URLs, for logs and messages: `nats://user:pass@host`
//! and `postgres://user:pass@host/db` are configured with their password, and an operator
//! reading a log line or `gatehouse config check` must not learn it.

/// `url` with the password of each server (NATS takes a comma-separated list) and any
/// `password=` query parameter replaced by `****`; the user, host and the rest stay, so the
/// message still says where. A token in place of a user (`nats://TOKEN@host`) is hidden
/// too.
pub fn redact_url(url: &str) -> String {
    url.split(',').map(redact_one).collect::<Vec<_>>().join(",")
}

fn redact_one(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let mut out = url[..scheme_end].to_owned();
    match authority.rfind('@') {
        Some(at) => {
            let userinfo = &authority[..at];
            match userinfo.split_once(':') {
                Some((user, _password)) => out.push_str(&format!("{user}:****")),
                // NATS reads a lone user part as a token.
                None if url.starts_with("nats") || url.starts_with("tls") => out.push_str("****"),
                None => out.push_str(userinfo),
            }
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let tail = &rest[authority_end..];
    match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                        format!("{key}=****")
                    }
                    _ => pair.to_owned(),
                })
                .collect();
            out.push_str(path);
            out.push('?');
            out.push_str(&query.join("&"));
        }
        None => out.push_str(tail),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn passwords_are_hidden_and_the_rest_stays() {
        for (url, shown) in [
            (
                "postgres://gatehouse:s3cret@db.internal:5432/gatehouse?sslmode=require",
                "postgres://gatehouse:****@db.internal:5432/gatehouse?sslmode=require",
            ),
            (
                "postgres://u@db/x?password=s3cret&sslmode=disable",
                "postgres://u@db/x?password=****&sslmode=disable",
            ),
            (
                "postgres://root@127.0.0.1/test",
                "postgres://root@127.0.0.1/test",
            ),
            (
                "nats://alice:s3cret@nats:4222",
                "nats://alice:****@nats:4222",
            ),
            ("nats://s3cret@nats:4222", "nats://****@nats:4222"),
            (
                "nats://a:s3cret@n1:4222,nats://a:s3cret@n2:4222",
                "nats://a:****@n1:4222,nats://a:****@n2:4222",
            ),
            ("nats://127.0.0.1:4222", "nats://127.0.0.1:4222"),
            (
                "sqlite:/var/lib/gatehouse/gatehouse.db",
                "sqlite:/var/lib/gatehouse/gatehouse.db",
            ),
            ("postgres://u:p@ss@host/db", "postgres://u:****@host/db"),
            ("", ""),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
            assert!(!redact_url(url).contains("s3cret"));
        }
    }
}
