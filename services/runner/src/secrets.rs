//! The secret values an attempt was given, kept out of everything it leaves: masked in its
//! output wherever that is stored or posted (the node's log, a turn's progress message,
//! reply and tool summaries, an attempt's failure), found in its artifacts and in the
//! changes a delivery would push, which are refused. The values are read from the
//! runner's environment by the names a job declares ([`read_secrets`]).
//!
//! A value reaches output in more shapes than its own text. A multi-line value (a PEM key)
//! comes out as several lines, so each of its lines is masked on its own, and the lines of
//! a stream are held back while they could be the start of the whole value, so it is
//! masked whole ([`OutputMask`]). An agent's output is JSON, where a value holding `"`,
//! `\`, a newline or non-ASCII characters is escaped: the escaped forms (once and twice,
//! as JSON inside a JSON string is) are masked in the raw lines, and what the agent's
//! output decodes to (its reply, its tools' summaries) is masked again once decoded. A
//! line the sandbox cut short may end in the start of a value: that start is masked.

use gatehouse_agent::Trace;
use gatehouse_sandbox::{LogLine, Stream, cut_line};

/// What stands in for a secret's value in stored output.
pub(crate) const MASK: &str = "[secret]";
/// Values (and lines of multi-line values) shorter than this are not masked: they would
/// mask ordinary words.
const SHORTEST_MASKED: usize = 4;

/// The secret values one attempt (or delivery) was given.
#[derive(Debug, Default, Clone)]
pub(crate) struct Secrets {
    /// (name, the texts its value is found as in files), for [`Secrets::found_in`].
    found: Vec<(String, Vec<String>)>,
    /// Every text standing for a value in output, longest first so a text containing
    /// another is masked whole.
    forms: Vec<String>,
    /// The multi-line values, as the lines a stream prints them in.
    multiline: Vec<Vec<String>>,
}

impl Secrets {
    pub(crate) fn new(pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut secrets = Self::default();
        for (name, value) in pairs {
            let value = value.trim();
            if value.len() < SHORTEST_MASKED {
                continue;
            }
            let lines: Vec<String> = value
                .split('\n')
                .map(|line| line.trim_end_matches('\r').to_owned())
                .collect();
            let joined = lines.join("\n");
            let mut whole = vec![value.to_owned(), joined.clone()];
            whole.extend(escaped(value));
            whole.extend(escaped(&joined));
            if lines.len() > 1 {
                whole.push(lines.join("\r\n"));
                secrets.multiline.push(lines.clone());
                for line in &lines {
                    let line = line.trim();
                    if line.len() >= SHORTEST_MASKED {
                        secrets.forms.push(line.to_owned());
                        secrets.forms.extend(escaped(line));
                    }
                }
            }
            whole.sort();
            whole.dedup();
            secrets.forms.extend(whole.iter().cloned());
            secrets.found.push((name, whole));
        }
        secrets
            .forms
            .sort_by_key(|form| std::cmp::Reverse(form.len()));
        secrets.forms.dedup();
        secrets
    }

    /// `text` with every secret value, and every line of a multi-line one, replaced.
    pub(crate) fn mask(&self, text: &str) -> String {
        let mut masked = text.to_owned();
        for form in &self.forms {
            if masked.contains(form.as_str()) {
                masked = masked.replace(form.as_str(), MASK);
            }
        }
        masked
    }

    /// A line of output masked: a line the sandbox cut short ([`cut_line`]) may end in the
    /// start of a value, whose rest was not kept; that start is masked too.
    pub(crate) fn mask_line(&self, line: &str) -> String {
        let Some((kept, marker)) = cut_line(line) else {
            return self.mask(line);
        };
        let mut kept = self.mask(kept);
        let start = self
            .forms
            .iter()
            .filter_map(|form| {
                (SHORTEST_MASKED..form.len())
                    .rev()
                    .filter(|&n| form.is_char_boundary(n))
                    .find(|&n| kept.ends_with(&form[..n]))
            })
            .max();
        if let Some(n) = start {
            kept.truncate(kept.len() - n);
            kept.push_str(MASK);
        }
        kept + marker
    }

