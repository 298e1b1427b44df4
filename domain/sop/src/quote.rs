//! How messages repeat text that came from outside: a parameter value, a file name.

/// How much of a refused value a message repeats.
const SHOWN_CHARS: usize = 80;

/// Text someone else wrote, as a message repeats it: control characters escaped, so a
/// newline cannot forge a line of a chat reply or a log, and cut after [`SHOWN_CHARS`].
pub(crate) fn shown(value: &str) -> String {
    let mut out = String::new();
    for c in value.chars().take(SHOWN_CHARS) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if value.chars().nth(SHOWN_CHARS).is_some() {
        out.push('…');
    }
    out
}
