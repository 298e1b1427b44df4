//! The YAML library's errors as a position and a sentence.

use marked_yaml::{FromYamlError, Marker};

/// Turns the YAML library's error into a position and a sentence.
pub(super) fn describe(err: FromYamlError, text: &str) -> (Option<Marker>, String) {
    use marked_yaml::LoadError;
    match err {
        FromYamlError::ParseYaml(load) => match load {
            LoadError::TopLevelMustBeMapping(m) => (
                Some(m),
                "an SOP file must be a mapping with `name` and `nodes`".into(),
            ),
            LoadError::TopLevelMustBeSequence(m) => {
                (Some(m), "unexpected sequence at the top level".into())
            }
            LoadError::UnexpectedAnchor(m) => (
                Some(m),
                "YAML anchors and aliases are not supported in SOP files".into(),
            ),
            LoadError::MappingKeyMustBeScalar(m) => {
                (Some(m), "mapping keys must be plain strings".into())
            }
            LoadError::UnexpectedTag(m) => {
                (Some(m), "YAML tags are not supported in SOP files".into())
            }
            LoadError::ScanError(m, e) => (Some(m), format!("invalid YAML: {}", e.info())),
            LoadError::DuplicateKey(d) => {
                let first = d.prev_key.span().start().map_or(0, Marker::line);
                (
                    d.key.span().start().copied(),
                    format!(
                        "`{}` is defined twice (first on line {first})",
                        d.key.as_str()
                    ),
                )
            }
        },
        FromYamlError::FromNode(err) => {
            let marker = err.start_mark();
            let message = match err.into_inner() {
                marked_yaml::Error::UnknownFieldError(field, expected, _) => {
                    let key = marker.and_then(|m| locate_key(text, m, &field));
                    return (
                        key.or(marker),
                        format!(
                            "unknown key `{field}`; expected one of: {}",
                            expected.join(", ")
                        ),
                    );
                }
                other => other.to_string(),
            };
            (marker, message)
        }
    }
}

/// The position of the key `field` in the mapping the YAML library blamed: the first key
/// of that name at or after `near` (the library marks the mapping, not the key).
fn locate_key(text: &str, near: Marker, field: &str) -> Option<Marker> {
    fn walk(node: &marked_yaml::Node, field: &str, found: &mut Vec<Marker>) {
        if let Some(map) = node.as_mapping() {
            for (key, value) in map.iter() {
                if key.as_str() == field
                    && let Some(start) = key.span().start()
                {
                    found.push(*start);
                }
                walk(value, field, found);
            }
        } else if let Some(seq) = node.as_sequence() {
            for item in seq.iter() {
                walk(item, field, found);
            }
        }
    }
    let root = marked_yaml::parse_yaml(0, text).ok()?;
    let mut found = Vec::new();
    walk(&root, field, &mut found);
    found
        .into_iter()
        .filter(|m| (m.line(), m.column()) >= (near.line(), near.column()))
        .min_by_key(|m| (m.line(), m.column()))
}
