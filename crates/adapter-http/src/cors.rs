//! Cross-origin requests (CORS) for the origins the operator allows (`--cors-origins`).
//!
//! A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is answered before
//! routing and authentication: 204 with the `Access-Control-Allow-*` headers for an allowed
//! origin, 403 `forbidden` (without CORS headers) for any other. Every other response to a
//! request from an allowed origin, errors included, carries `Access-Control-Allow-Origin` (the
//! request's origin, echoed) and `Access-Control-Expose-Headers`. Credentials are never allowed:
//! the API is called with a token in `Authorization`, not with cookies.

use actix_web::http::header::{self, HeaderMap, HeaderValue};

/// How long a browser may cache a preflight answer, in seconds.
pub const MAX_AGE_SECS: u32 = 300;

/// Request headers a cross-origin caller may send.
pub const ALLOWED_HEADERS: &str =
    "Accept, Accept-Encoding, Authorization, Content-Length, Content-Type, Svc-API-Version";

/// Response headers a cross-origin caller may read (besides the CORS-safelisted ones).
pub const EXPOSED_HEADERS: &str =
    "Allow, Retry-After, Svc-API-Version, X-Ratelimit-Global-Remaining, \
     X-Ratelimit-Reset, X-Ratelimit-Route-Remaining, X-Request-Id";

/// A `--cors-origins` entry that is not `*` nor an origin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CORS origin '{0}': give `*` or origins such as https://app.example.com or http://localhost:3000 (scheme, host and optional port; no path)")]
pub struct InvalidOrigin(pub String);

/// The origins allowed to call the API from a browser.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CorsOrigins {
    /// None (the default): no CORS headers, every preflight is refused.
    #[default]
    None,
    /// Any origin (`*`); the request's origin is echoed.
    Any,
    /// These origins (lowercase, without a trailing `/`).
    Some(Vec<String>),
}

impl CorsOrigins {
    /// Reads a comma-separated list: `*` allows any origin; otherwise each entry is
    /// `scheme://host[:port]` (`http` or `https`), compared without regard to letter case.
    /// Empty entries are skipped; an empty list allows none.
    ///
    /// # Errors
    /// [`InvalidOrigin`] naming the first entry that is not an origin.
    pub fn parse<'a>(entries: impl IntoIterator<Item = &'a str>) -> Result<Self, InvalidOrigin> {
        let mut origins = Vec::new();
        let mut any = false;
        for entry in entries.into_iter().flat_map(|e| e.split(',')) {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            if entry == "*" {
                any = true;
                continue;
            }
            let origin = entry
                .strip_suffix('/')
                .unwrap_or(entry)
                .to_ascii_lowercase();
            // Browsers leave the scheme's default port out of `Origin`.
            let origin = origin
                .strip_suffix(":443")
                .filter(|o| o.starts_with("https://"))
                .or_else(|| {
                    origin
                        .strip_suffix(":80")
                        .filter(|o| o.starts_with("http://"))
                })
                .map(str::to_owned)
                .unwrap_or(origin);
            if !is_origin(&origin) {
                return Err(InvalidOrigin(entry.to_owned()));
            }
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        Ok(if any {
            CorsOrigins::Any
        } else if origins.is_empty() {
            CorsOrigins::None
        } else {
            CorsOrigins::Some(origins)
        })
    }

    /// Whether CORS is on at all (some origin is allowed).
    pub fn enabled(&self) -> bool {
        !matches!(self, CorsOrigins::None)
    }

    /// Whether a request's `Origin` value is allowed.
    pub fn allows(&self, origin: &str) -> bool {
        match self {
            CorsOrigins::None => false,
            CorsOrigins::Any => true,
            CorsOrigins::Some(list) => list.iter().any(|o| o.eq_ignore_ascii_case(origin)),
        }
    }
}

/// `http://host[:port]` or `https://host[:port]` with a non-empty host and nothing else.
fn is_origin(text: &str) -> bool {
    let Some(rest) = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))
    else {
        return false;
    };
    let (host, port) = match rest.rsplit_once(':') {
        // An IPv6 literal (`[::1]`) has colons of its own.
        Some((host, port)) if !port.contains(']') => (host, Some(port)),
        _ => (rest, None),
    };
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    let host_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'[' | b']' | b':'));
    port_ok && host_ok
}

/// Whether a request is a CORS preflight: `OPTIONS` with `Origin` and
/// `Access-Control-Request-Method`.
pub fn is_preflight(method: &actix_web::http::Method, headers: &HeaderMap) -> bool {
    method == actix_web::http::Method::OPTIONS
        && headers.contains_key(header::ORIGIN)
        && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
}

