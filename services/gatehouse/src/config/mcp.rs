//! `[mcp.NAME]`: MCP servers roles and projects attach (`mcp = ["docs"]`). Either a
//! program the agent's CLI starts inside the sandbox (`command`, its image must have it)
//! or a remote streamable-HTTP server (`url`) the sandbox reaches only through the
//! runner, which adds the server's secret (`token`, `headers`) there: like a provider's
//! `key`, it never enters a sandbox.

use std::collections::BTreeMap;
use std::path::PathBuf;

use gatehouse_agent::McpDefinition;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use crate::secret::Secret;

/// One `[mcp.NAME]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// The argv of a stdio server, run by the CLI inside the sandbox:
    /// `["docs-mcp", "--stdio"]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Variables a stdio server runs with (no secrets: the sandbox sees them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// A remote server's streamable-HTTP address, `https://...`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A remote server's bearer token, sent by the runner as `Authorization: Bearer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    /// Further headers the runner sends a remote server, each a secret with an optional
    /// `prefix`: `headers = { X-Api-Key = { env = "DOCS_KEY" } }`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, McpHeader>,
}

/// A header's value: a secret, after `prefix` (`"Bearer "`).
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "HeaderForm")]
pub struct McpHeader {
    /// Written before the secret's value.
    pub prefix: String,
    /// The value.
    pub value: Secret,
}

/// A header as the file writes it: a secret, or `{ env | file, prefix }`.
#[derive(Deserialize)]
#[serde(
    untagged,
    expecting = "a string, { env = \"NAME\" } or { file = \"/path\" }, optionally with prefix = \"Bearer \""
)]
enum HeaderForm {
    Prefixed(Prefixed),
    Plain(Secret),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Prefixed {
    prefix: String,
    #[serde(default)]
    env: Option<String>,
    #[serde(default)]
    file: Option<PathBuf>,
}

impl TryFrom<HeaderForm> for McpHeader {
    type Error = &'static str;

    fn try_from(form: HeaderForm) -> Result<Self, Self::Error> {
        match form {
            HeaderForm::Plain(value) => Ok(Self {
                prefix: String::new(),
                value,
            }),
            HeaderForm::Prefixed(Prefixed { prefix, env, file }) => {
                let value = match (env, file) {
                    (Some(env), None) => Secret::Env { env },
                    (None, Some(file)) => Secret::File { file },
                    _ => return Err("a header with a `prefix` needs one of `env` or `file`"),
                };
                Ok(Self { prefix, value })
            }
        }
    }
}

/// Writes the secret's source, never a literal's value (as [`Secret`] does).
impl Serialize for McpHeader {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.prefix.is_empty() {
            return self.value.serialize(serializer);
        }
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("prefix", &self.prefix)?;
        match &self.value {
            Secret::Env { env } => map.serialize_entry("env", env)?,
            Secret::File { file } => map.serialize_entry("file", file)?,
            Secret::Literal(_) => map.serialize_entry("value", "<redacted>")?,
        }
        map.end()
    }
}

/// Headers the runner sets itself or that belong to one connection: never configurable.
const RESERVED_HEADERS: [&str; 11] = [
    "host",
    "content-length",
    "content-type",
    "accept",
    "connection",
    "transfer-encoding",
    "te",
    "upgrade",
    "keep-alive",
    "proxy-authorization",
    "mcp-session-id",
];

impl McpConfig {
    /// What the runner hands a CLI, or why this section cannot be used: exactly one of
    /// `command` and `url`, an http(s) URL with a host and no credentials, the stdio keys
    /// only with `command` and the secret ones only with `url`.
    pub fn definition(&self) -> Result<McpDefinition, String> {
        match (self.command.is_empty(), &self.url) {
            (false, Some(_)) => Err(
                "give either `command` (a program run inside the sandbox) or `url` (a remote \
                 server), not both"
                    .to_owned(),
            ),
            (true, None) => Err(
                "needs `command` (a program run inside the sandbox, e.g. command = \
                 [\"docs-mcp\", \"--stdio\"]) or `url` (a remote server, e.g. url = \
                 \"https://docs.example.com/mcp\")"
                    .to_owned(),
            ),
            (false, None) => {
                if self.token.is_some() || !self.headers.is_empty() {
                    return Err(
                        "`token` and `headers` are for a remote server (`url`); a stdio server's \
                         variables go in `env`, where the sandbox sees them"
                            .to_owned(),
                    );
                }
                let definition = McpDefinition::Stdio {
                    command: self.command.clone(),
                    env: self.env.clone(),
                };
                definition.check().map_err(|e| e.to_string())?;
                Ok(definition)
            }
            (true, Some(_)) => {
                if !self.env.is_empty() {
                    return Err(
                        "`env` is for a stdio server (`command`); a remote server's secrets go \
                         in `token` or `headers`"
                            .to_owned(),
                    );
                }
                self.url()?;
                self.check_headers()?;
                Ok(McpDefinition::Remote)
            }
        }
    }

