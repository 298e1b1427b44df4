//! What the SOP test files share.

/// The messages a refused SOP gets, as `FILE:LINE:COLUMN: message` lines.
pub fn errors(text: &str) -> Vec<String> {
    gatehouse_sop::parse("sops/x.yaml", text)
        .expect_err("the SOP should be refused")
        .diagnostics
        .iter()
        .map(ToString::to_string)
        .collect()
}
