//! figment's errors in Gatehouse's terms. figment names a key by its profile and path
//! (`default.server.lisen`), quotes the expected keys inside its own backticks, and knows
//! no line; the user wrote `lisen` on line 3 of gatehouse.toml under `[server]`. So the
//! key is named as the file writes it, its line looked up in the file, and the nearest
//! known key suggested.

use std::path::Path;

use figment::error::Kind;

use super::locate;

/// Every error of `error` on its own line, worded for someone editing `file` (the
/// configuration file read, if any).
pub fn describe(error: figment::Error, file: Option<&Path>) -> String {
    let source = file.and_then(|f| std::fs::read_to_string(f).ok());
    error
        .into_iter()
        .map(|e| one(&e, file, source.as_deref()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One error of figment's.
fn one(error: &figment::Error, file: Option<&Path>, source: Option<&str>) -> String {
    let from_file = error
        .metadata
        .as_ref()
        .and_then(|m| m.source.as_ref())
        .and_then(|s| s.file_path())
        .is_some();
    let from_env = error
        .metadata
        .as_ref()
        .is_some_and(|m| m.name.contains("environment"));
    let place = match (from_file, file) {
        // A file that does not parse: the TOML error names its line and column itself.
        (true, Some(file)) if error.path.is_empty() => format!("{}:", file.display()),
        (true, Some(file)) => {
            let line = source.and_then(|s| locate::line_of_path(s, &error.path));
            match line {
                Some(line) => format!("in {} line {line}", file.display()),
                None => format!("in {}", file.display()),
            }
        }
        (true, None) => "in the configuration file".to_owned(),
        (false, _) if from_env => "from a GATEHOUSE_ environment variable".to_owned(),
        (false, _) => "in the configuration".to_owned(),
    };
    let key = key_name(&error.path);
    match &error.kind {
        Kind::UnknownField(found, expected) => {
            let parent = key_name(&error.path[..error.path.len().saturating_sub(1)]);
            let key = if parent.is_empty() {
                found.clone()
            } else {
                format!("{parent}.{found}")
            };
            format!(
                "unknown key `{key}` {place}; {}",
                suggest(found, expected, "key")
            )
        }
        Kind::UnknownVariant(found, expected) => format!(
            "`{key}` {place}: unknown value \"{found}\"; {}",
            suggest(found, expected, "value")
        ),
        _ if error.path.is_empty() => format!("{place} {}", error.kind.to_string().trim_end()),
        kind => format!("`{key}` {place}: {kind}"),
    }
}

/// `server.listen`, `schedules[0].sop`: the key as someone reading the file names it.
fn key_name(path: &[String]) -> String {
    let mut name = String::new();
    for segment in path {
        if segment.parse::<usize>().is_ok() && !name.is_empty() {
            name.push_str(&format!("[{segment}]"));
        } else {
            if !name.is_empty() {
                name.push('.');
            }
            name.push_str(segment);
        }
    }
    name
}

/// `did you mean ...?` for the known word nearest `found`, else the known words.
fn suggest(found: &str, known: &[&str], what: &str) -> String {
    let nearest = known
        .iter()
        .map(|k| (distance(found, k), *k))
        .min()
        .filter(|(d, _)| *d <= 2 && *d < found.chars().count());
    match nearest {
        Some((_, k)) => format!("did you mean `{k}`?"),
        None if known.is_empty() => format!("no {what} is accepted here"),
        None => format!("the {what}s here are {}", known.join(", ")),
    }
}

/// The edit distance (Levenshtein) between `a` and `b`.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::{distance, key_name, suggest};

    #[test]
    fn the_nearest_known_word_is_suggested_and_far_ones_are_listed() {
        assert_eq!(distance("lisen", "listen"), 1);
        assert_eq!(distance("", "ab"), 2);
        assert_eq!(distance("kitten", "sitting"), 3);
        let known = ["listen", "data_dir", "nats_url"];
        assert_eq!(suggest("lisen", &known, "key"), "did you mean `listen`?");
        assert_eq!(
            suggest("nat_url", &known, "key"),
            "did you mean `nats_url`?"
        );
        assert_eq!(
            suggest("colour", &known, "key"),
            "the keys here are listen, data_dir, nats_url"
        );
        assert_eq!(suggest("x", &[], "key"), "no key is accepted here");
    }

    #[test]
    fn array_indices_are_written_as_the_file_reads() {
        let path = |p: &str| p.split('.').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(key_name(&path("schedules.0.sop")), "schedules[0].sop");
        assert_eq!(key_name(&path("server.listen")), "server.listen");
    }
}
