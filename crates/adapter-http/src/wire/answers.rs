//! Answers kept in the service's read cache: what tells them apart, and serving one.

use std::sync::Arc;

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use domain::version::ApiVersion;
use serde::Serialize;
use service::{CachedAnswer, ReadTicket};

use crate::error::ApiError;
use crate::AppState;

/// What tells one answer from another in the service's read cache: the path, the query and the
/// API version the request is answered in (the answers kept do not depend on who asks).
pub fn answer_request(req: &HttpRequest, version: ApiVersion) -> String {
    format!("{}?{}#{version}", req.path(), req.query_string())
}

/// 200 with a JSON answer kept by the read cache (shared, not copied).
pub fn kept_answer(body: Arc<[u8]>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(header::ContentType::json())
        .body(web::Bytes::from_owner(body))
}

/// 200 with `value` as JSON, kept by the read cache for `request` about `answer` when a ticket
/// was taken before it was read (see [`service::Service::keep_answer`]).
///
/// # Errors
/// 500 when `value` cannot be serialised.
pub fn keep_answer<T: Serialize>(
    state: &AppState,
    ticket: Option<ReadTicket>,
    answer: &CachedAnswer<'_>,
    request: &str,
    value: &T,
) -> Result<HttpResponse, ApiError> {
    let body: Arc<[u8]> = serde_json::to_vec(value)
        .map_err(|e| ApiError::unserializable(&e))?
        .into();
    if let Some(ticket) = ticket {
        state
            .service
            .keep_answer(ticket, answer, request, Arc::clone(&body));
    }
    Ok(kept_answer(body))
}
