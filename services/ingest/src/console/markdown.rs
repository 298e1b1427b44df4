//! Markdown a node wrote, made safe to show: rendered with pulldown-cmark, then cleaned by
//! ammonia's allow-list (no scripts, no event handlers, no `javascript:` links, no
//! styles), since anything an agent wrote is untrusted.

use pulldown_cmark::{Options, Parser, html};

/// The HTML of `text`, sanitised.
pub(crate) fn to_safe_html(text: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES;
    let mut rendered = String::with_capacity(text.len() * 3 / 2);
    html::push_html(&mut rendered, Parser::new_ext(text, options));
    ammonia::Builder::default()
        .link_rel(Some("noopener noreferrer nofollow"))
        .clean(&rendered)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::to_safe_html;

    #[test]
    fn markdown_renders() {
        let html =
            to_safe_html("# Report\n\n*fine* and `code`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n");
        assert!(html.contains("<h1>Report</h1>"), "{html}");
        assert!(html.contains("<em>fine</em>"), "{html}");
        assert!(html.contains("<table>"), "{html}");
    }

    #[test]
    fn scripts_and_handlers_are_removed() {
        let html = to_safe_html(
            "<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n[x](javascript:alert(3)) <a href=\"https://ok.test\" onclick=\"alert(4)\">ok</a>",
        );
        for bad in ["<script", "onerror", "javascript:", "onclick"] {
            assert!(!html.contains(bad), "{bad} survived: {html}");
        }
        assert!(html.contains("https://ok.test"), "{html}");
    }
}