    /// Masks what an agent's output decoded to: its reply, failure and tool calls.
    pub(crate) fn mask_trace(&self, trace: &mut Trace) {
        if self.forms.is_empty() {
            return;
        }
        for text in trace.reply.iter_mut().chain(trace.failure.iter_mut()) {
            *text = self.mask(text);
        }
        for call in &mut trace.tools {
            call.tool = self.mask(&call.tool);
            call.summary = self.mask(&call.summary);
        }
    }

    /// The name of a secret whose value occurs in `bytes`.
    pub(crate) fn found_in(&self, bytes: &[u8]) -> Option<&str> {
        self.count_in(bytes)
            .into_iter()
            .find(|(_, count)| *count > 0)
            .map(|(name, _)| name)
    }

    /// How often each secret's value occurs in `bytes`, by name.
    pub(crate) fn count_in(&self, bytes: &[u8]) -> Vec<(&str, usize)> {
        self.found
            .iter()
            .map(|(name, forms)| {
                let count = forms.iter().map(|form| occurrences(bytes, form)).sum();
                (name.as_str(), count)
            })
            .collect()
    }

    /// Whether there is no value to look for.
    pub(crate) fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// Whether the lines `held` (from one stream, in order) could be the start of a
    /// multi-line value printed whole: the first ends with its first line, the others are
    /// its next lines.
    fn could_start(&self, held: &[String]) -> bool {
        self.multiline.iter().any(|lines| {
            held.len() < lines.len()
                && held[0].ends_with(lines[0].as_str())
                && held[1..].iter().zip(&lines[1..]).all(|(h, l)| h == l)
        })
    }

    /// Whether `held` holds a multi-line value printed whole, ending in its last line.
    fn completes(&self, held: &[String]) -> bool {
        self.multiline.iter().any(|lines| {
            let n = lines.len();
            held.len() == n
                && held[0].ends_with(lines[0].as_str())
                && held[1..n - 1] == lines[1..n - 1]
                && held[n - 1].starts_with(lines[n - 1].as_str())
        })
    }
}

/// `value` as it reads inside a JSON string, escaped once and twice (JSON text in a JSON
/// string), by serde and with non-ASCII characters as `\u` escapes (as Python writes it);
/// only the forms that differ from `value`.
fn escaped(value: &str) -> Vec<String> {
    let once = json_escaped(value);
    let ascii = ascii_escaped(&once);
    let mut forms = vec![json_escaped(&once), json_escaped(&ascii), once, ascii];
    forms.retain(|form| form != value);
    forms.sort();
    forms.dedup();
    forms
}

fn json_escaped(value: &str) -> String {
    let quoted = serde_json::Value::String(value.to_owned()).to_string();
    quoted[1..quoted.len() - 1].to_owned()
}

