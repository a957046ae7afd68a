//! OFREP's two routes: one flag (`POST /ofrep/v1/evaluate/flags/{key}`) and every flag of the
//! key's environment (`POST /ofrep/v1/evaluate/flags`, with an `ETag`; `If-None-Match` with it
//! answers 304). The body is `{"context": {...}}` (see `context`); answers and errors are in the
//! protocol's shapes (see `answer`). The context is evaluated, never stored or logged.

mod answer;
mod context;

use std::sync::Arc;

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use domain::evaluation::{self, FlagData, SdkFlag};
use futures_util::StreamExt;
use serde_json::Value;
use service::{EnvironmentSnapshot, SdkAccess};
use sha2::{Digest, Sha256};

use crate::answer::Denied;
use crate::gate::Shared;
use crate::key::{admit, Refusal};
use answer::Failure;

/// The largest request body the SDK routes read (a context): 256 KiB.
pub const MAX_BODY: usize = 256 * 1024;

/// What a request's context made: a context, or the kind that has no key.
type Contextual = context::Read;

/// A JSON answer with `status` (503: come back in a second).
fn json(status: StatusCode, body: &Value) -> HttpResponse {
    let mut response = HttpResponse::build(status);
    response.content_type("application/json");
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response.insert_header((header::RETRY_AFTER, "1"));
    }
    response.body(body.to_string())
}

/// The answer to a request that was not admitted (`key`: the flag asked for, if one was).
fn refused(refusal: Refusal, key: Option<&str>) -> HttpResponse {
    let (status, details, wait) = match refusal {
        Refusal::Unauthenticated(why) => (StatusCode::UNAUTHORIZED, why, None),
        Refusal::TooMany(wait) => {
            let seconds = wait.as_secs_f64().ceil().max(1.0);
            (
                StatusCode::TOO_MANY_REQUESTS,
                format!("too many requests; retry in {seconds} s"),
                Some(seconds),
            )
        }
        Refusal::Unavailable(why) => (StatusCode::SERVICE_UNAVAILABLE, why, None),
    };
    let failure = Failure::new(status, "GENERAL", details);
    let body = match key {
        Some(key) => failure.for_flag(key),
        None => failure.for_request(),
    };
    let mut response = json(status, &body);
    if let Some(seconds) = wait {
        if let Ok(value) = HeaderValue::from_str(&format!("{seconds}")) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    response
}

/// The body, read within [`MAX_BODY`], as JSON (an empty body is `{}`); its `context`.
async fn read_context(mut payload: web::Payload) -> Result<Contextual, Failure> {
    let mut body = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| {
            Failure::new(
                StatusCode::BAD_REQUEST,
                "PARSE_ERROR",
                format!("reading the body: {e}"),
            )
        })?;
        if body.len() + chunk.len() > MAX_BODY {
            return Err(Failure::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "PARSE_ERROR",
                format!("the body is larger than {} KiB", MAX_BODY / 1024),
            ));
        }
        body.extend_from_slice(&chunk);
    }
    let request: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            Failure::new(
                StatusCode::BAD_REQUEST,
                "PARSE_ERROR",
                format!("the body is not JSON: {e}"),
            )
        })?
    };
    let Value::Object(request) = request else {
        return Err(Failure::new(
            StatusCode::BAD_REQUEST,
            "PARSE_ERROR",
            "the body must be a JSON object: {\"context\": {...}}",
        ));
    };
    context::read(request.get("context"))
        .map_err(|why| Failure::new(StatusCode::BAD_REQUEST, "INVALID_CONTEXT", why))
}

/// The flag data `access` opens, as OFREP reports a failure to read it.
async fn snapshot_of(
    shared: &Shared,
    access: SdkAccess,
) -> Result<Arc<EnvironmentSnapshot>, Failure> {
    crate::answer::snapshot_of(shared, &access)
        .await
        .map_err(|denied| match denied {
            Denied::Unauthenticated(why) => Failure::new(StatusCode::UNAUTHORIZED, "GENERAL", why),
            other => Failure::new(StatusCode::SERVICE_UNAVAILABLE, "GENERAL", other.message()),
        })
}

