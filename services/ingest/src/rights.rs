//! Who may do what: token scopes, the scope each route needs, and administrators.
//!
//! Every API route is listed in [`required_scope`], the one table the token check reads;
//! a route missing from it needs `admin`, so a new route is closed until someone decides.
//! What a person may do beyond a scope (decide a gate, start an SOP with `starters`) is
//! checked by the same functions for the API, chat and comments.

use std::collections::BTreeSet;
use std::fmt;

use axum::extract::FromRequestParts;
use axum::http::Method;
use axum::http::request::Parts;
use gatehouse_events::{Actor, Channel};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ApiError;

/// The group whose members administer Gatehouse (people, other people's tokens).
pub const ADMINS: &str = "admins";

/// The bootstrap administrator's person id: the token written to `admin.token` acts as
/// this person, who is always in [`ADMINS`].
pub const BOOTSTRAP_ADMIN: &str = "admin";

/// What a token may be used for.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Reading runs, gates, SOPs, schedules, people and one's own tokens.
    Read,
    /// Starting, cancelling, pausing, resuming and retrying runs; operating schedules.
    Run,
    /// Deciding gates (the gate's approvers still decide who may).
    Decide,
    /// Administering people and other people's tokens (only for people in `admins`).
    Admin,
}

impl Scope {
    /// Every scope, in order.
    pub const ALL: [Scope; 4] = [Scope::Read, Scope::Run, Scope::Decide, Scope::Admin];

    /// The scope's name in tokens and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Run => "run",
            Scope::Decide => "decide",
            Scope::Admin => "admin",
        }
    }

    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == name.trim())
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scopes(BTreeSet<Scope>);

impl Scopes {
    /// What a new token gets when its creator names no scopes: everything but `admin`.
    pub fn default_for_new() -> Self {
        Self([Scope::Read, Scope::Run, Scope::Decide].into())
    }

    /// [`Scopes::default_for_new`], as far as `giver` has them: what a token or a console
    /// session gets when its creator names no scopes.
    pub fn default_within(giver: &Scopes) -> Self {
        Self(
            Self::default_for_new()
                .0
                .intersection(&giver.0)
                .copied()
                .collect(),
        )
    }

    pub fn all() -> Self {
        Self(Scope::ALL.into())
    }

    pub fn of(scopes: impl IntoIterator<Item = Scope>) -> Self {
        Self(scopes.into_iter().collect())
    }

    /// Scopes as stored (`read,run`); unknown names are dropped, so a token never gains a
    /// right from a column it cannot read.
    pub fn parse_stored(stored: &str) -> Self {
        Self(stored.split(',').filter_map(Scope::parse).collect())
    }

    pub fn to_stored(&self) -> String {
        self.names().join(",")
    }

    /// The names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|s| s.as_str()).collect()
    }

    pub fn has(&self, scope: Scope) -> bool {
        self.0.contains(&scope)
    }

    /// Whether every one of `other` is among these (a token may only give what it has).
    pub fn covers(&self, other: &Scopes) -> bool {
        other.0.is_subset(&self.0)
    }

    pub fn to_vec(&self) -> Vec<Scope> {
        self.0.iter().copied().collect()
    }
}

/// The person a request acts for, with the token's scopes and the person's groups.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The person's id.
    pub person: String,
    /// Their groups, as configured or stored when the request came in.
    pub groups: Vec<String>,
    pub scopes: Scopes,
    /// The token's name, for the log.
    pub token: String,
    /// The token was made for an agent: whatever its scopes, it never decides a gate
    /// (gates are people's decisions), and tokens or sign-in links it makes are an
    /// agent's too.
    pub for_agent: bool,
}

/// The caller of a route behind the token check, which put it in the request.
impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or_else(|| ApiError::Internal("this route is not behind the token check".into()))
    }
}

impl Caller {
    /// The caller as an actor on the API channel.
    pub(crate) fn actor(&self) -> Actor {
        Actor {
            channel: Channel::Api,
            handle: self.person.clone(),
            person: Some(self.person.clone()),
        }
    }

    /// Whether the caller administers Gatehouse: an `admin` token of a person in `admins`.
    pub fn is_admin(&self) -> bool {
        self.scopes.has(Scope::Admin) && self.groups.iter().any(|g| g == ADMINS)
    }

    /// Refuses (403) unless the caller is an administrator.
    pub fn require_admin(&self, what: &str) -> Result<(), ApiError> {
        if self.is_admin() {
            return Ok(());
        }
        Err(ApiError::Forbidden(format!(
            "only an administrator may {what}; {} is not (an `admin` token of someone in group `{ADMINS}` is needed)",
            self.person
        )))
    }