fn ascii_escaped(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

fn occurrences(bytes: &[u8], form: &str) -> usize {
    let form = form.as_bytes();
    if form.is_empty() || bytes.len() < form.len() {
        return 0;
    }
    bytes.windows(form.len()).filter(|w| *w == form).count()
}

/// Masks the lines of a process's output as they come, stream by stream: each line masked,
/// and lines held back while they could be the start of a multi-line value, so a value
/// printed whole across lines is masked whole. Lines come out in order within a stream.
#[derive(Debug)]
pub(crate) struct OutputMask {
    secrets: Secrets,
    stdout: Vec<String>,
    stderr: Vec<String>,
}

impl OutputMask {
    pub(crate) fn new(secrets: Secrets) -> Self {
        Self {
            secrets,
            stdout: Vec::new(),
            stderr: Vec::new(),
        }
    }

    pub(crate) fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// The lines, masked, that `line` lets out (none while it is held back).
    pub(crate) fn push(&mut self, line: LogLine) -> Vec<LogLine> {
        let stream = line.stream;
        let held = match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        };
        held.push(line.line);
        let mut out = Vec::new();
        while !held.is_empty() {
            if self.secrets.completes(held) {
                let whole = std::mem::take(held).join("\n");
                out.push(self.secrets.mask(&whole));
            } else if self.secrets.could_start(held) {
                break;
            } else {
                let first = held.remove(0);
                out.push(self.secrets.mask_line(&first));
            }
        }
        out.into_iter()
            .map(|line| LogLine { stream, line })
            .collect()
    }

    /// The lines still held back, masked: the output has ended.
    pub(crate) fn finish(&mut self) -> Vec<LogLine> {
        let mut out = Vec::new();
        for (stream, held) in [
            (Stream::Stdout, &mut self.stdout),
            (Stream::Stderr, &mut self.stderr),
        ] {
            out.extend(held.drain(..).map(|line| LogLine {
                stream,
                line: self.secrets.mask_line(&line),
            }));
        }
        out
    }
}

