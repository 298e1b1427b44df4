//! Who is looking at a page: the session cookie, the person it acts for, and the CSRF
//! token every form carries.
//!
//! The cookie holds a random secret; the database keeps only its hash, so a leaked row
//! signs nobody in, and signing out ends the row, so a copied cookie stops working
//! everywhere at once. The cookie is `HttpOnly` and `SameSite=Strict`, and `Secure` (with
//! the `__Host-` prefix) when the console is reached over HTTPS. A session acts for its
//! person with at most `read`, `run` and `decide` (no more than the token that asked for
//! its link had); it never gets `admin`, administrators' sessions included, which stays
//! with tokens. Every action goes through the API's own handler, so the console can do
//! exactly what the API would let that person do with those scopes.
//!
//! The CSRF token is derived from the cookie's secret (a hash with a fixed label), so it
//! needs no storage, differs per session and cannot be computed without the cookie.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::{COOKIE, HOST, ORIGIN};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use chrono::Utc;
use serde::de::DeserializeOwned;
use subtle::ConstantTimeEq;
use uuid::Uuid;

use super::page_error::PageError;
use crate::auth::{hash_token, sha256_hex};
use crate::rights::{Caller, Scopes};
use crate::{ApiError, ApiState};

/// The signed-in person behind a page request.
#[derive(Debug, Clone)]
pub(crate) struct Viewer {
    pub(crate) session: Uuid,
    /// Acts as an API caller would, with the session's scopes.
    pub(crate) caller: Caller,
    /// What this session's forms must send back.
    pub(crate) csrf: String,
    /// Whether the deliveries page has anything this person may see, for the navigation.
    pub(crate) sees_deliveries: bool,
}

impl Viewer {
    pub(crate) fn person(&self) -> &str {
        &self.caller.person
    }

    /// Refuses a form whose CSRF token is not this session's.
    pub(crate) fn check_csrf(&self, sent: &str) -> Result<(), PageError> {
        if bool::from(sent.as_bytes().ct_eq(self.csrf.as_bytes())) {
            return Ok(());
        }
        Err(PageError::from(ApiError::Forbidden(
            "this form's security token is missing or does not belong to your session; reload the page and try again".into(),
        )))
    }
}

/// The session secret's CSRF token.
pub(crate) fn csrf_of(secret: &str) -> String {
    sha256_hex(format!("gatehouse-console-csrf\0{secret}").as_bytes())
}

/// The cookie's name: with the `__Host-` prefix when the console is served over HTTPS,
/// so the browser also refuses one set by a sibling domain or over plain HTTP.
pub(crate) fn cookie_name(secure: bool) -> &'static str {
    if secure {
        "__Host-gatehouse_session"
    } else {
        "gatehouse_session"
    }
}

/// `Set-Cookie` starting a session with `secret`.
pub(crate) fn set_cookie(secret: &str, secure: bool, max_age_secs: i64) -> HeaderValue {
    let secure_attr = if secure { "; Secure" } else { "" };
    let value = format!(
        "{}={secret}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_secs}{secure_attr}",
        cookie_name(secure)
    );
    // The secret is hex; the value is always a valid header.
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// `Set-Cookie` that removes the session cookie.
pub(crate) fn clear_cookie(secure: bool) -> HeaderValue {
    let secure_attr = if secure { "; Secure" } else { "" };
    let value = format!(
        "{}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure_attr}",
        cookie_name(secure)
    );
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The session secret the request's cookie carries, if any.
pub(crate) fn secret_from(headers: &HeaderMap, secure: bool) -> Option<String> {
    cookie_value(headers, cookie_name(secure))
}

/// The value of the cookie `name`, if the request carries it.
pub(crate) fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim().to_owned())
        .filter(|v| !v.is_empty() && v.len() <= 128)
}

/// Whether a cross-site page sent this request: a browser says so in `Sec-Fetch-Site`, or
/// in `Origin` (on every POST). Our origins are the one people reach us at (`public_url`,
/// which a proxy in front may not pass on as `Host`) and the `Host` the request names; an
/// opaque origin (`null`: a sandboxed frame, a `data:` page) is another site. Refused for
/// forms as a second line behind the CSRF token.
pub(crate) fn cross_site(headers: &HeaderMap, public_url: Option<&str>) -> bool {
    if headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == "cross-site")
    {
        return true;
    }
    let Some(origin) = headers.get(ORIGIN).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let ours = public_url.is_some_and(|u| origin_of(u) == origin)
        || headers
            .get(HOST)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|host| origin.split_once("://").map(|(_, h)| h) == Some(host));
    !ours
}

/// `scheme://host[:port]` of an address, as browsers send it in `Origin`.
fn origin_of(url: &str) -> &str {
    let after_scheme = url.find("://").map(|i| i + 3).unwrap_or(0);
    match url[after_scheme..].find('/') {
        Some(path) => &url[..after_scheme + path],
        None => url,
    }
}

