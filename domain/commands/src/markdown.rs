//! Which text of a GitHub comment is prose. A command shown in code, quoted from someone else
//! or hidden in an HTML comment is an example or history, not a request, so it must never run.
//!
//! This is a line scanner, not a Markdown parser: it follows CommonMark where a command could
//! hide and leans towards ignoring. Every line indented four or more columns counts as code,
//! even where CommonMark would continue a paragraph or list item with it; code spans are matched
//! within one line; a block quote is a line starting with `>`. Missing a command costs the
//! author a retype, running an example costs a run nobody asked for.

use std::ops::Range;

/// How a fenced code block opened, which decides the line that closes it.
#[derive(Debug, Clone, Copy)]
struct Fence {
    marker: u8,
    len: usize,
}

/// Reads a comment line by line. Fences and HTML comments span lines, so lines must come in
/// order.
#[derive(Debug, Default)]
pub(crate) struct Prose {
    fence: Option<Fence>,
    in_html_comment: bool,
}

impl Prose {
    /// The byte ranges of `line` that are not prose (code spans, HTML comments), or `None` when
    /// none of it is (code blocks, fence lines, block quotes).
    pub(crate) fn hidden(&mut self, line: &str) -> Option<Vec<Range<usize>>> {
        if let Some(fence) = self.fence {
            if fence.is_closed_by(line) {
                self.fence = None;
            }
            return None;
        }
        // Inside an HTML comment, fences, quotes and indentation are part of the comment.
        if !self.in_html_comment {
            let text = block_text(line)?;
            if text.starts_with('>') {
                return None;
            }
            if let Some(fence) = Fence::opened_by(text) {
                self.fence = Some(fence);
                return None;
            }
        }
        Some(self.inline_hidden(line))
    }

    fn inline_hidden(&mut self, line: &str) -> Vec<Range<usize>> {
        const OPEN: &str = "<!--";
        const CLOSE: &str = "-->";
        let mut hidden = Vec::new();
        let mut at = 0;
        if self.in_html_comment {
            let Some(end) = line.find(CLOSE) else {
                hidden.push(0..line.len());
                return hidden;
            };
            at = end + CLOSE.len();
            hidden.push(0..at);
            self.in_html_comment = false;
        }
        // Left to right, because whichever of a code span and a comment starts first wins.
        while let Some(offset) = line[at..].find(['`', '<']) {
            let start = at + offset;
            let rest = &line[start..];
            if rest.starts_with('`') {
                let len = run_length(rest, b'`');
                match closing_backticks(line, start + len, len) {
                    Some(end) => {
                        hidden.push(start..end);
                        at = end;
                    }
                    // An unmatched run is literal backticks.
                    None => at = start + len,
                }
            } else if let Some(comment) = rest.strip_prefix(OPEN) {
                let Some(end) = comment.find(CLOSE) else {
                    hidden.push(start..line.len());
                    self.in_html_comment = true;
                    break;
                };
                at = start + OPEN.len() + end + CLOSE.len();
                hidden.push(start..at);
            } else {
                at = start + 1;
            }
        }
        hidden
    }
}

impl Fence {
    fn opened_by(text: &str) -> Option<Fence> {
        let marker = *text
            .as_bytes()
            .first()
            .filter(|b| matches!(b, b'`' | b'~'))?;
        let len = run_length(text, marker);
        // A backtick in a backtick fence's info string makes the line a code span instead.
        let info_ok = marker == b'~' || !text[len..].contains('`');
        (len >= 3 && info_ok).then_some(Fence { marker, len })
    }

    fn is_closed_by(self, line: &str) -> bool {
        block_text(line).is_some_and(|text| {
            let len = run_length(text, self.marker);
            len >= self.len && text[len..].trim().is_empty()
        })
    }
}

/// The line without up to three spaces of indentation, or `None` when it is indented code:
/// four spaces, or a tab (which reaches column 4 however few spaces precede it).
fn block_text(line: &str) -> Option<&str> {
    let spaces = run_length(line, b' ');
    let text = &line[spaces..];
    (spaces <= 3 && !text.starts_with('\t')).then_some(text)
}

