//! The names people give what they create through the API (tokens, people, groups): one
//! rule, checked where each is created.

use crate::ApiError;

/// Token and person ids: short, and safe in a shell, a URL path and a log line.
pub(crate) fn check_name(name: &str) -> Result<(), ApiError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && !name.starts_with(['.', '-']);
    if ok {
        return Ok(());
    }
    Err(ApiError::Unprocessable(format!(
        "`{name}` is not a valid name: use 1 to 64 letters, digits, `.`, `_` or `-`, not starting with `.` or `-`"
    )))
}