    /// A remote server's address, checked.
    pub fn url(&self) -> Result<url::Url, String> {
        let Some(text) = &self.url else {
            return Err("has no `url`".to_owned());
        };
        let url = url::Url::parse(text).map_err(|e| {
            format!("url {text:?} is not a URL ({e}); write e.g. \"https://docs.example.com/mcp\"")
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(format!(
                "url {text:?} must be an http:// or https:// address with a host"
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "url {text:?} carries credentials; put them in `token` or `headers` instead"
            ));
        }
        if url.fragment().is_some() {
            return Err(format!("url {text:?} has a fragment; remove it"));
        }
        Ok(url)
    }

    fn check_headers(&self) -> Result<(), String> {
        for name in self.headers.keys() {
            let lower = name.to_ascii_lowercase();
            let token_char = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
            if name.is_empty() || !name.chars().all(token_char) {
                return Err(format!("header {name:?} is not a header name"));
            }
            if RESERVED_HEADERS.contains(&lower.as_str()) {
                return Err(format!(
                    "header `{name}` is set by the runner itself; remove it"
                ));
            }
            if lower == "authorization" && self.token.is_some() {
                return Err(
                    "`token` is sent as the Authorization header, which `headers` sets too; \
                     keep one"
                        .to_owned(),
                );
            }
        }
        Ok(())
    }

    /// The secret headers the runner adds: `token` as `Authorization: Bearer`, then
    /// `headers`, each with the key it is configured under (for messages).
    pub fn secret_headers(&self) -> Vec<(String, &str, &Secret, String)> {
        let token = self
            .token
            .iter()
            .map(|t| ("Authorization".to_owned(), "Bearer ", t, "token".to_owned()));
        let headers = self.headers.iter().map(|(name, header)| {
            (
                name.clone(),
                header.prefix.as_str(),
                &header.value,
                format!("headers.{name}"),
            )
        });
        token.chain(headers).collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    /// Loads `toml` as `gatehouse.toml`: the configuration, or its error's text.
    #[allow(clippy::result_large_err)]
    fn load(toml: &str) -> Result<Config, String> {
        let mut result = None;
        figment::Jail::expect_with(|jail| {
            jail.create_file("gatehouse.toml", toml)?;
            result = Some(Config::load(None).map_err(|e| e.to_string()));
            Ok(())
        });
        result.expect("the jail ran")
    }

    const ATTACHED: &str = r#"
[roles.dev]
executor = "claude-code"
mcp = ["docs", "wiki"]

[[projects]]
name = "api"
mcp = ["wiki"]
"#;

    #[test]
    fn stdio_and_remote_servers_attach_to_roles_and_projects() {
        let c = load(&format!(
            "{ATTACHED}
[mcp.docs]
command = [\"docs-mcp\", \"--stdio\"]
env = {{ DOCS_MODE = \"read\" }}

[mcp.wiki]
url = \"https://wiki.example.com/mcp\"
token = {{ env = \"WIKI_TOKEN\" }}
headers = {{ X-Team = \"core\", X-Key = {{ env = \"WIKI_KEY\", prefix = \"Key \" }} }}
"
        ))
        .expect("valid");
        assert_eq!(
            c.mcp["docs"].definition(),
            Ok(gatehouse_agent::McpDefinition::Stdio {
                command: vec!["docs-mcp".into(), "--stdio".into()],
                env: [("DOCS_MODE".to_owned(), "read".to_owned())].into(),
            })
        );
        assert_eq!(
            c.mcp["wiki"].definition(),
            Ok(gatehouse_agent::McpDefinition::Remote)
        );
        let secrets: Vec<String> = c.secrets().map(|(k, s)| format!("{k}: {s}")).collect();
        assert_eq!(
            secrets,
            [
                "mcp.wiki.token: environment variable WIKI_TOKEN",
                "mcp.wiki.headers.X-Key: environment variable WIKI_KEY",
                "mcp.wiki.headers.X-Team: a literal in the config file",
            ]
        );
        // `config show` writes where secrets come from, never a literal.
        let shown = toml::to_string(&c.mcp).expect("serializes");
        assert!(shown.contains("X-Team = \"<redacted>\""), "{shown}");
        assert!(shown.contains("prefix = \"Key \""), "{shown}");
        assert!(!shown.contains("core"), "{shown}");
    }

    #[test]
    fn mistakes_are_refused_saying_what_to_change() {
        let cases = [
            (
                "[mcp.docs]\ncommand = [\"x\"]\nurl = \"https://a/mcp\"\n",
                "mcp.docs: give either `command` (a program run inside the sandbox) or `url` (a remote server), not both",
            ),
            (
                "[mcp.docs]\nenv = { A = \"b\" }\n",
                "mcp.docs: needs `command` (a program run inside the sandbox, e.g. command = [\"docs-mcp\", \"--stdio\"]) or `url` (a remote server, e.g. url = \"https://docs.example.com/mcp\")",
            ),
            (
                "[mcp.docs]\nurl = \"file:///etc/passwd\"\n",
                "mcp.docs: url \"file:///etc/passwd\" must be an http:// or https:// address with a host",
            ),
            (
                "[mcp.docs]\nurl = \"https://u:p@a/mcp\"\n",
                "mcp.docs: url \"https://u:p@a/mcp\" carries credentials; put them in `token` or `headers` instead",
            ),
            (
                "[mcp.docs]\ncommand = [\"x\"]\ntoken = \"t\"\n",
                "mcp.docs: `token` and `headers` are for a remote server (`url`); a stdio server's variables go in `env`, where the sandbox sees them",
            ),
            (
                "[mcp.docs]\nurl = \"https://a/mcp\"\ntoken = \"t\"\nheaders = { authorization = \"x\" }\n",
                "mcp.docs: `token` is sent as the Authorization header, which `headers` sets too; keep one",
            ),
            (
                "[mcp.docs]\nurl = \"https://a/mcp\"\nheaders = { Host = \"x\" }\n",
                "mcp.docs: header `Host` is set by the runner itself; remove it",
            ),
            (
                "[mcp.docs]\ncommand = [\"\"]\n",
                "mcp.docs: `command` must start with the program to run inside the sandbox, e.g. command = [\"docs-mcp\", \"--stdio\"]",
            ),
            (
                "[mcp.gatehouse]\ncommand = [\"x\"]\n",
                "mcp.gatehouse: the MCP server name \"gatehouse\" is Gatehouse's own server, attached to every agent already; pick another name",
            ),
            (
                "[mcp.Docs]\ncommand = [\"x\"]\n",
                "mcp.Docs: MCP server name \"Docs\" is not 1 to 32 lowercase letters, digits, `-` and `_`; rename it (it prefixes the server's tool names)",
            ),
            (
                "[roles.dev]\nexecutor = \"codex\"\nmcp = [\"nope\"]\n[mcp.docs]\ncommand = [\"x\"]\n",
                "roles.dev: `mcp`: MCP server `nope` is not configured (add [mcp.nope]); the MCP servers are docs",
            ),
            (
                "[[projects]]\nname = \"api\"\nmcp = [\"nope\"]\n",
                "project `api`: `mcp`: MCP server `nope` is not configured (add [mcp.nope]); no [mcp.NAME] is configured",
            ),
            (
                "[roles.dev]\nexecutor = \"pi\"\nmcp = [\"docs\"]\n[mcp.docs]\ncommand = [\"x\"]\n",
                "roles.dev: `mcp` names servers, but executor \"pi\" cannot be handed MCP servers; remove `mcp`, or use an executor that can (claude-code, codex, gemini, copilot, opencode, kilo, acp)",
            ),
        ];
        for (toml, expected) in cases {
            assert_eq!(load(toml).map(|_| ()), Err(expected.to_owned()), "{toml}");
        }
        let unknown = load("[mcp.docs]\ncommand = [\"x\"]\nargs = [\"y\"]\n").unwrap_err();
        assert!(
            unknown.starts_with("unknown key `mcp.docs.args` in gatehouse.toml line 3"),
            "{unknown}"
        );
        let half =
            load("[mcp.docs]\nurl = \"https://a/mcp\"\nheaders = { K = { prefix = \"B \" } }\n")
                .unwrap_err();
        assert!(
            half.contains("needs one of `env` or `file`")
                || half.contains("optionally with prefix"),
            "{half}"
        );
    }
}
