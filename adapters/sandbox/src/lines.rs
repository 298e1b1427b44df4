//! Cutting raw output into [`LogLine`]s, the same way for every sandbox.

use crate::{LogLine, Stream};

/// The longest line kept whole; the rest of a longer one is counted, not stored, so a
/// script printing one endless line cannot make the runner hold it in memory.
pub(crate) const MAX_LINE: usize = 64 * 1024;

/// Splits one stream's bytes into lines as they arrive, holding at most [`MAX_LINE`] bytes.
#[derive(Debug)]
pub(crate) struct LineSplitter {
    stream: Stream,
    line: Vec<u8>,
    /// Bytes of the current line past [`MAX_LINE`], dropped.
    cut: usize,
}

impl LineSplitter {
    pub(crate) fn new(stream: Stream) -> Self {
        Self {
            stream,
            line: Vec::new(),
            cut: 0,
        }
    }

    /// Feeds a chunk of output; `emit` gets every line it completes.
    pub(crate) fn push(&mut self, mut bytes: &[u8], emit: &mut impl FnMut(LogLine)) {
        while !bytes.is_empty() {
            let (part, ended) = match bytes.iter().position(|&b| b == b'\n') {
                Some(at) => (&bytes[..at], true),
                None => (bytes, false),
            };
            let room = MAX_LINE - self.line.len();
            let kept = part.len().min(room);
            self.line.extend_from_slice(&part[..kept]);
            self.cut += part.len() - kept;
            bytes = &bytes[part.len() + usize::from(ended)..];
            if ended {
                emit(self.take());
            }
        }
    }

    /// Emits the last line if the output did not end with a newline.
    pub(crate) fn finish(&mut self, emit: &mut impl FnMut(LogLine)) {
        if !self.line.is_empty() || self.cut > 0 {
            emit(self.take());
        }
    }

    fn take(&mut self) -> LogLine {
        let mut bytes = std::mem::take(&mut self.line);
        let cut = std::mem::take(&mut self.cut);
        if bytes.last() == Some(&b'\r') && cut == 0 {
            bytes.pop();
        }
        if cut > 0 {
            // The cut may fall inside a character: keep only whole ones rather than end
            // the line with a replacement character.
            if let Err(e) = std::str::from_utf8(&bytes)
                && e.error_len().is_none()
            {
                let partial = bytes.len() - e.valid_up_to();
                bytes.truncate(e.valid_up_to());
                return self.line_with_marker(&bytes, cut + partial);
            }
            return self.line_with_marker(&bytes, cut);
        }
        LogLine {
            stream: self.stream,
            line: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    fn line_with_marker(&self, bytes: &[u8], cut: usize) -> LogLine {
        LogLine {
            stream: self.stream,
            line: format!(
                "{}{CUT_MARKER}{cut} more bytes]",
                String::from_utf8_lossy(bytes)
            ),
        }
    }
}

/// What ends a line cut at [`MAX_LINE`], before the count of bytes left out.
const CUT_MARKER: &str = " … [line cut: ";

/// A line cut at [`MAX_LINE`] as the text kept and the marker saying so; `None` for a whole
/// line. What was kept may end in the start of something the rest would have completed (a
/// secret's value, for the runner's masking).
pub fn cut_line(line: &str) -> Option<(&str, &str)> {
    let at = line.rfind(CUT_MARKER)?;
    let (kept, marker) = line.split_at(at);
    let count = marker[CUT_MARKER.len()..].strip_suffix(" more bytes]")?;
    (!count.is_empty() && count.bytes().all(|b| b.is_ascii_digit())).then_some((kept, marker))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> Vec<String> {
        let mut splitter = LineSplitter::new(Stream::Stdout);
        let mut lines = Vec::new();
        let mut emit = |l: LogLine| lines.push(l.line);
        for chunk in chunks {
            splitter.push(chunk, &mut emit);
        }
        splitter.finish(&mut emit);
        lines
    }

    #[test]
    fn lines_are_split_across_chunks_and_carriage_returns_trimmed() {
        assert_eq!(
            split(&[b"one\r\ntw", b"o\n\nthr", b"ee"]),
            ["one", "two", "", "three"]
        );
        assert_eq!(split(&[b"a\n"]), ["a"]);
        assert!(split(&[b""]).is_empty());
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(split(&[b"a\xffb\n"]), ["a\u{fffd}b"]);
    }

    #[test]
    fn a_long_line_is_cut_and_the_rest_counted_without_being_kept() {
        let long = vec![b'x'; MAX_LINE * 3 + 5];
        let mut splitter = LineSplitter::new(Stream::Stderr);
        let mut lines = Vec::new();
        for chunk in long.chunks(1000) {
            splitter.push(chunk, &mut |l| lines.push(l));
            assert!(splitter.line.capacity() <= 2 * MAX_LINE);
        }
        splitter.push(b"\nnext\n", &mut |l| lines.push(l));
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].stream, Stream::Stderr);
        let expected = format!(
            "{} … [line cut: {} more bytes]",
            "x".repeat(MAX_LINE),
            MAX_LINE * 2 + 5
        );
        assert_eq!(lines[0].line, expected);
        assert_eq!(lines[1].line, "next");
    }

    #[test]
    fn a_cut_line_is_told_from_a_whole_one() {
        let long = format!("{}abc", "x".repeat(MAX_LINE - 2));
        let lines = split(&[long.as_bytes()]);
        let (kept, marker) = cut_line(&lines[0]).unwrap();
        assert!(kept.len() == MAX_LINE && kept.ends_with("xab"));
        assert_eq!(marker, " … [line cut: 1 more bytes]");
        assert_eq!(cut_line("a whole line … [line cut: many more bytes]"), None);
        assert_eq!(cut_line("a whole line"), None);
    }

    #[test]
    fn a_cut_inside_a_character_keeps_whole_characters() {
        let mut line = vec![b'x'; MAX_LINE - 1];
        line.extend_from_slice("é and more".as_bytes());
        let lines = split(&[&line]);
        let expected = format!(
            "{} … [line cut: {} more bytes]",
            "x".repeat(MAX_LINE - 1),
            "é and more".len()
        );
        assert_eq!(lines, [expected]);
    }
}
