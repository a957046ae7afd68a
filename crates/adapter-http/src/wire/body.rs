//! Request bodies: the form of a PATCH by its `Content-Type`, JSON read strictly, and the
//! document patches (JSON Patch, merge patch) as the routes take them.

use actix_web::http::header;
use actix_web::HttpRequest;
use serde::Serialize;
use serde_json::Value;

use crate::error::ApiError;

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
    pub instructions: Vec<domain::instruction::Instruction>,
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
