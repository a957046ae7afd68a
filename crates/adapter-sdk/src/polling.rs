//! Polling: the environment's flag data as the server-side SDKs poll it.
//!
//! - `GET /sdk/latest-all`: `{"flags": {key: flag}, "segments": {key: segment}}`, serialised
//!   once per snapshot (with its gzip form) and shared by every poll;
//! - `GET /sdk/latest-flags`, `/sdk/latest-flags/{key}`, `/sdk/latest-segments`,
//!   `/sdk/latest-segments/{key}`, and the PHP SDK's `/sdk/flags`, `/sdk/flags/{key}`,
//!   `/sdk/segments/{key}`: parts of it, serialised per request.
//!
//! Every answer has a strong `ETag` (from its bytes alone, so every replica tags the same data
//! alike) and is 304 when `If-None-Match` names it; gzip when the client takes it. Archived
//! flags and deleted segments are left out (a poll replaces what an SDK holds).

use actix_web::{web, HttpRequest, HttpResponse};
use service::{EnvironmentSnapshot, SdkAccess, SdkPayload};

use crate::answer::{snapshot_of, tagged_json, Denied};
use crate::gate::Shared;
use crate::key::admit;

/// Whether `req` asks for a payload filter (the original's `?filter=`: not supported).
pub(crate) fn asks_for_a_filter(req: &HttpRequest) -> bool {
    url::form_urlencoded::parse(req.query_string().as_bytes())
        .any(|(name, _)| name.eq_ignore_ascii_case("filter"))
}

/// The answer to a request for a payload filter.
pub(crate) fn filters_refused() -> Denied {
    Denied::Invalid(
        "payload filters (?filter=) are not supported: an SDK key reads its whole environment"
            .into(),
    )
}

/// The environment `req`'s key opens, counted on `route`; payload filters are refused.
async fn opened(req: &HttpRequest, shared: &Shared, route: &str) -> Result<SdkAccess, Denied> {
    if asks_for_a_filter(req) {
        return Err(filters_refused());
    }
    Ok(admit(req, shared, route).await?)
}

/// `GET /sdk/latest-all`.
pub(crate) async fn latest_all(req: HttpRequest, shared: web::Data<Shared>) -> HttpResponse {
    let answered = async {
        let access = opened(&req, &shared, "GET /sdk/latest-all").await?;
        let data = snapshot_of(&shared, &access).await?;
        let gzip = crate::answer::takes_gzip(&req);
        // Serialising (or compressing) a large environment is work for the blocking pool, once
        // per snapshot; later polls find it made.
        let made = data.payload_made().filter(|p| !gzip || p.gzipped_made());
        let payload = match made {
            Some(payload) => payload,
            None => driving::run_blocking(&shared.service, move |_| {
                let payload = data.payload();
                if gzip {
                    payload.gzipped();
                }
                Ok::<_, service::ServiceError>(payload)
            })
            .await
            .map_err(crate::answer::unavailable)?,
        };
        Ok::<_, Denied>(answer_payload(&req, &payload))
    }
    .await;
    answered.unwrap_or_else(|denied| denied.answer())
}

/// Anything else under `/sdk`: 404 (405 for another method on a route), as JSON.
pub(crate) async fn no_route(req: HttpRequest) -> HttpResponse {
    let path = req.path();
    let known = [
        "/sdk/latest-all",
        "/sdk/latest-flags",
        "/sdk/latest-segments",
        "/sdk/flags",
    ]
    .contains(&path)
        || [
            "/sdk/latest-flags/",
            "/sdk/latest-segments/",
            "/sdk/flags/",
            "/sdk/segments/",
        ]
        .iter()
        .any(|prefix| {
            path.strip_prefix(prefix)
                .is_some_and(|key| !key.is_empty() && !key.contains('/'))
        });
    if known {
        let mut answer = Denied::MethodNotAllowed(format!(
            "{} is not allowed on {path}; allowed: GET",
            req.method()
        ))
        .answer();
        answer.headers_mut().insert(
            actix_web::http::header::ALLOW,
            actix_web::http::header::HeaderValue::from_static("GET"),
        );
        return answer;
    }
    Denied::NotFound(format!("no route {} {path}", req.method())).answer()
}

