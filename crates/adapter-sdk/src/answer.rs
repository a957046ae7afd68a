//! What the SDK data routes (polling and streaming) answer besides data: errors in the API's
//! shape (`{"code", "message"}`), with `Retry-After` where the SDKs should come back, and the
//! environment's snapshot, read from memory or else on the blocking pool.

use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use service::{EnvironmentSnapshot, SdkAccess, ServiceError};

use crate::gate::Shared;
use crate::key::Refusal;

/// Why a data route does not answer with data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Denied {
    /// 401: no key, an unknown or expired one, or its environment is gone.
    Unauthenticated(String),
    /// 400: a request the route cannot answer.
    Invalid(String),
    /// 404: no such flag or segment, or route.
    NotFound(String),
    /// 405: another method on a route.
    MethodNotAllowed(String),
    /// 429 after the wait.
    TooMany(Duration),
    /// 503: this replica cannot serve current data now (the store is unreachable), or has
    /// no room for another stream; come back after the wait.
    Unavailable(String, Duration),
}

impl From<Refusal> for Denied {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::Unauthenticated(why) => Denied::Unauthenticated(why),
            Refusal::TooMany(wait) => Denied::TooMany(wait),
            Refusal::Unavailable(why) => Denied::Unavailable(why, Duration::from_secs(1)),
        }
    }
}

impl Denied {
    /// What it says to the client.
    pub(crate) fn message(&self) -> String {
        match self {
            Denied::Unauthenticated(why)
            | Denied::Invalid(why)
            | Denied::NotFound(why)
            | Denied::MethodNotAllowed(why)
            | Denied::Unavailable(why, _) => why.clone(),
            Denied::TooMany(wait) => format!("too many requests; retry in {} s", seconds(*wait)),
        }
    }

    /// The answer: `{"code", "message"}` with its status (and `Retry-After` for 429 and 503).
    pub(crate) fn answer(&self) -> HttpResponse {
        let (status, code, wait) = match self {
            Denied::Unauthenticated(_) => (StatusCode::UNAUTHORIZED, "unauthorized", None),
            Denied::Invalid(_) => (StatusCode::BAD_REQUEST, "invalid_request", None),
            Denied::NotFound(_) => (StatusCode::NOT_FOUND, "not_found", None),
            Denied::MethodNotAllowed(_) => {
                (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", None)
            }
            Denied::TooMany(wait) => (StatusCode::TOO_MANY_REQUESTS, "rate_limited", Some(*wait)),
            Denied::Unavailable(_, wait) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "service_unavailable",
                Some(*wait),
            ),
        };
        let message = self.message();
        let mut response = HttpResponse::build(status);
        response.content_type("application/json");
        if let Some(wait) = wait {
            response.insert_header((header::RETRY_AFTER, seconds(wait).to_string()));
        }
        response.body(serde_json::json!({"code": code, "message": message}).to_string())
    }
}

/// Whole seconds to wait, at least 1.
fn seconds(wait: Duration) -> u64 {
    u64::try_from(wait.as_millis().div_ceil(1000))
        .unwrap_or(u64::MAX)
        .max(1)
}

/// The flag data `access` opens: from memory when this replica keeps it, else read on the
/// blocking pool.
pub(crate) async fn snapshot_of(
    shared: &Shared,
    access: &SdkAccess,
) -> Result<Arc<EnvironmentSnapshot>, Denied> {
    if let Some(kept) = shared.service.sdk().snapshot_kept(access) {
        return Ok(kept);
    }
    let access = access.clone();
    driving::run_blocking(&shared.service, move |service| {
        service.sdk().snapshot(&access)
    })
    .await
    .map_err(unavailable)
}

/// A use case's error as a data route's: a gone environment is a key that opens nothing.
pub(crate) fn unavailable(error: ServiceError) -> Denied {
    match error {
        ServiceError::NotFound(why) | ServiceError::Unauthenticated(why) => {
            Denied::Unauthenticated(why)
        }
        other => Denied::Unavailable(other.to_string(), Duration::from_secs(1)),
    }
}

/// Whether `If-None-Match` of `req` names `etag` (or is `*`: any representation).
pub(crate) fn not_modified(req: &actix_web::HttpRequest, etag: &str) -> bool {
    req.headers()
        .get_all(header::IF_NONE_MATCH)
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .any(|tag| tag == "*" || tag.trim_start_matches("W/") == etag)
}

/// Whether the client of `req` takes a gzip body (`Accept-Encoding` names `gzip` or `*`
/// without `q=0`).
pub(crate) fn takes_gzip(req: &actix_web::HttpRequest) -> bool {
    req.headers()
        .get_all(header::ACCEPT_ENCODING)
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

/// A JSON body with its strong `ETag` (304 when `If-None-Match` names it), gzip-encoded
/// when the client takes it and `gzipped` makes it.
pub(crate) fn tagged_json(
    req: &actix_web::HttpRequest,
    etag: &str,
    body: &bytes::Bytes,
    gzipped: impl FnOnce() -> bytes::Bytes,
) -> HttpResponse {
    // A strong tag names one representation: the gzip form has its own.
    let gzip = takes_gzip(req);
    let gzip_etag = format!("{}-gzip\"", etag.trim_end_matches('"'));
    let etag = if gzip { gzip_etag.as_str() } else { etag };
    let unchanged = not_modified(req, etag);
    let status = if unchanged { "304" } else { "200" };
    metrics::counter!("flagsvc_sdk_polls_total", "status" => status).increment(1);
    let mut response = if unchanged {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    };
    if let Ok(value) = HeaderValue::from_str(etag) {
        response.insert_header((header::ETAG, value));
    }
    response.insert_header((header::VARY, "Accept-Encoding"));
    if unchanged {
        return response.finish();
    }
    response.content_type("application/json");
    if gzip {
        response.insert_header((header::CONTENT_ENCODING, "gzip"));
        return response.body(gzipped());
    }
    response.body(body.clone())
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    #[test]
    fn gzip_is_taken_unless_refused() {
        let takes = |value: &str| {
            takes_gzip(
                &TestRequest::default()
                    .insert_header(("Accept-Encoding", value))
                    .to_http_request(),
            )
        };
        assert!(takes("gzip"));
        assert!(takes("br, GZIP;q=0.5"));
        assert!(takes("*"));
        assert!(!takes("gzip;q=0"));
        assert!(!takes("br, identity"));
        assert!(!takes_gzip(&TestRequest::default().to_http_request()));
    }

    #[test]
    fn if_none_match_names_the_tag_or_any() {
        let matches = |value: &str| {
            not_modified(
                &TestRequest::default()
                    .insert_header(("If-None-Match", value))
                    .to_http_request(),
                "\"ab\"",
            )
        };
        assert!(matches("\"ab\""));
        assert!(matches("\"x\", W/\"ab\""));
        assert!(matches("*"));
        assert!(!matches("\"abc\""));
    }

    #[test]
    fn waits_are_whole_seconds_of_at_least_one() {
        assert_eq!(seconds(Duration::ZERO), 1);
        assert_eq!(seconds(Duration::from_millis(200)), 1);
        assert_eq!(seconds(Duration::from_secs(2)), 2);
        assert_eq!(seconds(Duration::from_millis(2100)), 3);
    }
}
