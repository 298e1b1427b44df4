//! The console's stylesheet and its one script, compiled into the binary: no build step,
//! nothing to install beside it.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

const CSS: &str = include_str!("../../static/console.css");
const LIVE_JS: &str = include_str!("../../static/live.js");

/// `GET /static/{file}`
pub(crate) async fn file(Path(file): Path<String>) -> Response {
    let (body, content_type) = match file.as_str() {
        "console.css" => (CSS, "text/css; charset=utf-8"),
        "live.js" => (LIVE_JS, "text/javascript; charset=utf-8"),
        _ => return (StatusCode::NOT_FOUND, "no such file").into_response(),
    };
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    response
}
