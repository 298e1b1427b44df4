//! `{name}` placeholders in the argv of a `command` executor.

/// The placeholders [`crate::invocation`] fills in: the prompt file, the system-text file,
/// the role's model and, for a conversation turn, the file holding the conversation so far.
pub(crate) const KNOWN: [&str; 4] = ["prompt_file", "system_file", "model", "transcript_file"];

/// One piece of a command argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    /// Kept as written.
    Text(&'a str),
    /// The name between the braces of a `{name}` placeholder.
    Placeholder(&'a str),
}

/// Splits an argument into literal text and `{identifier}` placeholders.
///
/// Only braces around an identifier (ASCII letters, digits, `_`) make a placeholder, so
/// arguments such as `{"effort":"high"}` need no escaping.
pub(crate) fn pieces(arg: &str) -> Vec<Piece<'_>> {
    let bytes = arg.as_bytes();
    let mut pieces = Vec::new();
    let mut literal_from = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{' {
            let name_len = bytes[i + 1..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                .count();
            let close = i + 1 + name_len;
            if name_len > 0 && bytes.get(close) == Some(&b'}') {
                if literal_from < i {
                    pieces.push(Piece::Text(&arg[literal_from..i]));
                }
                pieces.push(Piece::Placeholder(&arg[i + 1..close]));
                i = close + 1;
                literal_from = i;
                continue;
            }
        }
        i += 1;
    }
    if literal_from < arg.len() {
        pieces.push(Piece::Text(&arg[literal_from..]));
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::{Piece, pieces};

    #[test]
    fn splits_placeholders_out_of_text() {
        assert_eq!(
            pieces("--prompt={prompt_file}"),
            [Piece::Text("--prompt="), Piece::Placeholder("prompt_file")]
        );
        assert_eq!(pieces("{model}"), [Piece::Placeholder("model")]);
        assert_eq!(
            pieces("a{x}b{y}"),
            [
                Piece::Text("a"),
                Piece::Placeholder("x"),
                Piece::Text("b"),
                Piece::Placeholder("y")
            ]
        );
    }

    #[test]
    fn braces_around_other_things_stay_text() {
        assert_eq!(pieces(r#"{"a":1}"#), [Piece::Text(r#"{"a":1}"#)]);
        assert_eq!(pieces("{}"), [Piece::Text("{}")]);
        assert_eq!(pieces("{open"), [Piece::Text("{open")]);
        assert_eq!(
            pieces("{{model}}"),
            [
                Piece::Text("{"),
                Piece::Placeholder("model"),
                Piece::Text("}")
            ]
        );
        assert_eq!(pieces(""), []);
    }
}