/// The request's `Origin`, when it is allowed.
pub fn allowed_origin(origins: &CorsOrigins, headers: &HeaderMap) -> Option<HeaderValue> {
    let origin = headers.get(header::ORIGIN)?;
    origins
        .allows(origin.to_str().ok()?)
        .then(|| origin.clone())
}

/// Adds `Vary: Origin` (the answer depends on it whenever CORS is on).
pub fn add_vary(headers: &mut HeaderMap) {
    let already = headers
        .get_all(header::VARY)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.trim().eq_ignore_ascii_case("origin") || v.trim() == "*");
    if !already {
        headers.append(header::VARY, HeaderValue::from_static("Origin"));
    }
}

/// The headers of a response to an actual (not preflight) request from an allowed `origin`.
pub fn add_response_headers(headers: &mut HeaderMap, origin: HeaderValue) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSED_HEADERS),
    );
}

/// The headers of a preflight answer for an allowed `origin`; `methods` are the API's.
pub fn add_preflight_headers(headers: &mut HeaderMap, origin: HeaderValue, methods: &HeaderValue) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, methods.clone());
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(ALLOWED_HEADERS),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from(MAX_AGE_SECS),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_origin_lists() {
        assert_eq!(CorsOrigins::parse([]), Ok(CorsOrigins::None));
        assert_eq!(CorsOrigins::parse([" , "]), Ok(CorsOrigins::None));
        assert_eq!(
            CorsOrigins::parse(["https://App.example.com/, http://localhost:3000"]),
            Ok(CorsOrigins::Some(vec![
                "https://app.example.com".into(),
                "http://localhost:3000".into()
            ]))
        );
        assert_eq!(
            CorsOrigins::parse(["http://[::1]:8080", "http://[::1]:8080"]),
            Ok(CorsOrigins::Some(vec!["http://[::1]:8080".into()]))
        );
        // The default port is left out, as browsers leave it out of `Origin`.
        assert_eq!(
            CorsOrigins::parse([
                "https://a.example:443",
                "http://b.example:80",
                "http://c.example:443"
            ]),
            Ok(CorsOrigins::Some(vec![
                "https://a.example".into(),
                "http://b.example".into(),
                "http://c.example:443".into()
            ]))
        );
        assert_eq!(
            CorsOrigins::parse(["https://a.example", "*"]),
            Ok(CorsOrigins::Any)
        );
        for bad in [
            "app.example.com",
            "ftp://a.example",
            "https://",
            "https://a.example/path",
            "https://a.example:port",
            "https://a.example:123456",
            "https://user@a.example",
            "https://a.example?x",
        ] {
            assert_eq!(
                CorsOrigins::parse([bad]),
                Err(InvalidOrigin(bad.to_owned())),
                "{bad}"
            );
        }
    }

    #[test]
    fn matches_origins_without_regard_to_case() {
        let list = CorsOrigins::parse(["https://app.example.com"]).unwrap();
        assert!(list.enabled());
        assert!(list.allows("https://app.example.com"));
        assert!(list.allows("HTTPS://APP.example.com"));
        assert!(!list.allows("https://app.example.com:8443"));
        assert!(!list.allows("http://app.example.com"));
        assert!(!list.allows("null"));
        assert!(CorsOrigins::Any.allows("null"));
        assert!(!CorsOrigins::None.allows("https://app.example.com"));
        assert!(!CorsOrigins::None.enabled());
    }

    #[test]
    fn adds_vary_once() {
        let mut headers = HeaderMap::new();
        add_vary(&mut headers);
        add_vary(&mut headers);
        assert_eq!(headers.get_all(header::VARY).count(), 1);
        let mut headers = HeaderMap::new();
        headers.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
        add_vary(&mut headers);
        let vary: Vec<_> = headers.get_all(header::VARY).collect();
        assert_eq!(vary, ["Accept-Encoding", "Origin"]);
    }

    #[test]
    fn tells_preflights_apart() {
        use actix_web::http::Method;
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ORIGIN,
            HeaderValue::from_static("https://a.example"),
        );
        assert!(!is_preflight(&Method::OPTIONS, &headers));
        headers.insert(
            header::ACCESS_CONTROL_REQUEST_METHOD,
            HeaderValue::from_static("PATCH"),
        );
        assert!(is_preflight(&Method::OPTIONS, &headers));
        assert!(!is_preflight(&Method::GET, &headers));
    }
}
