//! The console for the harness: a browser-like client that signs in with a login link,
//! keeps its session cookie, reads pages and posts their forms (CSRF token included), and
//! never follows redirects by itself, so tests see where each answer sends it.

use std::collections::BTreeMap;

use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use serde_json::json;

use gatehouse_ingest::{BOOTSTRAP_ADMIN, Scope};

use super::Gatehouse;

/// One signed-in (or not) browser.
pub struct Browser {
    http: reqwest::Client,
    base: String,
    /// `name=value` of the session cookie, once signed in.
    pub cookie: Option<String>,
    /// Other cookies the console set (a GitHub sign-in's state), by name.
    pub others: BTreeMap<String, String>,
}

/// An answer to a page request.
#[derive(Debug)]
pub struct Page {
    pub request: String,
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub html: String,
}

impl Gatehouse {
    /// A browser with no session.
    pub fn browser(&self) -> Browser {
        Browser {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("a client"),
            base: self.url.clone(),
            cookie: None,
            others: BTreeMap::new(),
        }
    }

    /// A login link's path for `person`, asked for with `token` (theirs, or an
    /// administrator's).
    pub async fn login_link(&self, token: &str, person: &str) -> String {
        let created = self
            .api_as(token)
            .post("/login-links", json!({ "person": person }))
            .await
            .is(201);
        created["path"].as_str().expect("a path").to_owned()
    }

    /// A browser signed in as `person` through a login link an administrator asked for.
    pub async fn signed_in(&self, person: &str) -> Browser {
        let admin = self.stored_token(BOOTSTRAP_ADMIN, &Scope::ALL, None).await;
        let link = self.login_link(&admin, person).await;
        let mut browser = self.browser();
        browser.sign_in(&link).await.expect_status(303);
        assert!(browser.cookie.is_some(), "no session cookie");
        browser
    }
}

impl Browser {
    /// Opens a login link and presses its button, as a person would.
    pub async fn sign_in(&mut self, link: &str) -> Page {
        let page = self.get(link).await;
        if page.status != StatusCode::OK {
            return page;
        }
        let secret = link.trim_start_matches("/login/");
        self.post("/login", &[("link", secret), ("next", "/")])
            .await
    }

    pub async fn get(&mut self, path: &str) -> Page {
        let request = self.http.get(format!("{}{path}", self.base));
        self.answer(format!("GET {path}"), request).await
    }

    /// A page of another site (the fake GitHub), with none of the console's cookies.
    pub async fn visit(&mut self, url: &str) -> Page {
        let response = self.http.get(url).send().await.expect("the site answers");
        Page {
            request: format!("GET {url}"),
            status: response.status(),
            headers: response.headers().clone(),
            html: response.text().await.expect("a body"),
        }
    }

    /// Posts `fields` as a form, as they are (no CSRF token added).
    pub async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        let request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(serde_urlencoded::to_string(fields).expect("a form"));
        self.answer(format!("POST {path}"), request).await
    }

    /// Posts `fields` with the CSRF token of the page at `from`, as its form would.
    pub async fn submit(&mut self, from: &str, path: &str, fields: &[(&str, &str)]) -> Page {
        let page = self.get(from).await.expect_status(200);
        let csrf = page.csrf().expect("the page has a form");
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        self.post(path, &all).await
    }

    async fn answer(&mut self, request: String, mut builder: reqwest::RequestBuilder) -> Page {
        let cookies: Vec<String> = self
            .cookie
            .iter()
            .cloned()
            .chain(self.others.iter().map(|(k, v)| format!("{k}={v}")))
            .collect();
        if !cookies.is_empty() {
            builder = builder.header(COOKIE, cookies.join("; "));
        }
        let response = builder.send().await.expect("the console answers");
        let status = response.status();
        let headers = response.headers().clone();
        for set in headers.get_all(SET_COOKIE) {
            let set = set.to_str().unwrap_or_default();
            let pair = set.split(';').next().unwrap_or_default().to_owned();
            let Some((name, value)) = pair.split_once('=') else {
                continue;
            };
            let session = name.ends_with("gatehouse_session");
            match (session, set.contains("Max-Age=0")) {
                (true, true) => self.cookie = None,
                (true, false) => self.cookie = Some(pair.clone()),
                (false, true) => {
                    self.others.remove(name);
                }
                (false, false) => {
                    self.others.insert(name.to_owned(), value.to_owned());
                }
            }
        }
        let html = response.text().await.expect("a body");
        Page {
            request,
            status,
            headers,
            html,
        }
    }
}

impl Page {
    /// The page, after checking its status.
    pub fn expect_status(self, status: u16) -> Page {
        assert_eq!(
            self.status.as_u16(),
            status,
            "{} answered {}: {}",
            self.request,
            self.status,
            self.html
        );
        self
    }

    /// Where a redirect sends the browser.
    pub fn location(&self) -> &str {
        self.headers
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    /// The first form's CSRF token.
    pub fn csrf(&self) -> Option<String> {
        let at = self.html.find("name=\"csrf\" value=\"")? + "name=\"csrf\" value=\"".len();
        let end = self.html[at..].find('"')?;
        Some(self.html[at..at + end].to_owned())
    }

    pub fn contains(&self, text: &str) -> bool {
        self.html.contains(text)
    }
}
