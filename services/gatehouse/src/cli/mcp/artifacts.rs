//! The artifact tools: `list_artifacts` and `read_artifact` (text only, bounded).

use gatehouse_ingest::views::RunDetail;
use schemars::JsonSchema;
use serde::Deserialize;

use super::answer::{Answer, Failure, Outcome};
use super::checks;
use super::runs::OneRun;
use crate::cli::client::{Client, path_segment};

/// What `read_artifact` returns when not told: 64 KiB.
const READ_DEFAULT: u32 = 64 * 1024;
/// The most `read_artifact` returns: 1 MiB.
const READ_MAX: u32 = 1024 * 1024;
/// The longest artifact name (a path under the node's output).
const ARTIFACT_NAME_MAX: usize = 512;

/// `list_artifacts`: the files a run's nodes produced.
pub(crate) async fn list(client: &Client, args: OneRun) -> Outcome {
    let id = args.id()?;
    let run: RunDetail = client.get(&format!("/runs/{id}")).await?;
    let mut summary = format!("{} artifact(s) in run {id}", run.artifacts.len());
    for a in &run.artifacts {
        summary.push_str(&format!(
            "\n  {} #{}  {}  ({} B)",
            a.node, a.attempt, a.name, a.size
        ));
    }
    Ok(Answer::with_json(summary, &run.artifacts))
}

/// What `read_artifact` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadArtifact {
    /// The run's id (a UUID).
    run: String,
    /// The node that produced it.
    node: String,
    /// Its name, as list_artifacts shows it.
    name: String,
    /// Which attempt of the node (default: the latest that has it).
    attempt: Option<u32>,
    /// Read at most this many bytes (1 to 1048576, default 65536); the rest is cut with
    /// a note.
    max_bytes: Option<u32>,
}

/// `read_artifact`: an artifact's text, cut to `max_bytes`; binary content is refused.
pub(crate) async fn read(client: &Client, args: ReadArtifact) -> Outcome {
    let id = checks::id(&args.run, "run", "list_runs")?;
    let node = checks::node(&args.node)?;
    let name = artifact_name(&args.name)?;
    let limit = checks::bounded(args.max_bytes, READ_DEFAULT, 1, READ_MAX, "max_bytes")?;
    let attempt = match args.attempt {
        Some(attempt) => attempt,
        None => latest_attempt(client, id, node, name).await?,
    };
    let path = format!(
        "/runs/{id}/artifacts/{}/{attempt}/{}",
        path_segment(node),
        name.split('/')
            .map(path_segment)
            .collect::<Vec<_>>()
            .join("/")
    );
    // Casting a u32 to usize is lossless on every target Gatehouse builds for.
    let (bytes, cut) = client.get_bytes_bounded(&path, limit as usize).await?;
    let text = text_of(&bytes, cut).ok_or_else(|| {
        Failure::Refused(format!(
            "`{name}` of node `{node}` (attempt {attempt}) is not text (it holds bytes that are not UTF-8); \
             download it with `gatehouse run artifact {id} {node} {name} -o FILE`"
        ))
    })?;
    let mut out = text.to_owned();
    if cut {
        out.push_str(&format!(
            "\n(cut at {} bytes; ask with a larger max_bytes, up to {READ_MAX}, for more)",
            text.len()
        ));
    }
    Ok(Answer::text(out))
}

/// An artifact's name: a relative path of at most [`ARTIFACT_NAME_MAX`] bytes, no `..`, no
/// empty or control-character parts.
fn artifact_name(text: &str) -> Result<&str, Failure> {
    let fits = !text.is_empty()
        && text.len() <= ARTIFACT_NAME_MAX
        && !text.chars().any(char::is_control)
        && text
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..");
    if fits {
        Ok(text)
    } else {
        Err(Failure::Arguments(format!(
            "`{}` is not an artifact name: a relative path without `..`, at most {ARTIFACT_NAME_MAX} bytes (list_artifacts shows them)",
            checks::shown(text)
        )))
    }
}

/// The latest attempt of `node` that recorded `name`.
async fn latest_attempt(
    client: &Client,
    id: uuid::Uuid,
    node: &str,
    name: &str,
) -> Result<u32, Failure> {
    let run: RunDetail = client.get(&format!("/runs/{id}")).await?;
    let of_node: Vec<_> = run.artifacts.iter().filter(|a| a.node == node).collect();
    of_node
        .iter()
        .filter(|a| a.name == name)
        .filter_map(|a| u32::try_from(a.attempt).ok())
        .max()
        .ok_or_else(|| {
            let names: Vec<&str> = of_node.iter().map(|a| a.name.as_str()).collect();
            Failure::Arguments(if names.is_empty() {
                format!("node `{node}` of run {id} recorded no artifacts")
            } else {
                format!(
                    "node `{node}` of run {id} recorded no `{}`; it has: {}",
                    checks::shown(name),
                    names.join(", ")
                )
            })
        })
}

/// The bytes as text, or `None` when they are not: UTF-8 without NUL. A body cut short
/// may end inside a character; that partial character is dropped.
fn text_of(bytes: &[u8], cut: bool) -> Option<&str> {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        // The error_len is None only for a character the end cut in two.
        Err(e) if cut && e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    (!text.contains('\0')).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_utf8_without_nul_and_a_cut_character_is_dropped() {
        assert_eq!(text_of(b"hello", false), Some("hello"));
        assert_eq!(text_of(b"a\0b", false), None);
        assert_eq!(text_of(&[0xff, 0xfe], false), None);
        let euro = "a€".as_bytes();
        assert_eq!(text_of(&euro[..2], true), Some("a"));
        assert_eq!(text_of(&euro[..2], false), None);
    }

    #[test]
    fn artifact_names_stay_under_the_node() {
        assert!(artifact_name("report.md").is_ok());
        assert!(artifact_name("out/report.md").is_ok());
        assert!(artifact_name("../secrets").is_err());
        assert!(artifact_name("/etc/passwd").is_err());
        assert!(artifact_name("a//b").is_err());
    }
}