/// `flag` evaluated for `context`, as an OFREP success body or failure.
fn evaluated(
    flag: &SdkFlag,
    context: &Contextual,
    data: &EnvironmentSnapshot,
) -> Result<Value, Failure> {
    let detail = match context {
        context::Read::Ready(context) => evaluation::evaluate(flag, context, data),
        // A flag that is off serves its off variation to any context, with a key or not.
        context::Read::NoTargetingKey(_) if !flag.on => evaluation::evaluate_off(flag),
        context::Read::NoTargetingKey(kind) => {
            return Err(Failure::targeting_key_missing(&flag.key, kind))
        }
    };
    answer::answer(flag, &detail, |index| data.variant(&flag.key, index))
}

/// `POST /ofrep/v1/evaluate/flags/{key}`: one flag for the context.
pub(crate) async fn evaluate_flag(
    req: HttpRequest,
    key: web::Path<String>,
    payload: web::Payload,
    shared: web::Data<Shared>,
) -> HttpResponse {
    let key = key.into_inner();
    let access = match admit(&req, &shared, "POST /ofrep/v1/evaluate/flags/{key}").await {
        Ok(access) => access,
        Err(refusal) => return refused(refusal, Some(&key)),
    };
    let answered = async {
        let context = read_context(payload).await?;
        let data = snapshot_of(&shared, access).await?;
        let flag = data
            .flag(&key)
            .ok_or_else(|| Failure::flag_not_found(&key))?;
        evaluated(flag, &context, &data)
    }
    .await;
    match answered {
        Ok(body) => json(StatusCode::OK, &body),
        Err(failure) => json(failure.status, &failure.for_flag(&key)),
    }
}

/// The strong `ETag` of a bulk answer: its body's SHA-256 (the first 128 bits).
fn etag_of(body: &str) -> String {
    let digest = Sha256::digest(body.as_bytes());
    format!("\"{}\"", hex::encode(&digest[..16]))
}

/// Whether `If-None-Match` of `req` names `etag`. (`*` names none: an answer depends on the
/// context, so "any answer" says nothing of this one.)
fn not_modified(req: &HttpRequest, etag: &str) -> bool {
    req.headers()
        .get_all(header::IF_NONE_MATCH)
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == etag)
}

/// Every live flag of `data` for `context`, in creation order: each an OFREP success, or a
/// failure of its own (`{key, errorCode, errorDetails}`).
fn every_flag(context: &Contextual, data: &EnvironmentSnapshot) -> Value {
    let flags: Vec<Value> = data
        .flags()
        .map(|flag| {
            evaluated(flag, context, data).unwrap_or_else(|failure| failure.for_flag(&flag.key))
        })
        .collect();
    serde_json::json!({ "flags": flags })
}

/// `POST /ofrep/v1/evaluate/flags`: every flag of the key's environment for the context.
pub(crate) async fn evaluate_flags(
    req: HttpRequest,
    payload: web::Payload,
    shared: web::Data<Shared>,
) -> HttpResponse {
    let access = match admit(&req, &shared, "POST /ofrep/v1/evaluate/flags").await {
        Ok(access) => access,
        Err(refusal) => return refused(refusal, None),
    };
    let answered = async {
        let context = read_context(payload).await?;
        let data = snapshot_of(&shared, access).await?;
        Ok::<_, Failure>(every_flag(&context, &data).to_string())
    }
    .await;
    let body = match answered {
        Ok(body) => body,
        Err(failure) => return json(failure.status, &failure.for_request()),
    };
    let etag = etag_of(&body);
    let mut response = if not_modified(&req, &etag) {
        HttpResponse::NotModified().finish()
    } else {
        HttpResponse::Ok()
            .content_type("application/json")
            .body(body)
    };
    if let Ok(value) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    response
}

/// Anything else under `/ofrep/v1`: 404 (405 for another method on a route).
pub(crate) async fn no_route(req: HttpRequest) -> HttpResponse {
    let path = req.path();
    let known = path == "/ofrep/v1/evaluate/flags"
        || path
            .strip_prefix("/ofrep/v1/evaluate/flags/")
            .is_some_and(|key| !key.is_empty() && !key.contains('/'));
    let (status, details) = if known {
        (
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{} is not allowed on {path}; allowed: POST", req.method()),
        )
    } else {
        (
            StatusCode::NOT_FOUND,
            format!("no route {} {path}", req.method()),
        )
    };
    let mut response = json(
        status,
        &Failure::new(status, "GENERAL", details).for_request(),
    );
    if known {
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
    }
    response
}
