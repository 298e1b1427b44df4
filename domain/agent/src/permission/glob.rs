//! The one wildcard of permission patterns: `*`, any run of characters (spaces and `/`
//! included). Everything else is literal, so a command or path is never read as a regular
//! expression. Matching splits the pattern at its stars and finds each literal piece
//! leftmost, which is exact for star-only globs and linear in the subject per piece.

/// A pattern with `*` wildcards, matched against the whole subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Glob {
    /// The literal pieces between the stars; `pieces.len() - 1` stars in all.
    pieces: Vec<String>,
}

impl Glob {
    /// `pattern` as written; it cannot fail.
    pub(crate) fn new(pattern: &str) -> Self {
        Self {
            pieces: pattern.split('*').map(str::to_owned).collect(),
        }
    }

    /// Whether `subject`, whole, matches.
    pub(crate) fn matches(&self, subject: &str) -> bool {
        let (first, rest) = match self.pieces.split_first() {
            Some(split) => split,
            None => return subject.is_empty(),
        };
        let Some((last, middle)) = rest.split_last() else {
            return subject == first;
        };
        let Some(mut tail) = subject.strip_prefix(first.as_str()) else {
            return false;
        };
        for piece in middle {
            match tail.find(piece.as_str()) {
                Some(at) => tail = &tail[at + piece.len()..],
                None => return false,
            }
        }
        tail.len() >= last.len() && tail.ends_with(last.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Glob;

    #[test]
    fn stars_span_anything_and_the_rest_is_literal() {
        let cases = [
            ("cargo test*", "cargo test", true),
            ("cargo test*", "cargo test --all", true),
            ("cargo test*", "cargo tes", false),
            ("*", "", true),
            ("", "", true),
            ("", "x", false),
            ("a*b*c", "abc", true),
            ("a*b*c", "a-b-b-c", true),
            ("a*b*c", "acb", false),
            ("ab*ba", "aba", false),
            ("src/*.rs", "src/a/b.rs", true),
            ("git push*", "git pushx", true),
            ("a.b", "axb", false),
            ("[x]", "[x]", true),
        ];
        for (pattern, subject, expected) in cases {
            assert_eq!(
                Glob::new(pattern).matches(subject),
                expected,
                "{pattern:?} ~ {subject:?}"
            );
        }
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::Glob;

    /// The textbook matcher, by dynamic programming over both strings.
    fn reference(pattern: &[char], subject: &[char]) -> bool {
        let mut row = vec![false; subject.len() + 1];
        row[0] = true;
        for p in pattern {
            let mut next = vec![false; subject.len() + 1];
            if *p == '*' {
                let mut any = false;
                for (i, cell) in next.iter_mut().enumerate() {
                    any |= row[i];
                    *cell = any;
                }
            } else {
                for i in 0..subject.len() {
                    next[i + 1] = row[i] && subject[i] == *p;
                }
            }
            row = next;
        }
        row[subject.len()]
    }

    proptest! {
        #[test]
        fn agrees_with_the_reference(pattern in "[ab*/ ]{0,8}", subject in "[ab/ ]{0,12}") {
            let p: Vec<char> = pattern.chars().collect();
            let s: Vec<char> = subject.chars().collect();
            prop_assert_eq!(Glob::new(&pattern).matches(&subject), reference(&p, &s));
        }

        #[test]
        fn a_pattern_matches_itself_and_a_trailing_star_any_tail(
            text in "[^*]{0,20}", tail in ".{0,20}"
        ) {
            prop_assert!(Glob::new(&text).matches(&text));
            let pattern = format!("{text}*");
            let subject = format!("{text}{tail}");
            prop_assert!(Glob::new(&pattern).matches(&subject));
        }
    }
}
