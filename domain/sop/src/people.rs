//! Lists of people: who may decide a gate, who may start an SOP.
//!
//! An entry is a person's id or `group:<name>`; a person matches when named directly or
//! through one of their groups.

/// Whether `entry` can name someone: a non-empty id, or `group:` followed by a name. The
/// message says what is wrong with it.
pub fn check_person_or_group(entry: &str) -> Result<(), String> {
    match entry.strip_prefix("group:") {
        Some(group) if group.trim().is_empty() => {
            Err(format!("`{entry}` names no group; write group:<name>"))
        }
        Some(_) => Ok(()),
        None if entry.trim().is_empty() => {
            Err("an empty entry names nobody; write a person's id or group:<name>".to_owned())
        }
        None => Ok(()),
    }
}

/// Whether `person`, a member of `groups`, is named by one of `entries`.
pub fn names_person(entries: &[String], person: &str, groups: &[String]) -> bool {
    entries
        .iter()
        .any(|entry| match entry.strip_prefix("group:") {
            Some(group) => groups.iter().any(|g| g == group),
            None => entry == person,
        })
}