fn answer_payload(req: &HttpRequest, payload: &SdkPayload) -> HttpResponse {
    tagged_json(req, payload.etag(), payload.body(), || {
        payload.gzipped().clone()
    })
}

/// Which part of the environment's data a route answers with.
#[derive(Debug, Clone, Copy)]
enum Part {
    Flags,
    Segments,
}

/// Part `part` of `data` (one item when `key` names it), as JSON text.
fn part_of(data: &EnvironmentSnapshot, part: Part, key: Option<&str>) -> Result<Vec<u8>, Denied> {
    let missing = |what: &str, key: &str| Denied::NotFound(format!("no {what} {key:?} here"));
    Ok(match (part, key) {
        (Part::Flags, None) => data.flags_json(),
        (Part::Segments, None) => data.segments_json(),
        (Part::Flags, Some(key)) => {
            let flag = data
                .sdk_flag(key)
                .filter(|flag| !flag.deleted)
                .ok_or_else(|| missing("flag", key))?;
            serde_json::to_vec(flag).unwrap_or_default()
        }
        (Part::Segments, Some(key)) => {
            let segment = data
                .segments()
                .find(|segment| segment.key == key)
                .ok_or_else(|| missing("segment", key))?;
            serde_json::to_vec(segment).unwrap_or_default()
        }
    })
}

/// A part of the environment's data, tagged (serialised and compressed per request, on the
/// blocking pool).
async fn part(
    req: HttpRequest,
    shared: web::Data<Shared>,
    route: &str,
    part: Part,
    key: Option<String>,
) -> HttpResponse {
    let answered = async {
        let access = opened(&req, &shared, route).await?;
        let data = snapshot_of(&shared, &access).await?;
        let made = driving::run_blocking(&shared.service, move |_| {
            Ok::<_, service::ServiceError>(
                part_of(&data, part, key.as_deref()).map(SdkPayload::from_json),
            )
        })
        .await
        .map_err(crate::answer::unavailable)??;
        Ok::<_, Denied>(answer_payload(&req, &made))
    }
    .await;
    answered.unwrap_or_else(|denied| denied.answer())
}

/// `GET /sdk/latest-flags` (and the PHP SDK's `GET /sdk/flags`): every live flag by key.
pub(crate) async fn latest_flags(req: HttpRequest, shared: web::Data<Shared>) -> HttpResponse {
    let route = format!("GET {}", req.match_pattern().unwrap_or_default());
    part(req, shared, &route, Part::Flags, None).await
}

/// `GET /sdk/latest-flags/{key}` (and `GET /sdk/flags/{key}`): one live flag.
pub(crate) async fn latest_flag(
    req: HttpRequest,
    key: web::Path<String>,
    shared: web::Data<Shared>,
) -> HttpResponse {
    let route = format!("GET {}", req.match_pattern().unwrap_or_default());
    part(req, shared, &route, Part::Flags, Some(key.into_inner())).await
}

/// `GET /sdk/latest-segments`: every live segment by key.
pub(crate) async fn latest_segments(req: HttpRequest, shared: web::Data<Shared>) -> HttpResponse {
    part(
        req,
        shared,
        "GET /sdk/latest-segments",
        Part::Segments,
        None,
    )
    .await
}

/// `GET /sdk/latest-segments/{key}` (and `GET /sdk/segments/{key}`): one live segment.
pub(crate) async fn latest_segment(
    req: HttpRequest,
    key: web::Path<String>,
    shared: web::Data<Shared>,
) -> HttpResponse {
    let route = format!("GET {}", req.match_pattern().unwrap_or_default());
    part(req, shared, &route, Part::Segments, Some(key.into_inner())).await
}
