//! The web console: `GET /` answers its page and `GET /console/<file>` its assets, all
//! embedded in the binary at build time (`build.rs`), so the console works offline and
//! needs no second process.
//!
//! The files hold no data, so they are served without the API token; the page asks for
//! the token when an API call answers 401 and sends it on every call after that, as
//! VictoriaMetrics' vmui and Grafana's login page do.

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

include!(concat!(env!("OUT_DIR"), "/console_assets.rs"));

/// Scripts, styles and images from the server itself only; no inline scripts. Inline
/// styles stay allowed: the charting library sizes its elements with them.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; object-src 'none'; \
     base-uri 'none'; frame-ancestors 'none'";

/// `GET /`: the console's page.
pub(crate) async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

/// `GET /console/<path>`: one of the console's files.
pub(crate) async fn asset(Path(path): Path<String>, headers: HeaderMap) -> Response {
    serve(&path, &headers)
}

fn serve(path: &str, request: &HeaderMap) -> Response {
    let Some(bytes) = find(path) else {
        return ApiError::NotFound(format!("the console has no file {path:?}")).into_response();
    };
    // Revalidated on every load (an upgraded server serves new files at the same paths),
    // answered 304 when unchanged.
    let etag = format!("\"{:016x}\"", fnv1a(bytes));
    let unchanged = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|tag| tag.trim() == etag));
    let mut response = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        bytes.into_response()
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(path)),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, etag);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    response
}

fn find(path: &str) -> Option<&'static [u8]> {
    ASSETS
        .binary_search_by(|(name, _)| (*name).cmp(path))
        .ok()
        .map(|i| ASSETS[i].1)
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map_or("", |(_, ext)| ext) {
        "html" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        _ => "text/plain; charset=utf-8",
    }
}

/// FNV-1a, 64 bits: a stable content hash for the ETag (not a security boundary).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_are_sorted_and_hold_the_page() {
        // `find` searches by binary search: the build script must sort the table.
        assert!(ASSETS.windows(2).all(|w| w[0].0 < w[1].0));
        let page = std::str::from_utf8(find("index.html").expect("index.html is embedded"))
            .expect("UTF-8 page");
        assert!(
            page.contains("/console/app.js"),
            "the page loads the console"
        );
        assert!(find("tests/api.test.js").is_none() && find("package.json").is_none());
        assert_eq!(
            content_type("vendor/uPlot.min.css"),
            "text/css; charset=utf-8"
        );
        assert_eq!(content_type("LICENSE-uPlot"), "text/plain; charset=utf-8");
    }
}
