//! Text from SOP files made safe to put in SVG: escaped, cleaned of characters XML
//! cannot carry, shortened to fit a box by an estimate of its width; and links limited to harmless ones.

/// `text` for an XML text node or a quoted attribute value. Line breaks and tabs become
/// spaces; characters XML 1.0 cannot hold (most control characters, U+FFFE, U+FFFF),
/// even as references, become U+FFFD.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(' '),
            '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// `text` as it fits in `room` pixels at `px` pixels a letter, cut short with an
/// ellipsis when it does not. Widths are estimates for a sans-serif face, erring wide.
pub(crate) fn fit(text: &str, room: f64, px: f64) -> String {
    let room = room / px;
    if text.chars().map(em).sum::<f64>() <= room {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = em('…');
    for c in text.chars() {
        used += em(c);
        if used > room {
            break;
        }
        out.push(c);
    }
    out.truncate(out.trim_end().len());
    out.push('…');
    out
}

/// `text` over at most `max_lines` lines of `room` pixels at `px` pixels a letter: broken
/// between words, a word too long for a line broken where it must, and the last line cut
/// short with an ellipsis when the rest does not fit. Always at least one line.
pub(crate) fn wrap(text: &str, room: f64, px: f64, max_lines: usize) -> Vec<String> {
    let width = |t: &str| t.chars().map(em).sum::<f64>() * px;
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let joined = if line.is_empty() {
            word.to_owned()
        } else {
            format!("{line} {word}")
        };
        if width(&joined) <= room {
            line = joined;
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        // A word wider than a line on its own is broken by letters.
        let mut rest = word;
        while width(rest) > room {
            let mut used = 0.0;
            let cut = rest
                .char_indices()
                .find(|(_, c)| {
                    used += em(*c) * px;
                    used > room
                })
                .map_or(rest.len(), |(i, _)| {
                    i.max(rest.chars().next().map_or(1, char::len_utf8))
                });
            lines.push(rest[..cut].to_owned());
            rest = &rest[cut..];
        }
        line = rest.to_owned();
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    let max_lines = max_lines.max(1);
    if lines.len() > max_lines {
        let rest = lines.split_off(max_lines - 1).join(" ");
        let mut last = fit(&rest, room, px);
        if !last.ends_with('…') {
            last.push('…');
        }
        lines.push(last);
    }
    lines
}

/// A character's estimated width, in ems.
pub(crate) fn em(c: char) -> f64 {
    match c {
        'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '\'' | '!' | '|' => 0.3,
        'f' | 't' | 'r' | 'I' | ' ' | '(' | ')' | '[' | ']' | '-' | '/' => 0.4,
        'm' | 'w' | 'M' | 'W' | '@' | '%' => 0.9,
        'A'..='Z' => 0.72,
        '0'..='9' | 'a'..='z' | '_' | '·' => 0.6,
        c if c.is_ascii() => 0.6,
        // Wide scripts: CJK, Hangul, emoji.
        '\u{1100}'..='\u{115f}' | '\u{2e80}'..='\u{a4cf}' | '\u{ac00}'..='\u{d7a3}' => 1.0,
        '\u{f900}'..='\u{faff}' | '\u{ff00}'..='\u{ff60}' | '\u{1f300}'..='\u{1faff}' => 1.0,
        _ => 0.7,
    }
}

/// `href` when following it cannot run anything: a fragment, a relative path, or an
/// http, https or mailto URL. Anything with whitespace or control characters is refused,
/// since browsers drop those and `java\tscript:` would run.
pub(crate) fn safe_href(href: &str) -> Option<&str> {
    if href.is_empty() || href.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    match href.find([':', '/', '?', '#']) {
        Some(i) if href[i..].starts_with(':') => {
            let scheme = href[..i].to_ascii_lowercase();
            ["http", "https", "mailto"]
                .contains(&scheme.as_str())
                .then_some(href)
        }
        _ => Some(href),
    }
}

/// `prefix` as an XML id start: letters, digits, `-` and `_`, beginning with a letter.
pub(crate) fn id_prefix(prefix: &str) -> String {
    let mut out = String::new();
    if !prefix.starts_with(|c: char| c.is_ascii_alphabetic()) {
        out.push_str("g-");
    }
    for c in prefix.chars() {
        let keep = c.is_ascii_alphanumeric() || c == '-' || c == '_';
        out.push(if keep { c } else { '-' });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_drops_what_xml_cannot_hold() {
        assert_eq!(
            escape(r#"<a href="x">&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(escape("a\nb\u{1}c\u{ffff}"), "a b\u{fffd}c\u{fffd}");
    }

    #[test]
    fn fits_text_to_a_width_with_an_ellipsis() {
        assert_eq!(fit("short", 100.0, 10.0), "short");
        assert_eq!(fit("Build the thing", 50.0, 10.0), "Build th…");
        assert_eq!(fit("界界界界界", 30.0, 10.0), "界界…");
        assert_eq!(fit("", 0.0, 10.0), "");
    }

    #[test]
    fn wraps_between_words_and_cuts_only_the_last_line() {
        assert_eq!(wrap("short", 100.0, 10.0, 3), ["short"]);
        assert_eq!(wrap("", 100.0, 10.0, 3), [""]);
        assert_eq!(
            wrap("Build the thing now", 60.0, 10.0, 3),
            ["Build the", "thing now"]
        );
        // A word wider than a line is broken by letters.
        assert_eq!(
            wrap("abcdefghijklmnop", 60.0, 10.0, 3),
            ["abcdefghijk", "lmnop"]
        );
        // Past the last line, the rest is cut with an ellipsis.
        let lines = wrap("one two three four five six seven eight", 60.0, 10.0, 2);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0], "one two");
        assert!(lines[1].ends_with('…'), "{lines:?}");
        for line in &lines {
            assert!(
                line.chars().map(em).sum::<f64>() * 10.0 <= 60.0,
                "{lines:?}"
            );
        }
    }

    #[test]
    fn only_harmless_links_are_kept() {
        for ok in [
            "#node-a",
            "/runs/1#node-a",
            "runs/1",
            "https://x.test/a",
            "MAILTO:a@b",
        ] {
            assert_eq!(safe_href(ok), Some(ok), "{ok}");
        }
        for bad in [
            "javascript:alert(1)",
            "JavaScript:x",
            "java\tscript:x",
            " #a",
            "data:x",
            "",
        ] {
            assert_eq!(safe_href(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn id_prefixes_are_valid_ids() {
        assert_eq!(id_prefix("graph-1"), "graph-1");
        assert_eq!(id_prefix("1 \"x\""), "g-1--x-");
    }
}