    /// Refuses (403) unless the token has `scope`; `decide` is refused to a token made
    /// for an agent whatever its scopes, so every path that checks it (the API's route,
    /// the console's buttons) keeps agents from deciding gates.
    pub fn require(&self, scope: Scope) -> Result<(), ApiError> {
        if scope == Scope::Decide && self.for_agent {
            return Err(ApiError::Forbidden(format!(
                "this token (`{}`) was made for an agent, and only people decide gates; \
                 {} decides with a token of their own (one made without --for-agent)",
                self.token, self.person
            )));
        }
        if self.scopes.has(scope) {
            return Ok(());
        }
        Err(ApiError::Forbidden(format!(
            "this token (`{}`) lacks the `{scope}` scope; it has: {}",
            self.token,
            self.scopes.names().join(", ")
        )))
    }
}

/// The scope a route needs, by method and route template (as `MatchedPath` gives it,
/// without the `/api/v1` prefix). Unlisted routes need `admin`.
pub fn required_scope(method: &Method, route: &str) -> Scope {
    match (method.as_str(), route) {
        ("GET", _) => Scope::Read,
        // Creating or revoking one's own token; tokens for others need an administrator,
        // and a token can only give scopes it has (checked by the handler).
        ("POST", "/tokens") | ("DELETE", "/tokens/{name}") => Scope::Read,
        // A sign-in link for oneself; for someone else the handler needs an administrator.
        ("POST", "/login-links") => Scope::Read,
        (
            "POST",
            "/runs"
            | "/runs/{id}/cancel"
            | "/runs/{id}/pause"
            | "/runs/{id}/resume"
            | "/runs/{id}/retry"
            | "/schedules"
            | "/schedules/{name}/pause"
            | "/schedules/{name}/resume"
            | "/schedules/{name}/trigger"
            | "/schedules/{name}/backfill"
            | "/conversations/{id}/stop",
        )
        | ("DELETE", "/schedules/{name}") => Scope::Run,
        ("POST", "/runs/{id}/gates/{node}/decision" | "/questions/{id}/answer") => Scope::Decide,
        _ => Scope::Admin,
    }
}

/// Refuses (403) unless `person`, in `groups`, may start `sop` (its `starters`): the one
/// check the API, schedules, chat, comments and label triggers share. The caller resolves
/// the groups once, where the person came in.
pub(crate) fn may_start(
    sop: &gatehouse_sop::Sop,
    person: &str,
    groups: &[String],
) -> Result<(), ApiError> {
    if sop.may_start(person, groups) {
        return Ok(());
    }
    Err(ApiError::Forbidden(format!(
        "{person} may not start `{}`; its starters are {}",
        sop.name,
        sop.starters.as_deref().unwrap_or_default().join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlisted_routes_need_admin() {
        assert_eq!(required_scope(&Method::POST, "/people"), Scope::Admin);
        assert_eq!(required_scope(&Method::PUT, "/runs"), Scope::Admin);
        assert_eq!(required_scope(&Method::GET, "/anything"), Scope::Read);
        assert_eq!(
            required_scope(&Method::POST, "/runs/{id}/gates/{node}/decision"),
            Scope::Decide
        );
    }

    #[test]
    fn stored_scopes_drop_unknown_names() {
        let s = Scopes::parse_stored("read,root,decide");
        assert_eq!(s.names(), ["read", "decide"]);
        assert!(Scopes::all().covers(&s));
        assert!(!s.covers(&Scopes::default_for_new()));
    }

    #[test]
    fn admin_needs_the_scope_and_the_group() {
        let caller = |scopes: Scopes, groups: &[&str]| Caller {
            person: "ana".into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            scopes,
            token: "t".into(),
            for_agent: false,
        };
        assert!(caller(Scopes::all(), &["admins"]).is_admin());
        assert!(!caller(Scopes::all(), &["leads"]).is_admin());
        assert!(!caller(Scopes::default_for_new(), &["admins"]).is_admin());
    }

    #[test]
    fn an_agents_token_never_decides_whatever_its_scopes() {
        let mut caller = Caller {
            person: "ana".into(),
            groups: vec!["leads".into()],
            scopes: Scopes::all(),
            token: "ana-agent".into(),
            for_agent: true,
        };
        let refused = caller.require(Scope::Decide).unwrap_err().to_string();
        assert!(refused.contains("made for an agent"), "{refused}");
        assert!(caller.require(Scope::Read).is_ok());
        assert!(caller.require(Scope::Run).is_ok());
        caller.for_agent = false;
        assert!(caller.require(Scope::Decide).is_ok());
    }
}
