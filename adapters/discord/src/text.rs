//! Discord renders markdown in message content, embed descriptions and field values, so
//! plain text from users (requirement titles, comments) is escaped before it goes there,
//! and everything is cut to Discord's length limits, which it enforces by refusing the
//! whole message.

/// At most `max` characters of `text`, ending in `…` when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `text` with Discord markdown made literal. Links are left alone: escaping inside a URL
/// would break it, and a bare URL renders as itself anyway.
pub(crate) fn escape_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut line_start = true;
    let mut in_url = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            in_url = false;
        } else if !in_url && starts_url(&text[i..]) && (i == 0 || preceded_by_space(text, i)) {
            in_url = true;
        }
        let special = matches!(
            c,
            '\\' | '*' | '_' | '~' | '`' | '|' | '<' | '>' | '[' | ']' | '#'
        ) || (line_start && matches!(c, '-' | '+'));
        if special && !in_url {
            out.push('\\');
        }
        out.push(c);
        line_start = c == '\n' || (line_start && c.is_whitespace());
    }
    out
}

fn starts_url(rest: &str) -> bool {
    rest.starts_with("https://") || rest.starts_with("http://")
}

fn preceded_by_space(text: &str, i: usize) -> bool {
    text[..i]
        .chars()
        .next_back()
        .is_some_and(char::is_whitespace)
}

/// `text` for the inside of a fenced code block: only a fence could end the block early.
pub(crate) fn escape_code_block(text: &str) -> String {
    text.replace("```", "`\u{200b}`\u{200b}`")
}

/// `1.5 KiB`: sizes as people read them.
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut size = bytes as f64 / 1024.0;
    let mut unit = 0;
    while size >= 1024.0 && unit + 1 < UNITS.len() {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_by_characters() {
        assert_eq!(truncate("héllo", 5), "héllo");
        assert_eq!(truncate("héllo wörld", 5), "héll…");
        assert_eq!(truncate("héllo wörld", 5).chars().count(), 5);
    }

    #[test]
    fn escapes_markdown_but_not_links() {
        assert_eq!(
            escape_markdown("fix *all* the_things <@123> see https://x.io/a_b_c"),
            "fix \\*all\\* the\\_things \\<@123\\> see https://x.io/a_b_c"
        );
        assert_eq!(escape_markdown("- item\n# head"), "\\- item\n\\# head");
        assert_eq!(escape_markdown("bug-fix"), "bug-fix");
        assert_eq!(
            escape_markdown("[x](https://evil)"),
            "\\[x\\](https://evil)"
        );
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(human_size(77), "77 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(5 * 1024 * 1024), "5.0 MiB");
    }

    #[test]
    fn fences_cannot_close_a_block() {
        assert!(!escape_code_block("a ``` b").contains("```"));
    }
}
