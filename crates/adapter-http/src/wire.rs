//! Wire shapes that are not model types (collections, representations with extra fields), the
//! request-body readers, paging links, and the bridge to the blocking use cases.

use crate::wire::link::{Link, Links};
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use domain::version::ApiVersion;
use serde::Serialize;
use serde_json::Value;
use service::{CachedAnswer, Queued, QueuedWrite, ReadTicket, Service, ServiceResult};
use std::sync::Arc;

use crate::error::ApiError;
use crate::AppState;

pub(crate) mod access;
mod audit;
mod environments;
mod flags;
pub(crate) mod link;
mod members;
// Schemas only, never built: they describe what the domain's types serialise to and parse from
// (see the module's documentation), so nothing here constructs them.
#[allow(dead_code)]
pub(crate) mod model;
mod projects;
mod representations;
mod roles;
mod segments;
mod teams;
mod tokens;
mod webhooks;

pub use access::{with_access, with_flag_access, ResourceAccess};
pub use audit::{AuditEntries, AuditEntry};
pub use environments::{Environment, Environments};
pub use flags::{flag_shown_to, DependentFlags, FeatureFlags, Flag};
pub use members::{Member, Members};
pub use projects::{ProjectExpanded, ProjectRep, Projects};
pub use representations::ApiRepresentations;
pub use roles::{CustomRole, CustomRoles};
pub use segments::{Segment, SegmentDetail, Segments};
pub use teams::{Team, Teams};
pub use tokens::{TokenRep, Tokens};
pub use webhooks::{Webhook, Webhooks};

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

/// Runs a use case on the blocking pool (diesel is synchronous) and maps its error.
///
/// # Errors
/// The use case's error, or 503 when the blocking pool is gone.
pub async fn call<T: Send + 'static>(
    state: &AppState,
    work: impl FnOnce(&Service) -> ServiceResult<T> + Send + 'static,
) -> Result<T, ApiError> {
    let service = state.service.clone();
    // The request's span goes along: what the use case logs carries the request id.
    let span = tracing::Span::current();
    web::block(move || span.in_scope(|| work(&service)))
        .await
        .map_err(|_| {
            ApiError::from_status(
                actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
                "the server is shutting down".into(),
            )
        })?
        .map_err(ApiError::from)
}

/// Runs a use case's queued write: waits for its turn here, holding no blocking thread (the
/// changes queued behind one writer leave the pool to the next writer and the reads), and
/// writes on the blocking pool when its turn comes.
///
/// # Errors
/// The use case's error, or 503 when the blocking pool is gone.
pub async fn call_queued<T: Send + 'static>(
    state: &AppState,
    queued: QueuedWrite<T>,
) -> Result<T, ApiError> {
    match queued.await {
        Queued::Answered(outcome) => outcome.map_err(ApiError::from),
        Queued::Writes(turn) => call(state, move |_| turn.write()).await,
    }
}

/// Query-string parameters, keeping repeated names (`env=a&env=b`).
#[derive(Debug, Clone, Default)]
pub struct QueryParams(Vec<(String, String)>);

