//! Ids as people type them: a whole UUID or the first hex digits of one ([`IdRef`]), and
//! the shortest prefixes that tell a set of ids apart ([`short_ids`]). Resolving a prefix
//! to the one id it names is the caller's (it needs the database and the caller's rights).

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

/// A reference to a run, requirement, conversation or question: its id, or a prefix of it
/// of at least [`IdRef::MIN_DIGITS`] hex digits, dashes anywhere or nowhere, any case.
///
/// UUIDv7 ids begin with their creation time, so ids made in the same minute share their
/// first 8 to 10 digits: a prefix is only as good as it is unique, which resolving checks.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdRef {
    /// The hex digits, lowercase, without dashes; 4 to 32 of them.
    digits: String,
}

/// Why a word is not an [`IdRef`]; each message says what an id looks like.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdRefError {
    /// A character other than a hex digit or a dash.
    #[error(
        "`{0}` is not an id: ids are hex digits with dashes, like 0193a4b2-7c3d-7e4f-8a5b-6c7d8e9f0a1b, or their first 4 or more digits"
    )]
    NotHex(String),
    /// Fewer than [`IdRef::MIN_DIGITS`] digits: too many ids would share them.
    #[error("`{0}` is too short for an id prefix: give at least 4 hex digits")]
    TooShort(String),
    /// More digits than a UUID has.
    #[error("`{0}` is longer than an id: a UUID has 32 hex digits")]
    TooLong(String),
}

impl IdRef {
    /// The fewest digits a prefix may have: 3 would name one of 4096 slices of the ids,
    /// which a busy deployment fills within a day.
    pub const MIN_DIGITS: usize = 4;

    /// Reads `text` (trimmed) as an id or a prefix of one.
    pub fn parse(text: &str) -> Result<IdRef, IdRefError> {
        let text = text.trim();
        if text.is_empty() || !text.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return Err(IdRefError::NotHex(text.to_owned()));
        }
        let digits: String = text
            .chars()
            .filter(char::is_ascii_hexdigit)
            .map(|c| c.to_ascii_lowercase())
            .collect();
        if digits.len() < Self::MIN_DIGITS {
            return Err(IdRefError::TooShort(text.to_owned()));
        }
        if digits.len() > 32 {
            return Err(IdRefError::TooLong(text.to_owned()));
        }
        Ok(IdRef { digits })
    }

    /// The hex digits, lowercase, without dashes.
    pub fn digits(&self) -> &str {
        &self.digits
    }

    /// The id itself, when all 32 digits were given.
    pub fn exact(&self) -> Option<Uuid> {
        (self.digits.len() == 32)
            .then(|| Uuid::try_parse(&self.digits).ok())
            .flatten()
    }

    /// The lowest and the highest id that start with these digits: the ids the reference
    /// may name are those between them, both included. Ids compare byte by byte in both
    /// databases (Postgres's `uuid`, SQLite's 16-byte `BLOB`), so this is an index range.
    pub fn bounds(&self) -> (Uuid, Uuid) {
        let padded = |fill: char| {
            let mut hex = self.digits.clone();
            hex.extend(std::iter::repeat_n(fill, 32 - hex.len()));
            // 32 hex digits always parse.
            Uuid::try_parse(&hex).unwrap_or_default()
        };
        (padded('0'), padded('f'))
    }

    /// Whether `id` starts with these digits.
    pub fn matches(&self, id: Uuid) -> bool {
        id.simple().to_string().starts_with(&self.digits)
    }
}

impl From<Uuid> for IdRef {
    fn from(id: Uuid) -> Self {
        IdRef {
            digits: id.simple().to_string(),
        }
    }
}

impl FromStr for IdRef {
    type Err = IdRefError;

    fn from_str(text: &str) -> Result<Self, IdRefError> {
        IdRef::parse(text)
    }
}

/// A whole id in its hyphenated form; a prefix as its digits.
impl fmt::Display for IdRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.exact() {
            Some(id) => write!(f, "{id}"),
            None => f.write_str(&self.digits),
        }
    }
}

/// The fewest digits a short id shows: the first block of a UUID, as people quote it.
const SHORT_DIGITS: usize = 8;