/// The values of the secrets `names` from the runner's environment; one that is not set
/// is left out, and logged with `what` declared it.
pub(crate) fn read_secrets<'a>(
    names: impl IntoIterator<Item = &'a String>,
    what: &str,
) -> Vec<(String, String)> {
    let mut values = Vec::new();
    for name in names {
        match std::env::var(name) {
            Ok(value) => values.push((name.clone(), value)),
            Err(_) => {
                tracing::warn!(secret = %name, declared_by = %what, "a declared secret is not set in the runner's environment")
            }
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEM: &str = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACBzZWNyZXQta2V5LW1hdGVyaWFsLWZvci10ZXN0cy1vbmx5AAAA\nAB==\n-----END OPENSSH PRIVATE KEY-----\n";
    const QUOTED: &str = r#"pa"ss\word-42"#;

    fn secrets() -> Secrets {
        Secrets::new([
            ("SSH_KEY".to_owned(), PEM.to_owned()),
            ("DB_PASSWORD".to_owned(), QUOTED.to_owned()),
        ])
    }

    fn out(stream: Stream, line: &str) -> LogLine {
        LogLine {
            stream,
            line: line.to_owned(),
        }
    }

    /// Every line `lines` lets out of an [`OutputMask`], in order.
    fn masked(lines: &[LogLine]) -> Vec<String> {
        let mut mask = OutputMask::new(secrets());
        let mut texts = Vec::new();
        for line in lines {
            texts.extend(mask.push(line.clone()).into_iter().map(|l| l.line));
        }
        texts.extend(mask.finish().into_iter().map(|l| l.line));
        texts
    }

    fn assert_clear(texts: &[String]) {
        let all = texts.join("\n");
        for line in PEM.lines().chain([QUOTED, "b3BlbnNzaC1rZXkt", "AB=="]) {
            assert!(!all.contains(line), "{line:?} in {all}");
        }
    }

    #[test]
    fn secrets_are_masked_longest_first_and_found_in_bytes() {
        let secrets = Secrets::new([
            ("TOKEN".to_owned(), "abcd".to_owned()),
            ("LONG".to_owned(), "xxabcdxx".to_owned()),
            ("SHORT".to_owned(), "ab".to_owned()),
        ]);
        assert_eq!(
            secrets.mask("a xxabcdxx b abcd ab"),
            "a [secret] b [secret] ab"
        );
        assert_eq!(secrets.found_in(b"...abcd..."), Some("TOKEN"));
        assert_eq!(secrets.found_in(b"nothing"), None);
    }

    #[test]
    fn a_multi_line_value_printed_whole_is_masked_whole_and_its_lines_one_by_one() {
        let mut lines = vec![out(
            Stream::Stdout,
            "key: -----BEGIN OPENSSH PRIVATE KEY-----",
        )];
        lines.extend(PEM.lines().skip(1).map(|l| out(Stream::Stdout, l)));
        lines.push(out(Stream::Stdout, "done"));
        assert_eq!(masked(&lines), ["key: [secret]", "done"]);

        // Lines of the other stream in between do not stop it, nor are they held.
        let mut mask = OutputMask::new(secrets());
        let mut pem = PEM.lines();
        let first = mask.push(out(Stream::Stdout, pem.next().unwrap_or_default()));
        assert!(first.is_empty(), "held: it may be the key");
        let other = mask.push(out(Stream::Stderr, "warning"));
        assert_eq!(other.len(), 1);
        assert_eq!(other[0].line, "warning");

        // Printed in part, or its lines apart, each line is masked on its own.
        let texts = masked(&[
            out(Stream::Stdout, "-----BEGIN OPENSSH PRIVATE KEY-----"),
            out(Stream::Stdout, "something else"),
            out(Stream::Stderr, PEM.lines().nth(2).unwrap_or_default()),
            out(
                Stream::Stdout,
                "the end: -----END OPENSSH PRIVATE KEY----- and more",
            ),
        ]);
        assert_eq!(
            texts,
            [
                "[secret]",
                "something else",
                "[secret]",
                "the end: [secret] and more"
            ]
        );
        assert_clear(&texts);
    }

    #[test]
    fn json_escaped_values_are_masked_in_raw_lines_and_decoded_text() {
        let raw = serde_json::json!({"type": "result", "result": format!("the key is {PEM} and the password {QUOTED}")})
            .to_string();
        let texts = masked(&[out(Stream::Stdout, &raw)]);
        assert_clear(&texts);
        let nested = serde_json::json!({"content": raw}).to_string();
        assert_clear(&masked(&[out(Stream::Stdout, &nested)]));
        let python = r#"{"password": "pa\"ss\\word-42", "name": "caf\u00e9-secret"}"#;
        let secrets = Secrets::new([("NAME".to_owned(), "café-secret".to_owned())]);
        assert!(!secrets.mask(python).contains("caf\\u00e9-secret"));
        assert_eq!(secrets.mask("x café-secret"), "x [secret]", "and decoded");
    }

    #[test]
    fn the_start_of_a_value_at_a_line_cut_is_masked() {
        let secrets = secrets();
        let cut = |kept: &str| format!("{kept} … [line cut: 12 more bytes]");
        assert_eq!(secrets.mask_line(&cut(r#"x=pa"ss\wo"#)), cut("x=[secret]"));
        assert_eq!(
            secrets.mask_line(&cut(r#"x=pa"ss\w"#)),
            cut("x=[secret]"),
            "JSON-escaped"
        );
        assert_eq!(
            secrets.mask_line(&cut(r#"x=pa""#)),
            cut(r#"x=pa""#),
            "too short to tell"
        );
        assert_eq!(secrets.mask_line(&cut("xyz")), cut("xyz"));
        assert_eq!(
            secrets.mask_line(r#"x=pa"ss\wo"#),
            r#"x=pa"ss\wo"#,
            "a whole line"
        );
    }

    #[test]
    fn a_value_is_found_in_files_in_any_of_its_shapes_and_counted() {
        let secrets = secrets();
        let crlf = PEM.replace('\n', "\r\n");
        assert_eq!(secrets.found_in(crlf.as_bytes()), Some("SSH_KEY"));
        let json = serde_json::json!({"key": PEM}).to_string();
        assert_eq!(secrets.found_in(json.as_bytes()), Some("SSH_KEY"));
        assert_eq!(
            secrets.found_in(b"-----BEGIN OPENSSH PRIVATE KEY-----\nother\n"),
            None,
            "a line of a key is no key"
        );
        let twice = format!("{QUOTED} and {QUOTED}");
        assert_eq!(
            secrets.count_in(twice.as_bytes()),
            [("SSH_KEY", 0), ("DB_PASSWORD", 2)]
        );
    }
}
