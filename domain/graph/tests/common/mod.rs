//! A strict enough XML well-formedness check for the SVG the crate writes: balanced
//! tags, one root, quoted attributes, only the five entities and numeric references,
//! and no characters XML 1.0 cannot hold.

pub fn well_formed(doc: &str) -> Result<(), String> {
    let mut stack: Vec<&str> = Vec::new();
    let mut roots = 0;
    let mut rest = doc;
    while let Some(at) = rest.find(['<', '&']) {
        text(&rest[..at])?;
        if rest[at..].starts_with('&') {
            rest = entity(&rest[at..])?;
            continue;
        }
        let end = tag_end(&rest[at..]).ok_or("unclosed tag")? + at;
        let tag = &rest[at + 1..end];
        rest = &rest[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            if stack.pop() != Some(name) {
                return Err(format!("</{name}> closes nothing open"));
            }
            continue;
        }
        let (body, empty) = match tag.strip_suffix('/') {
            Some(body) => (body, true),
            None => (tag, false),
        };
        let name_len = body.find(char::is_whitespace).unwrap_or(body.len());
        let (name, mut attrs) = body.split_at(name_len);
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ":-_".contains(c))
        {
            return Err(format!("bad tag name in <{tag}>"));
        }
        if stack.is_empty() {
            roots += 1;
        }
        while !attrs.trim().is_empty() {
            let trimmed = attrs.trim_start();
            let eq = trimmed
                .find('=')
                .ok_or(format!("attribute without value in <{tag}>"))?;
            let key = &trimmed[..eq];
            if key.is_empty()
                || !key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || ":-_".contains(c))
            {
                return Err(format!("bad attribute name {key:?}"));
            }
            let value = trimmed[eq + 1..]
                .strip_prefix('"')
                .ok_or("unquoted attribute")?;
            let close = value.find('"').ok_or("unterminated attribute")?;
            let mut v = &value[..close];
            if v.contains('<') {
                return Err(format!("`<` in attribute {key}"));
            }
            while let Some(amp) = v.find('&') {
                text(&v[..amp])?;
                v = entity(&v[amp..])?;
            }
            text(v)?;
            attrs = &value[close + 1..];
        }
        if !empty {
            stack.push(name);
        }
    }
    text(rest)?;
    match (stack.as_slice(), roots) {
        ([], 1) => Ok(()),
        ([], n) => Err(format!("{n} root elements")),
        (open, _) => Err(format!("unclosed: {open:?}")),
    }
}

fn tag_end(s: &str) -> Option<usize> {
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '>' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

fn text(s: &str) -> Result<(), String> {
    match s.chars().find(|&c| {
        (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) || matches!(c, '\u{fffe}' | '\u{ffff}')
    }) {
        Some(c) => Err(format!("character {c:?} XML cannot hold")),
        None => Ok(()),
    }
}

/// `s` starts with `&`: the rest after a valid reference.
fn entity(s: &str) -> Result<&str, String> {
    let semi = s.find(';').ok_or("`&` without `;`")?;
    let name = &s[1..semi];
    let numeric = name
        .strip_prefix('#')
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    if numeric || ["amp", "lt", "gt", "quot", "apos"].contains(&name) {
        Ok(&s[semi + 1..])
    } else {
        Err(format!("bad reference &{name};"))
    }
}
