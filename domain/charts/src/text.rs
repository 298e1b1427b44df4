//! Making user-supplied text (project, person and model names, titles) safe and short.

/// Escapes the five XML specials; for text and attribute values alike.
pub(crate) fn escape_xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            other => out.push(other),
        }
    }
    out
}

/// Replaces characters XML 1.0 forbids (control characters, U+FFFE/U+FFFF) with spaces,
/// since escaping cannot make those well-formed, and trims the ends.
pub(crate) fn clean(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| {
            if c.is_control() || c == '\u{FFFE}' || c == '\u{FFFF}' {
                ' '
            } else {
                c
            }
        })
        .collect();
    cleaned.trim().to_owned()
}

/// At most `max_chars` characters, ending in "…" when cut.
pub(crate) fn fit(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Rough rendered width: the SVG is measured by the browser, not here, so this only
/// has to be generous enough that labels do not collide.
pub(crate) fn width_px(text: &str, font_px: f64) -> u32 {
    let tenths_of_em: u32 = text
        .chars()
        .map(|c| if c.is_ascii() { 6 } else { 10 })
        .sum();
    (f64::from(tenths_of_em) * font_px / 10.0).ceil() as u32
}

/// How many characters fit in `px` at `font_px` (assuming ASCII-width characters).
pub(crate) fn chars_in(px: u32, font_px: f64) -> usize {
    (f64::from(px) / (0.6 * font_px)).floor().max(1.0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape_xml(r#"<script>alert("x&y")</script>'"#),
            "&lt;script&gt;alert(&quot;x&amp;y&quot;)&lt;/script&gt;&apos;"
        );
    }

    #[test]
    fn cleans_control_characters() {
        assert_eq!(clean("\u{0}a\tb\u{7}\n"), "a b");
        assert_eq!(clean("x\u{FFFF}y"), "x y");
    }

    #[test]
    fn fits_by_characters_not_bytes() {
        assert_eq!(fit("ééééé", 5), "ééééé");
        assert_eq!(fit("éééééé", 5), "éééé…");
        assert_eq!(fit("abc", 0), "…");
    }
}
