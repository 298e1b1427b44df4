//! The one resolver of ids people type: the API's paths, chat and comment commands and the
//! console take a whole id or a prefix of at least 4 hex digits ([`IdRef`]), and this
//! finds the one run, requirement, conversation or question it names among those the
//! caller may read. A prefix that names none is 404, several 409 with the candidates, and
//! one that is no id 400 saying what an id looks like.

use gatehouse_commands::IdRef;
use gatehouse_store::{IdCandidate, IdKind};
use uuid::Uuid;

use crate::error::Candidate;
use crate::projects::{Reader, hidden};
use crate::{ApiError, ApiState};

/// The most candidates an ambiguous prefix lists; more are counted, not shown.
const SHOWN: usize = 10;

/// Reads `text` as an id or a prefix of one (400 when it is neither) and resolves it.
pub(crate) async fn resolve(
    api: &ApiState,
    kind: IdKind,
    text: &str,
    reader: Reader<'_>,
) -> Result<Uuid, ApiError> {
    let reference = IdRef::parse(text).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    resolve_ref(api, kind, &reference, reader).await
}

/// The one `kind` that `reference` names among those `reader` may read: 404 for none
/// (also when the only ones are in projects `reader` may not read: they are never
/// confirmed to exist), 409 listing them for several.
pub(crate) async fn resolve_ref(
    api: &ApiState,
    kind: IdKind,
    reference: &IdRef,
    reader: Reader<'_>,
) -> Result<Uuid, ApiError> {
    let (low, high) = reference.bounds();
    let hidden = hidden(api, reader);
    let limit = i64::try_from(SHOWN + 1).unwrap_or(i64::MAX);
    let found = api
        .store
        .ids_between(kind, low, high, &hidden, limit)
        .await?;
    one_of(kind, reference, found)
}

/// `found`'s one id, or why there is not one.
fn one_of(kind: IdKind, reference: &IdRef, found: Vec<IdCandidate>) -> Result<Uuid, ApiError> {
    let noun = noun(kind);
    match found.as_slice() {
        [] => Err(ApiError::NotFound(format!(
            "no {noun} matches `{reference}`"
        ))),
        [one] => Ok(one.id),
        many => {
            let more = many.len() > SHOWN;
            let candidates: Vec<Candidate> = many
                .iter()
                .take(SHOWN)
                .map(|c| Candidate {
                    id: c.id,
                    what: c.what.clone(),
                })
                .collect();
            let listed: Vec<String> = candidates
                .iter()
                .map(|c| format!("{} ({})", c.id, c.what))
                .collect();
            let message = format!(
                "`{reference}` matches {} {noun}s; give more of the id: {}{}",
                if more {
                    "more than 10".to_owned()
                } else {
                    many.len().to_string()
                },
                listed.join(", "),
                if more { ", …" } else { "" }
            );
            Err(ApiError::Ambiguous {
                message,
                candidates,
            })
        }
    }
}

fn noun(kind: IdKind) -> &'static str {
    match kind {
        IdKind::Run => "run",
        IdKind::Requirement => "requirement",
        IdKind::Conversation => "conversation",
        IdKind::Question => "question",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(n: u128) -> IdCandidate {
        IdCandidate {
            id: Uuid::from_u128(n),
            what: format!("fix · running {n}"),
        }
    }

    fn prefix() -> IdRef {
        IdRef::parse("0000").expect("a prefix")
    }

    #[test]
    fn none_is_not_found_naming_the_prefix() {
        let err = one_of(IdKind::Run, &prefix(), Vec::new()).expect_err("none");
        assert_eq!(err.status(), axum::http::StatusCode::NOT_FOUND);
        assert_eq!(err.to_string(), "no run matches `0000`");
    }

    #[test]
    fn one_is_its_id() {
        let id = one_of(IdKind::Requirement, &prefix(), vec![candidate(7)]).expect("one");
        assert_eq!(id, Uuid::from_u128(7));
    }

    #[test]
    fn several_are_a_conflict_listing_at_most_ten() {
        let err =
            one_of(IdKind::Run, &prefix(), (1..=3).map(candidate).collect()).expect_err("three");
        assert_eq!(err.status(), axum::http::StatusCode::CONFLICT);
        let ApiError::Ambiguous {
            message,
            candidates,
        } = err
        else {
            panic!("not ambiguous");
        };
        assert_eq!(candidates.len(), 3);
        assert!(message.starts_with("`0000` matches 3 runs"), "{message}");
        assert!(message.contains("(fix · running 2)"), "{message}");
        let err =
            one_of(IdKind::Run, &prefix(), (1..=11).map(candidate).collect()).expect_err("eleven");
        let ApiError::Ambiguous {
            message,
            candidates,
        } = err
        else {
            panic!("not ambiguous");
        };
        assert_eq!(candidates.len(), 10);
        assert!(message.contains("more than 10 runs"), "{message}");
        assert!(!message.contains("running 11"), "{message}");
    }
}