/// End of the next run of exactly `len` backticks from `from`: a code span closes only on a run
/// of the length that opened it.
fn closing_backticks(line: &str, from: usize, len: usize) -> Option<usize> {
    let mut at = from;
    while let Some(offset) = line[at..].find('`') {
        let start = at + offset;
        let run = run_length(&line[start..], b'`');
        if run == len {
            return Some(start + run);
        }
        at = start + run;
    }
    None
}

fn run_length(text: &str, byte: u8) -> usize {
    text.bytes().take_while(|&b| b == byte).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What of each line is prose, with hidden text replaced by `_`; `None` for a line that is
    /// not prose at all.
    fn prose(body: &str) -> Vec<Option<String>> {
        let mut prose = Prose::default();
        body.lines()
            .map(|line| {
                let hidden = prose.hidden(line)?;
                let mut shown = line.to_owned();
                for range in hidden {
                    shown.replace_range(range.clone(), &"_".repeat(range.len()));
                }
                Some(shown)
            })
            .collect()
    }

    fn some(s: &str) -> Option<String> {
        Some(s.into())
    }

    #[test]
    fn fences_with_backticks_tildes_and_info_strings() {
        let body = "a\n```rust\nin\n```\nb\n~~~ sh title\nin\n~~~~\nc\n````\n```\nin\n````\nd";
        assert_eq!(
            prose(body),
            [
                some("a"),
                None,
                None,
                None,
                some("b"),
                None,
                None,
                None,
                some("c"),
                None,
                None,
                None,
                None,
                some("d"),
            ]
        );
    }

    #[test]
    fn a_fence_closes_only_on_its_own_marker_without_text() {
        let body = "```\n~~~\n``` not a close\n  ```\nout";
        assert_eq!(prose(body), [None, None, None, None, some("out")]);
        // Indented up to three spaces still opens; four is code, not a fence.
        assert_eq!(
            prose("   ~~~\nin\n~~~\nout"),
            [None, None, None, some("out")]
        );
        assert_eq!(prose("    ```\nout"), [None, some("out")]);
    }

    #[test]
    fn an_unclosed_fence_runs_to_the_end() {
        assert_eq!(prose("a\n```\nb\nc"), [some("a"), None, None, None]);
    }

    #[test]
    fn backticks_in_the_info_string_make_a_code_span_not_a_fence() {
        assert_eq!(prose("```a` b\nnext"), [some("```a` b"), some("next")]);
    }

    #[test]
    fn indented_code_and_tabs() {
        assert_eq!(
            prose("    code\n\tcode\n  \tcode\n   text"),
            [None, None, None, some("   text")]
        );
    }

    #[test]
    fn block_quotes() {
        assert_eq!(
            prose("> quoted\n   > quoted\n>\nplain > not"),
            [None, None, None, some("plain > not")]
        );
    }

    #[test]
    fn code_spans_of_matching_length() {
        assert_eq!(
            prose("a `b` c ``d ` e`` f ` g"),
            [some("a ___ c _________ f ` g")]
        );
    }

    #[test]
    fn html_comments_on_one_and_many_lines() {
        assert_eq!(
            prose("a <!-- b --> c\nd <!-- e\n```\n> f\n    g\nh --> i"),
            [
                some("a __________ c"),
                some("d ______"),
                some("___"),
                some("___"),
                some("_____"),
                some("_____ i"),
            ]
        );
    }

    #[test]
    fn whichever_starts_first_wins() {
        assert_eq!(prose("`<!--` a"), [some("______ a")]);
        assert_eq!(prose("<!-- ` --> a `b`"), [some("__________ a ___")]);
    }

    #[test]
    fn a_fence_inside_a_quote_opens_nothing() {
        assert_eq!(prose("> ```\na"), [None, some("a")]);
    }
}
