//! The client verbs `token ...` and `person ...`: who may act, and as whom.

use gatehouse_ingest::views::*;

use crate::cli::args::{PersonCommand, TokenCommand};
use crate::cli::client::{Client, path_segment};
use crate::cli::runs::print;

/// `gatehouse login [--for PERSON]`: a one-time console link, printed once.
pub async fn login(client: &Client, person: Option<String>, as_json: bool) -> anyhow::Result<()> {
    let created: LoginLinkCreated = client
        .post("/login-links", &CreateLoginLink { person })
        .await?;
    let link = created
        .url
        .clone()
        .unwrap_or_else(|| format!("{}{}", client.server(), created.path));
    print(as_json, &created, || {
        format!(
            "{link}\n(signs {} in to the console once, until {}; with {})",
            created.person,
            created.expires_at.format("%Y-%m-%d %H:%M UTC"),
            scope_names(&created.scopes)
        )
    })
}

/// `gatehouse token ...`
pub async fn token(client: &Client, command: TokenCommand, as_json: bool) -> anyhow::Result<()> {
    match command {
        TokenCommand::Create {
            person,
            name,
            scopes,
            expires,
            for_agent,
        } => {
            let scopes = match scopes.as_slice() {
                [] => None,
                names => Some(
                    names
                        .iter()
                        .map(|n| {
                            Scope::parse(n).ok_or_else(|| {
                                anyhow::anyhow!(
                                    "`{n}` is not a scope; the scopes are read, run, decide and admin"
                                )
                            })
                        })
                        .collect::<anyhow::Result<Vec<_>>>()?,
                ),
            };
            let body = CreateToken {
                person,
                name,
                scopes,
                expires_in: expires,
                for_agent,
            };
            let created: TokenCreated = client.post("/tokens", &body).await?;
            print(as_json, &created, || {
                let expiry = created
                    .expires_at
                    .map(|t| format!(", until {}", t.format("%Y-%m-%d %H:%M UTC")))
                    .unwrap_or_default();
                let agent = if created.for_agent {
                    "; made for an agent, it never decides a gate"
                } else {
                    ""
                };
                format!(
                    "{}\n(shown once; token `{}` acts for {} with {}{expiry}{agent})",
                    created.token,
                    created.name,
                    created.person,
                    scope_names(&created.scopes)
                )
            })
        }
        TokenCommand::List { person } => {
            let path = match person {
                Some(p) => format!("/tokens?person={}", path_segment(&p)),
                None => "/tokens".to_owned(),
            };
            let tokens: Vec<TokenView> = client.get(&path).await?;
            print(as_json, &tokens, || {
                let mut out = format!(
                    "{:<24}  {:<16}  {:<24}  {:<16}  EXPIRES\n",
                    "NAME", "PERSON", "SCOPES", "CREATED BY"
                );
                for t in &tokens {
                    out.push_str(&format!(
                        "{:<24}  {:<16}  {:<24}  {:<16}  {}\n",
                        t.name,
                        t.person,
                        scope_names(&t.scopes),
                        t.created_by,
                        t.expires_at
                            .map(|e| e.format("%Y-%m-%d %H:%M").to_string())
                            .unwrap_or_else(|| "never".into())
                    ));
                }
                out.trim_end().to_owned()
            })
        }
        TokenCommand::Revoke { name } => {
            client
                .delete(&format!("/tokens/{}", path_segment(&name)))
                .await?;
            print(as_json, &serde_json::json!({ "revoked": name }), || {
                format!("revoked token `{name}`")
            })
        }
    }
}

/// `gatehouse person ...`
pub async fn person(client: &Client, command: PersonCommand, as_json: bool) -> anyhow::Result<()> {
    match command {
        PersonCommand::Add {
            id,
            github,
            slack,
            discord,
            groups,
        } => {
            let body = AddPerson {
                id,
                github,
                slack,
                discord,
                groups,
            };
            let added: PersonView = client.post("/people", &body).await?;
            print(as_json, &added, || {
                let groups = if added.groups.is_empty() {
                    "no groups".to_owned()
                } else {
                    format!("groups {}", added.groups.join(", "))
                };
                format!("added {} ({groups})", added.id)
            })
        }
        PersonCommand::List => {
            let people: Vec<PersonView> = client.get("/people").await?;
            print(as_json, &people, || {
                let mut out = format!(
                    "{:<16}  {:<24}  {:<16}  {:<20}  {:<16}  SOURCE\n",
                    "ID", "GROUPS", "GITHUB", "SLACK", "DISCORD"
                );
                let or_dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
                for p in &people {
                    out.push_str(&format!(
                        "{:<16}  {:<24}  {:<16}  {:<20}  {:<16}  {}\n",
                        p.id,
                        p.groups.join(","),
                        or_dash(&p.github),
                        or_dash(&p.slack),
                        or_dash(&p.discord),
                        p.source
                    ));
                }
                out.trim_end().to_owned()
            })
        }
        PersonCommand::Remove { id } => {
            client
                .delete(&format!("/people/{}", path_segment(&id)))
                .await?;
            print(as_json, &serde_json::json!({ "removed": id }), || {
                format!("removed {id} and revoked their tokens")
            })
        }
    }
}

fn scope_names(scopes: &[Scope]) -> String {
    scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