impl QueryParams {
    /// Parses the request's query string.
    pub fn of(req: &HttpRequest) -> Self {
        Self(
            form_urlencoded::parse(req.query_string().as_bytes())
                .into_owned()
                .collect(),
        )
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name` (comma-separated values are split too).
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(n, _)| n == name)
            .flat_map(|(_, v)| v.split(','))
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// Every value of `name`, as [`Self::all`], at most
    /// [`domain::query::MAX_FILTER_VALUES`] of them.
    ///
    /// # Errors
    /// 400 naming the parameter and the limit.
    pub fn list(&self, name: &str) -> Result<Vec<String>, ApiError> {
        let values = self.all(name);
        domain::query::at_most(name, values.len()).map_err(|e| ApiError::invalid(e.0))?;
        Ok(values)
    }

    /// A boolean flag parameter (`true`/`1`/`false`/`0`, the words in any case: the original's
    /// Python client writes `True` and `False`).
    ///
    /// # Errors
    /// 400 for another value.
    pub fn flag(&self, name: &str, default: bool) -> Result<bool, ApiError> {
        // Given twice, which one was meant is a guess: `dryRun=false&dryRun=true` must not write.
        if self.0.iter().filter(|(key, _)| key == name).count() > 1 {
            return Err(ApiError::invalid(format!(
                "{name} is given more than once; give it once"
            )));
        }
        match self.get(name) {
            None => Ok(default),
            Some(word) if word == "1" || word.eq_ignore_ascii_case("true") => Ok(true),
            Some(word) if word == "0" || word.eq_ignore_ascii_case("false") => Ok(false),
            Some(other) => Err(ApiError::invalid(format!(
                "{name} must be true, false, 1 or 0, not '{other}'"
            ))),
        }
    }
}

/// The OpenAPI description of the `dryRun` query parameter of flag and segment `PATCH`.
pub const DRY_RUN_DESCRIPTION: &str = "`true` (or `1`): validate and apply the change inside a transaction that is then rolled back, and answer with the result it would have: the same status and body as the real call (`_version` and `version`s as they would be), or the same error. Nothing is stored: no version changes, no audit entry, no webhook delivery. `lastModified` (and `archivedDate`/`deprecatedDate` where the change sets them) is the time of the dry run, and `_id`s the change would assign are generated again by the real call. Default `false`; any value other than `true`, `false` (in any case), `1` or `0`, or the parameter given twice, is a 400 naming it.";

/// The most bytes of JSON the items of one page of a list carry: a page stops at the item that
/// would take it past this (keeping at least one, so that paging always moves on), and its
/// `next` link starts after the last item it holds. Lists of large resources (a flag or a
/// segment may hold megabytes) thus answer in pages of bounded size, whatever `limit` asks.
pub const MAX_PAGE_BYTES: usize = 4 << 20;

/// Cuts `items` after the last one within [`MAX_PAGE_BYTES`] of JSON (the first is always
/// kept): what one page of a list holds.
pub fn within_page_bytes<T: Serialize>(items: &mut Vec<T>) {
    let mut bytes = 0usize;
    let mut keep = items.len();
    for (at, item) in items.iter().enumerate() {
        bytes = bytes.saturating_add(domain::patch::json_len(item));
        if bytes > MAX_PAGE_BYTES && at > 0 {
            keep = at;
            break;
        }
    }
    items.truncate(keep);
}

/// `_links` of one page of a collection at `path`, holding `shown` items from `offset`: `self`,
/// and `first`, `prev`, `next` (after the last item shown), `last` where they exist. Other query
/// parameters (filters, sort) are kept.
pub fn page_links(req: &HttpRequest, limit: u32, offset: u64, shown: usize, total: u64) -> Links {
    let kept: Vec<(String, String)> = form_urlencoded::parse(req.query_string().as_bytes())
        .into_owned()
        .filter(|(name, _)| name != "limit" && name != "offset")
        .collect();
    let href = |offset: u64| {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (name, value) in &kept {
            query.append_pair(name, value);
        }
        query.append_pair("limit", &limit.to_string());
        query.append_pair("offset", &offset.to_string());
        Link::api(format!("{}?{}", req.path(), query.finish()))
    };
    let limit64 = u64::from(limit.max(1));
    let mut links = Links::from([("self".to_owned(), href(offset))]);
    if offset > 0 {
        links.insert("first".to_owned(), href(0));
        links.insert("prev".to_owned(), href(offset.saturating_sub(limit64)));
    }
    let after = offset.saturating_add(u64::try_from(shown).unwrap_or(u64::MAX));
    if after < total {
        links.insert("next".to_owned(), href(after));
        links.insert("last".to_owned(), href((total - 1) / limit64 * limit64));
    }
    links
}

/// The form of a PATCH body, from its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchForm {
    /// `application/json` or `application/json-patch+json`: JSON Patch (or a `{comment, merge}`).
    Json,
    /// `application/json; domain-model=svc.semanticpatch`.
    Semantic,
    /// `application/merge-patch+json`.
    Merge,
}

/// Reads the `Content-Type` of a request with a body.
///
/// # Errors
/// 415 when it is missing or not JSON.
pub fn patch_form(req: &HttpRequest) -> Result<PatchForm, ApiError> {
    let value = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            ApiError::unsupported_media_type(
                "a request body must be JSON: send Content-Type: application/json",
            )
        })?;
    let mut parts = value.split(';');
    let essence = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
    let semantic = parts.any(|param| {
        param.split_once('=').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("domain-model")
                && value
                    .trim()
                    .trim_matches('"')
                    .trim()
                    .eq_ignore_ascii_case("svc.semanticpatch")
        })
    });
    match essence.as_str() {
        "application/json" if semantic => Ok(PatchForm::Semantic),
        "application/json" | "application/json-patch+json" => Ok(PatchForm::Json),
        "application/merge-patch+json" => Ok(PatchForm::Merge),
        other => Err(ApiError::unsupported_media_type(format!(
            "unsupported Content-Type '{other}': send application/json (JSON Patch), \
             application/json; domain-model=svc.semanticpatch (semantic patch) or application/merge-patch+json"
        ))),
    }
}

/// Reads a JSON request body into `T`, after the caller's permission has been checked (so that a
/// caller who may not do something learns that first, whatever the body).
///
/// # Errors
/// 415 when the body is not JSON, 400 when it is malformed, holds a NUL character or does
/// not fit `T`.
pub fn json_body<T: serde::de::DeserializeOwned>(
    req: &HttpRequest,
    body: &[u8],
) -> Result<T, ApiError> {
    let is_json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|essence| essence.trim().to_ascii_lowercase())
        .is_some_and(|essence| essence == "application/json" || essence.ends_with("+json"));
    if !is_json {
        return Err(ApiError::unsupported_media_type(
            "the request body must be JSON: send Content-Type: application/json",
        ));
    }
    let value = parse_json(body)?;
    integers_leniently(value, serde_path_to_error::deserialize::<_, T>).map_err(|e| {
        let reason = plain_types(&e.inner().to_string());
        let path = e.path().to_string();
        if path == "." {
            ApiError::invalid(format!("invalid request body: {reason}"))
        } else {
            ApiError {
                errors: vec![domain::FieldError::new(path.clone(), reason.clone())],
                ..ApiError::invalid(format!("{path}: {reason}"))
            }
        }
    })
}

/// serde's messages name Rust types (`expected usize`); clients read JSON types.
fn plain_types(message: &str) -> String {
    let mut text = message.to_owned();
    for (rust, json) in [
        ("usize", "a non-negative integer"),
        ("u64", "a non-negative integer"),
        ("u32", "a non-negative integer"),
        ("u16", "a non-negative integer"),
        ("u8", "a non-negative integer"),
        ("i64", "an integer"),
        ("i32", "an integer"),
        ("f64", "a number"),
    ] {
        text = text.replace(&format!("expected {rust}"), &format!("expected {json}"));
    }
    text
}

/// Reads `value` with `read`; when that fails and `value` holds numbers such as `1.0`, reads it
/// again with those written as integers.
///
/// JSON Schema's `integer` is any number without a fraction, so `1.0` is a valid integer to a
/// client generated from the document; serde reads integer fields only from integer literals.
/// The second reading happens only for a body the first refused, so a body that was readable
/// keeps its numbers exactly as sent (a variation's `1.0` stays `1.0`).
pub fn integers_leniently<T, E>(
    value: Value,
    read: impl Fn(Value) -> Result<T, E>,
) -> Result<T, E> {
    let fallback = has_integral_float(&value).then(|| value.clone());
    match read(value) {
        Ok(read) => Ok(read),
        Err(first) => match fallback {
            Some(mut value) => {
                integral_floats_to_integers(&mut value);
                read(value).map_err(|_| first)
            }
            None => Err(first),
        },
    }
}

fn integral(number: &serde_json::Number) -> Option<i64> {
    let float = number.as_f64().filter(|_| number.is_f64())?;
    // Within ±2^53 every integral float is exact.
    (float.fract() == 0.0 && float.abs() <= 9_007_199_254_740_992.0).then_some(float as i64)
}

fn has_integral_float(value: &Value) -> bool {
    match value {
        Value::Number(n) => integral(n).is_some(),
        Value::Array(items) => items.iter().any(has_integral_float),
        Value::Object(map) => map.values().any(has_integral_float),
        _ => false,
    }
}

fn integral_floats_to_integers(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(i) = integral(n) {
                *value = Value::from(i);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_to_integers),
        Value::Object(map) => map.values_mut().for_each(integral_floats_to_integers),
        _ => {}
    }
}

/// Parses a JSON body.
///
/// # Errors
/// 400 for malformed JSON, JSON nested too deep, or a NUL character anywhere in it (see
/// [`crate::input`]).
pub fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    crate::input::check_body_depth(body)?;
    let value = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid(format!("the request body is not valid JSON: {e}")))?;
    crate::exact_numbers::check_exact_integers(body)?;
    crate::input::check_body(&value)?;
    Ok(value)
}

/// Reads a JSON Patch body for resources that take JSON Patch only (projects, environments).
///
/// # Errors
/// 415 for other patch forms; 400 for a malformed body.
pub fn json_patch_only(
    req: &HttpRequest,
    body: &[u8],
) -> Result<domain::patch::JsonPatchBody, ApiError> {
    match patch_form(req)? {
        PatchForm::Json => {}
        PatchForm::Semantic | PatchForm::Merge => {
            return Err(ApiError::unsupported_media_type(
                "this resource accepts JSON Patch only (Content-Type: application/json)",
            ))
        }
    }
    domain::patch::JsonPatchBody::parse(parse_json(body)?)
        .map_err(|e| ApiError::invalid(e.to_string()))
}

/// A PATCH body that changes a resource's document: RFC 6902 operations, or an RFC 7386 merge
/// document.
#[derive(Debug, Clone, PartialEq)]
pub enum DocumentPatch {
    /// JSON Patch (`[...]` or `{comment?, patch}`).
    Json(domain::patch::JsonPatchBody),
    /// Merge patch (`application/merge-patch+json`, or `{comment?, merge}` in `application/json`).
    Merge {
        /// Audit comment.
        comment: Option<String>,
        /// The merge document.
        merge: Value,
    },
}

/// A merge document without what a GET answer derives on every read and never stores: the
/// caller's `_access` and a segment's `_flags` (the flags that use it), so a GET body sent back
/// as a merge patch changes nothing.
fn without_access(mut merge: Value) -> Value {
    if let Some(fields) = merge.as_object_mut() {
        fields.remove("_access");
        fields.remove("_flags");
    }
    merge
}

/// Reads a PATCH body of `form` other than a semantic patch: in `application/json` a
/// `{comment?, merge}` object is a merge patch and anything else a JSON Patch. `semantic` says
/// whether the resource also takes semantic patches (then a JSON body of `instructions` is
/// answered with the Content-Type to send it with).
///
/// # Errors
/// 415 for a semantic patch (the caller reads those itself when it takes them); 400 for a
/// `comment` that is not a string, another field beside `merge`, or a malformed JSON Patch.
pub fn document_patch(
    form: PatchForm,
    value: Value,
    semantic: bool,
) -> Result<DocumentPatch, ApiError> {
    match form {
        PatchForm::Semantic => Err(ApiError::unsupported_media_type(
            "this resource changes by JSON Patch (Content-Type: application/json) or merge patch (application/merge-patch+json)",
        )),
        PatchForm::Merge => Ok(DocumentPatch::Merge {
            comment: None,
            merge: without_access(value),
        }),
        PatchForm::Json => match value {
            Value::Object(mut fields) if fields.contains_key("merge") => {
                let merge = fields.remove("merge").unwrap_or(Value::Null);
                let comment = match fields.remove("comment") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(c)) => Some(c),
                    Some(_) => return Err(ApiError::invalid("'comment' must be a string")),
                };
                if let Some(other) = fields.keys().next() {
                    return Err(ApiError::invalid(format!(
                        "unexpected field '{other}' in merge patch body"
                    )));
                }
                Ok(DocumentPatch::Merge {
                    comment,
                    merge: without_access(merge),
                })
            }
            Value::Object(fields) if semantic && fields.contains_key("instructions") => {
                Err(ApiError::invalid(
                    "this body is a semantic patch: send it with Content-Type: application/json; domain-model=svc.semanticpatch",
                ))
            }
            other => Ok(DocumentPatch::Json(
                domain::patch::JsonPatchBody::parse(other)
                    .map_err(|e| ApiError::invalid(e.to_string()))?,
            )),
        },
    }
}

/// A semantic patch body (`Content-Type: application/json; domain-model=svc.semanticpatch`).
// A schema only (no doc line here: it would join the description): the domain reads the body
// (`SemanticPatch::parse`).
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code)]
#[serde(rename_all = "camelCase")]
pub struct SemanticPatchBody {
    /// The environment that environment-scoped instructions act on.
    pub environment_key: Option<String>,
    /// A comment for the audit log.
    pub comment: Option<String>,
    /// Applied in order, all or none; at most 1000.
    #[schema(max_items = 1000)]
    pub instructions: Vec<model::Instruction>,
}

/// One RFC 6902 operation.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct JsonPatchOperation {
    /// `add`, `remove`, `replace`, `move`, `copy` or `test`.
    pub op: String,
    /// A JSON Pointer into the resource.
    pub path: String,
    /// The value (`add`, `replace`, `test`).
    pub value: Option<Value>,
    /// The source (`move`, `copy`).
    pub from: Option<String>,
}

/// Reads an optional `expiry` query parameter (epoch ms).
///
/// # Errors
/// 400 when it is not an integer.
pub fn expiry_param(req: &HttpRequest) -> Result<Option<i64>, ApiError> {
    QueryParams::of(req)
        .get("expiry")
        .map(|v| {
            v.trim().parse::<i64>().map_err(|_| {
                ApiError::invalid(format!("expiry must be epoch milliseconds, not '{v}'"))
            })
        })
        .transpose()
}