/// For each of `ids`, the shortest start of its hyphenated form, of at least 8 hex digits,
/// that no other of `ids` shares: what a list shows so that each id it shows can be typed
/// back. Ids of the same minute share their first 8 to 10 digits, so a fixed length would
/// not do. Unique among `ids`, not among every id stored: a prefix that has become
/// ambiguous is answered with its candidates, never resolved to the wrong one.
pub fn short_ids(ids: &[Uuid]) -> Vec<String> {
    let mut sorted: Vec<String> = ids.iter().map(|id| id.simple().to_string()).collect();
    sorted.sort();
    sorted.dedup();
    ids.iter()
        .map(|id| {
            let digits = id.simple().to_string();
            let at = sorted.binary_search(&digits).unwrap_or(0);
            let shared = |other: Option<&String>| other.map_or(0, |o| common_prefix(o, &digits));
            let before = at.checked_sub(1).and_then(|i| sorted.get(i));
            let needed = shared(before).max(shared(sorted.get(at + 1))) + 1;
            hyphenated_prefix(*id, needed.clamp(SHORT_DIGITS, 32))
        })
        .collect()
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// The start of `id`'s hyphenated form that holds `digits` hex digits.
fn hyphenated_prefix(id: Uuid, digits: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    for c in id.hyphenated().to_string().chars() {
        if count == digits {
            break;
        }
        if c != '-' {
            count += 1;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0190f3a2-7b1c-7d2e-8f00-0123456789ab";

    fn id(text: &str) -> Uuid {
        Uuid::parse_str(text).expect("a valid uuid")
    }

    #[test]
    fn reads_prefixes_with_or_without_dashes_in_any_case() {
        for text in [
            "0190",
            "0190f3a2",
            "0190F3A2-7B",
            "0190f3a27b",
            " 0190f3a2-7b1c ",
        ] {
            let r = IdRef::parse(text).expect(text);
            assert!(r.matches(id(ID)), "{text}");
            assert!(r.exact().is_none(), "{text}");
        }
        assert_eq!(
            IdRef::parse("0190F3A2-7b").map(|r| r.digits().to_owned()),
            Ok("0190f3a27b".to_owned())
        );
    }

    #[test]
    fn a_whole_id_is_exact_dashed_or_not() {
        assert_eq!(IdRef::parse(ID).ok().and_then(|r| r.exact()), Some(id(ID)));
        let undashed = ID.replace('-', "").to_uppercase();
        assert_eq!(
            IdRef::parse(&undashed).ok().and_then(|r| r.exact()),
            Some(id(ID))
        );
        assert_eq!(IdRef::from(id(ID)), IdRef::parse(ID).expect("an id"));
    }

    #[test]
    fn refuses_short_non_hex_and_overlong_words_saying_why() {
        assert_eq!(IdRef::parse("019"), Err(IdRefError::TooShort("019".into())));
        assert_eq!(
            IdRef::parse("01-9"),
            Err(IdRefError::TooShort("01-9".into()))
        );
        assert_eq!(
            IdRef::parse("----"),
            Err(IdRefError::TooShort("----".into()))
        );
        for word in [
            "run-12",
            "0190 f3",
            "{0190f3a2}",
            "",
            "0190/review",
            "+0190",
        ] {
            assert!(
                matches!(IdRef::parse(word), Err(IdRefError::NotHex(_))),
                "{word}"
            );
        }
        let long = format!("{}0", ID.replace('-', ""));
        assert_eq!(IdRef::parse(&long), Err(IdRefError::TooLong(long.clone())));
        let message = IdRef::parse("01a").expect_err("short").to_string();
        assert!(message.contains("at least 4 hex digits"), "{message}");
        let message = IdRef::parse("nope").expect_err("not hex").to_string();
        assert!(message.contains("hex digits"), "{message}");
    }

    #[test]
    fn bounds_hold_exactly_the_ids_with_the_prefix() {
        let r = IdRef::parse("0190f3a2-7b").expect("a prefix");
        let (low, high) = r.bounds();
        assert_eq!(low, id("0190f3a2-7b00-0000-0000-000000000000"));
        assert_eq!(high, id("0190f3a2-7bff-ffff-ffff-ffffffffffff"));
        assert!(low <= id(ID) && id(ID) <= high);
        // An odd number of digits bounds by the half byte.
        let (low, high) = IdRef::parse("0190f").expect("a prefix").bounds();
        assert_eq!(low, id("0190f000-0000-0000-0000-000000000000"));
        assert_eq!(high, id("0190ffff-ffff-ffff-ffff-ffffffffffff"));
        let whole = IdRef::parse(ID).expect("an id");
        assert_eq!(whole.bounds(), (id(ID), id(ID)));
    }

    #[test]
    fn displays_a_whole_id_hyphenated_and_a_prefix_as_its_digits() {
        let undashed = ID.replace('-', "");
        assert_eq!(IdRef::parse(&undashed).expect("id").to_string(), ID);
        assert_eq!(
            IdRef::parse("0190F3A2-7B").expect("prefix").to_string(),
            "0190f3a27b"
        );
    }

    #[test]
    fn short_ids_are_eight_digits_unless_more_are_needed_to_tell_apart() {
        let same_minute = [
            id("0190f3a2-7b1c-7d2e-8f00-0123456789ab"),
            id("0190f3a2-7b9c-7d2e-8f00-0123456789ab"),
            id("0190f3a2-7b9d-7000-8000-000000000000"),
            id("77770000-0000-7000-8000-000000000000"),
        ];
        assert_eq!(
            short_ids(&same_minute),
            ["0190f3a2-7b1", "0190f3a2-7b9c", "0190f3a2-7b9d", "77770000"]
        );
        for (short, id) in short_ids(&same_minute).iter().zip(same_minute) {
            let r = IdRef::parse(short).expect("a short id reads back");
            let matching: Vec<_> = same_minute.iter().filter(|i| r.matches(**i)).collect();
            assert_eq!(matching, [&id]);
        }
        // The same id twice is one id.
        let twice = [same_minute[3], same_minute[3]];
        assert_eq!(short_ids(&twice), ["77770000", "77770000"]);
        assert!(short_ids(&[]).is_empty());
    }
}
