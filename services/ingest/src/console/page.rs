//! The frame every console page shares, the small pieces pages repeat (statuses, times,
//! durations, forms' hidden fields), and how a failure becomes a page.
//!
//! Pages are maud templates: everything interpolated is escaped unless it is marked
//! `PreEscaped`, which only our own SVG and sanitised Markdown are.

use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, LOCATION, REFERRER_POLICY};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use maud::{DOCTYPE, Markup, html};

pub(crate) use super::page_error::PageError;
use super::session::Viewer;
use crate::views::UsageTotal;

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        match self {
            // A link followed from another site (a chat card, an email) arrives without
            // the SameSite=Strict cookie. Reloading from this page is a same-site
            // navigation, which carries it; with no cookie at all, the reload lands here
            // again as same-site and goes on to sign in.
            PageError::SignIn {
                next,
                cross_site: true,
            } => {
                let body = html! {
                    (DOCTYPE)
                    html lang="en" {
                        head {
                            meta charset="utf-8";
                            meta http-equiv="refresh" content="0";
                            title { "Gatehouse" }
                        }
                        body { p { a href=(next) { "Continue to Gatehouse" } } }
                    }
                };
                body.into_response()
            }
            PageError::SignIn { next, .. } => {
                let to = format!("/signin?next={}", encode(&next));
                redirect(&to)
            }
            PageError::Api(e) => {
                let status = e.status();
                if status.is_server_error() {
                    tracing::error!(error = %e, "console page failed");
                }
                let title = status.canonical_reason().unwrap_or("Error");
                let body = frame(
                    title,
                    None,
                    html! {
                        h1 { (title) }
                        p.error role="alert" { (e.to_string()) }
                        p { a href="/" { "Back to the inbox" } }
                    },
                );
                (status, body).into_response()
            }
        }
    }
}

/// `303 See Other` to `to`: where a form goes after it did its work.
pub(crate) fn redirect(to: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(to) {
        response.headers_mut().insert(LOCATION, value);
    }
    response
}

/// Percent-encodes a query value.
pub(crate) fn encode(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

/// A local path to go back to after signing in; anything else (another site, a
/// protocol-relative `//host`, or what a browser would read as one) becomes the inbox.
pub(crate) fn local_path(next: Option<&str>) -> String {
    // Browsers drop tabs and line breaks from addresses and read `\` as `/`, so any of
    // them could turn `/x/host` into `//host`.
    let plain = |p: &str| {
        !p.chars()
            .any(|c| c.is_control() || c.is_whitespace() || c == '\\')
    };
    match next {
        Some(p) if p.starts_with('/') && !p.starts_with("//") && plain(p) => p.to_owned(),
        _ => "/".to_owned(),
    }
}

/// The page frame: navigation, who is signed in, and `main`.
pub(crate) fn frame(title: &str, viewer: Option<&Viewer>, main: Markup) -> Markup {
    frame_with(title, viewer, main, &[])
}

/// [`frame`] with scripts (only for live updates; every page works without them).
pub(crate) fn frame_with(
    title: &str,
    viewer: Option<&Viewer>,
    main: Markup,
    scripts: &[&str],
) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Gatehouse" }
                link rel="stylesheet" href="/static/console.css";
                @for script in scripts {
                    script src=(script) defer {}
                }
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    a.brand href="/" { "Gatehouse" }
                    @if let Some(viewer) = viewer {
                        nav aria-label="Main" {
                            a href="/" { "Inbox" }
                            a href="/runs" { "Runs" }
                            a href="/requirements" { "Requirements" }
                            a href="/sops" { "SOPs" }
                            a href="/schedules" { "Schedules" }
                            a href="/reports" { "Reports" }
                            @if viewer.sees_deliveries {
                                a href="/deliveries" { "Deliveries" }
                            }
                        }
                        form.signout method="post" action="/signout" {
                            (csrf_field(viewer))
                            span.who { "Signed in as " strong { (viewer.person()) } }
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main id="main" { (main) }
            }
        }
    }
}

/// The hidden field every form of a signed-in page carries.
pub(crate) fn csrf_field(viewer: &Viewer) -> Markup {
    html! { input type="hidden" name="csrf" value=(viewer.csrf); }
}

/// A status as text with a class for its colour (never colour alone).
pub(crate) fn status(status: &str) -> Markup {
    let class = format!(
        "status status-{}",
        status.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
    );
    html! { span class=(class) { (status.replace('_', " ")) } }
}