/// Looks the session up; `None` when there is none or it has ended, expired, or acts for
/// someone no longer known.
pub(crate) async fn viewer(
    api: &ApiState,
    headers: &HeaderMap,
) -> Result<Option<Viewer>, ApiError> {
    let Some(secret) = secret_from(headers, api.console.secure()) else {
        return Ok(None);
    };
    let Some(row) = api.store.session_by_hash(&hash_token(&secret)).await? else {
        return Ok(None);
    };
    if row.ended_at.is_some() || row.expires_at <= Utc::now() {
        return Ok(None);
    }
    let Some(person) = api.people.known(&api.store, &row.person).await? else {
        return Ok(None);
    };
    let scopes = Scopes::parse_stored(&row.scopes);
    let admin = person.groups.iter().any(|g| g == crate::rights::ADMINS);
    let reader = crate::projects::Reader::new(&person.id, &person.groups);
    let sees_deliveries = crate::projects::delivery_projects(api, reader, admin)
        .is_none_or(|projects| !projects.is_empty());
    Ok(Some(Viewer {
        session: row.id,
        caller: Caller {
            person: person.id.clone(),
            groups: person.groups.clone(),
            scopes,
            token: format!("console session ({})", row.via),
            // A person signed in; sign-in links are never made with an agent's token.
            for_agent: false,
        },
        csrf: csrf_of(&secret),
        sees_deliveries,
    }))
}

/// A page for signed-in people: anyone else is sent to sign in and brought back.
impl FromRequestParts<ApiState> for Viewer {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, api: &ApiState) -> Result<Self, PageError> {
        match viewer(api, &parts.headers).await? {
            Some(viewer) => Ok(viewer),
            None => Err(PageError::SignIn {
                next: parts
                    .uri
                    .path_and_query()
                    .map(|p| p.as_str().to_owned())
                    .unwrap_or_else(|| "/".into()),
                cross_site: cross_site(&parts.headers, api.console.public_url.as_deref()),
            }),
        }
    }
}

/// A form posted by a signed-in person, its CSRF token checked and the request refused
/// when it came from another site.
pub(crate) struct Posted<T> {
    pub(crate) viewer: Viewer,
    pub(crate) form: T,
}

/// A form with the CSRF token it carries.
pub(crate) trait WithCsrf {
    fn csrf(&self) -> &str;
}

impl<T> FromRequest<ApiState> for Posted<T>
where
    T: DeserializeOwned + WithCsrf + Send,
{
    type Rejection = PageError;

    async fn from_request(request: Request, api: &ApiState) -> Result<Self, PageError> {
        let (mut parts, body) = request.into_parts();
        if cross_site(&parts.headers, api.console.public_url.as_deref()) {
            return Err(ApiError::Forbidden(
                "a form from another site cannot act in Gatehouse".into(),
            )
            .into());
        }
        let viewer = Viewer::from_request_parts(&mut parts, api).await?;
        let request = Request::from_parts(parts, body);
        let axum::Form(form) = axum::Form::<T>::from_request(request, api)
            .await
            .map_err(|e| ApiError::BadRequest(format!("this form cannot be read: {e}")))?;
        viewer.check_csrf(form.csrf())?;
        Ok(Posted { viewer, form })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let h = headers(&[("cookie", "a=1; gatehouse_session=abc ; b=2")]);
        assert_eq!(secret_from(&h, false).as_deref(), Some("abc"));
        assert_eq!(secret_from(&h, true), None);
        let h = headers(&[("cookie", "__Host-gatehouse_session=xyz")]);
        assert_eq!(secret_from(&h, true).as_deref(), Some("xyz"));
    }

    #[test]
    fn cookies_are_http_only_and_strict() {
        let c = set_cookie("s3cret", true, 60);
        assert_eq!(
            c.to_str().unwrap(),
            "__Host-gatehouse_session=s3cret; Path=/; HttpOnly; SameSite=Strict; Max-Age=60; Secure"
        );
        assert!(clear_cookie(false).to_str().unwrap().contains("Max-Age=0"));
    }

    #[test]
    fn csrf_tokens_differ_per_session() {
        assert_ne!(csrf_of("a"), csrf_of("b"));
        assert_eq!(csrf_of("a"), csrf_of("a"));
    }

    #[test]
    fn cross_site_requests_are_told_apart() {
        let same = headers(&[("host", "gh.test:8080"), ("origin", "http://gh.test:8080")]);
        assert!(!cross_site(&same, None));
        let other = headers(&[("host", "gh.test:8080"), ("origin", "https://evil.test")]);
        assert!(cross_site(&other, None));
        assert!(cross_site(
            &headers(&[("sec-fetch-site", "cross-site")]),
            None
        ));
        assert!(!cross_site(
            &headers(&[("sec-fetch-site", "same-origin")]),
            None
        ));
        // Behind a proxy that sends its own Host: the public address is ours too.
        let proxied = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "https://gatehouse.example.com"),
        ]);
        assert!(!cross_site(
            &proxied,
            Some("https://gatehouse.example.com/")
        ));
        assert!(cross_site(&proxied, None));
        assert!(cross_site(&proxied, Some("https://gatehouse.example.org")));
        // An opaque origin is another site.
        let opaque = headers(&[("host", "gh.test:8080"), ("origin", "null")]);
        assert!(cross_site(&opaque, None));
    }
}
