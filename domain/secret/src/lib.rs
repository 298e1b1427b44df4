//! Secrets in configuration: a literal, `{ env = "NAME" }` or `{ file = "/path" }`.

use std::fmt;
use std::path::PathBuf;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize, Serializer};
use thiserror::Error;

/// Where a secret's value comes from. Resolved when it is used, not when the file is read,
/// so commands that do not need a secret (`migrate`) work without it.
#[derive(Clone, Deserialize)]
#[serde(
    untagged,
    expecting = "a string, { env = \"NAME\" } or { file = \"/path\" }"
)]
pub enum Secret {
    /// The value itself, written in the file (fine for tests, discouraged otherwise).
    Literal(SecretString),
    /// An environment variable holding the value.
    Env {
        /// Variable name.
        env: String,
    },
    /// A file holding the value (Kubernetes and Docker secrets); a trailing newline is
    /// dropped.
    File {
        /// File path.
        file: PathBuf,
    },
}

/// Why a secret could not be read.
#[derive(Debug, Error)]
pub enum SecretError {
    /// The variable is unset or not UTF-8.
    #[error("environment variable {0} is not set")]
    MissingEnv(String),
    /// The file could not be read.
    #[error("cannot read secret file {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The value is empty, which is never a usable secret.
    #[error("the secret from {0} is empty")]
    Empty(String),
}

impl Secret {
    /// Reads the value.
    pub fn resolve(&self) -> Result<SecretString, SecretError> {
        let value = match self {
            Self::Literal(value) => return Ok(value.clone()),
            Self::Env { env } => {
                std::env::var(env).map_err(|_| SecretError::MissingEnv(env.clone()))?
            }
            Self::File { file } => std::fs::read_to_string(file)
                .map_err(|source| SecretError::File {
                    path: file.clone(),
                    source,
                })?
                .trim_end_matches(['\n', '\r'])
                .to_owned(),
        };
        if value.is_empty() {
            return Err(SecretError::Empty(self.to_string()));
        }
        Ok(value.into())
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Literal(_) => f.write_str("a literal in the config file"),
            Self::Env { env } => write!(f, "environment variable {env}"),
            Self::File { file } => write!(f, "file {}", file.display()),
        }
    }
}

/// Two secrets are equal when they come from the same place (or are the same literal):
/// configurations compare so, never resolving one.
impl PartialEq for Secret {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Literal(a), Self::Literal(b)) => a.expose_secret() == b.expose_secret(),
            (Self::Env { env: a }, Self::Env { env: b }) => a == b,
            (Self::File { file: a }, Self::File { file: b }) => a == b,
            _ => false,
        }
    }
}

impl Eq for Secret {}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({self})")
    }
}

/// Serialises the source, never a literal's value, so `config show` cannot leak secrets.
impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Env<'a> {
            env: &'a str,
        }
        #[derive(Serialize)]
        struct File<'a> {
            file: &'a PathBuf,
        }
        match self {
            Self::Literal(_) => serializer.serialize_str("<redacted>"),
            Self::Env { env } => Env { env }.serialize(serializer),
            Self::File { file } => File { file }.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Holder {
        secret: Secret,
    }

    fn parse(toml: &str) -> Secret {
        toml::from_str::<Holder>(toml).unwrap().secret
    }

    #[test]
    fn literal_env_and_file_forms() {
        let literal = parse(r#"secret = "s3cret""#);
        assert_eq!(literal.resolve().unwrap().expose_secret(), "s3cret");
        assert_eq!(
            format!("{literal:?}"),
            "Secret(a literal in the config file)"
        );

        // SAFETY: this test is the only user of the variable.
        // Not `GATEHOUSE_`-prefixed: configuration tests running beside this one in the same
        // process read every `GATEHOUSE_*` variable as a key.
        unsafe { std::env::set_var("SECRET_TEST_ENV_VALUE", "from-env") };
        let env = parse(r#"secret = { env = "SECRET_TEST_ENV_VALUE" }"#);
        assert_eq!(env.resolve().unwrap().expose_secret(), "from-env");

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "from-file\n").unwrap();
        let file = parse(&format!("secret = {{ file = {:?} }}", path));
        assert_eq!(file.resolve().unwrap().expose_secret(), "from-file");
    }

    #[test]
    fn missing_sources_are_named() {
        let env = parse(r#"secret = { env = "GATEHOUSE_TEST_SURELY_UNSET" }"#);
        assert_eq!(
            env.resolve().unwrap_err().to_string(),
            "environment variable GATEHOUSE_TEST_SURELY_UNSET is not set"
        );
        let file = parse(r#"secret = { file = "/nonexistent/token" }"#);
        assert!(
            file.resolve()
                .unwrap_err()
                .to_string()
                .starts_with("cannot read secret file /nonexistent/token")
        );
    }

    #[test]
    fn other_shapes_are_refused_with_the_expected_forms() {
        let err = toml::from_str::<Holder>(r#"secret = { vault = "x" }"#)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains(r#"a string, { env = "NAME" } or { file = "/path" }"#),
            "{err}"
        );
    }

    #[test]
    fn serialising_never_shows_a_literal() {
        let out = toml::to_string(&std::collections::BTreeMap::from([(
            "token",
            parse(r#"secret = "s3cret""#),
        )]))
        .unwrap();
        assert!(!out.contains("s3cret"));
        assert!(out.contains("<redacted>"));
    }
}