/// A moment, readable and machine-readable.
pub(crate) fn time(at: &DateTime<Utc>) -> Markup {
    html! { time datetime=(at.to_rfc3339()) { (at.format("%Y-%m-%d %H:%M:%S UTC")) } }
}

/// Milliseconds as a person reads them: `840 ms`, `12.4 s`, `3 min 05 s`, `2 h 10 min`.
pub(crate) fn duration(ms: i64) -> String {
    match ms {
        ..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        60_000..3_600_000 => format!("{} min {:02} s", ms / 60_000, (ms / 1000) % 60),
        _ => format!("{} h {:02} min", ms / 3_600_000, (ms / 60_000) % 60),
    }
}

/// How long something has lasted, to the minute: `less than a minute`, `5 min`,
/// `2 h 5 min`, `3 d 4 h`.
pub(crate) fn span(ms: i64) -> String {
    let minutes = ms.max(0) / 60_000;
    match minutes {
        0 => "less than a minute".into(),
        1..60 => format!("{minutes} min"),
        60..1440 => match minutes % 60 {
            0 => format!("{} h", minutes / 60),
            m => format!("{} h {m} min", minutes / 60),
        },
        _ => match (minutes / 60) % 24 {
            0 => format!("{} d", minutes / 1440),
            h => format!("{} d {h} h", minutes / 1440),
        },
    }
}

/// How long since `at`, as of `now`, with the moment itself in a tooltip and as
/// machine-readable time: `<time datetime=... title=...>2 h 5 min</time>`.
pub(crate) fn since(at: &DateTime<Utc>, now: &DateTime<Utc>) -> Markup {
    let ms = (*now - *at).num_milliseconds();
    html! {
        time datetime=(at.to_rfc3339()) title=(at.format("%Y-%m-%d %H:%M:%S UTC")) { (span(ms)) }
    }
}

/// US dollars to the cent, or below a cent as `<$0.01`.
pub(crate) fn dollars(cost: f64) -> String {
    if cost > 0.0 && cost < 0.005 {
        "<$0.01".into()
    } else {
        format!("${cost:.2}")
    }
}

/// What agents used: the cost, tokens in (cache reads and writes included) and out, and
/// the models without a price, whose tokens are counted but not their cost.
pub(crate) fn usage(total: &UsageTotal) -> Markup {
    let tokens_in = total.input_tokens + total.cache_read_tokens + total.cache_write_tokens;
    html! {
        (dollars(total.cost_usd)) " · " (tokens_in) " tokens in, " (total.output_tokens) " out"
        @if !total.unpriced_models.is_empty() { " (no price for " (total.unpriced_models.join(", ")) ")" }
    }
}

/// Headers every console response carries: no caching of pages with people's data, no
/// framing, and a policy under which no script but ours runs (styles may be inline, for
/// the graphs' SVG).
pub(crate) async fn headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    // An artifact sets its own, stricter policy.
    h.entry(CONTENT_SECURITY_POLICY).or_insert(
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.entry(CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_paths_are_returned_to() {
        assert_eq!(local_path(Some("/runs/1?x=2")), "/runs/1?x=2");
        assert_eq!(local_path(Some("//evil.test/x")), "/");
        assert_eq!(local_path(Some("https://evil.test")), "/");
        assert_eq!(local_path(Some("/\\evil.test")), "/");
        assert_eq!(local_path(Some("/\t/evil.test")), "/");
        assert_eq!(local_path(Some("/\n/evil.test")), "/");
        assert_eq!(local_path(Some("/ /evil.test")), "/");
        assert_eq!(local_path(None), "/");
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(duration(840), "840 ms");
        assert_eq!(duration(12_400), "12.4 s");
        assert_eq!(duration(185_000), "3 min 05 s");
        assert_eq!(duration(7_800_000), "2 h 10 min");
    }

    #[test]
    fn spans_read_to_the_minute() {
        assert_eq!(span(20_000), "less than a minute");
        assert_eq!(span(-5), "less than a minute");
        assert_eq!(span(5 * 60_000 + 59_000), "5 min");
        assert_eq!(span(125 * 60_000), "2 h 5 min");
        assert_eq!(span(120 * 60_000), "2 h");
        assert_eq!(span((3 * 24 + 4) * 3_600_000), "3 d 4 h");
    }

    #[test]
    fn statuses_are_text_with_a_safe_class() {
        let s = status("waiting_approval\"><script>").into_string();
        assert!(!s.contains("<script>"), "{s}");
        assert!(s.contains("waiting approval"), "{s}");
    }
}
