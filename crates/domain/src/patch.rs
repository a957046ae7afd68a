//! JSON Patch (RFC 6902) and JSON Merge Patch (RFC 7386) over the model's JSON representation,
//! with guards for read-only fields.
//!
//! A patch is applied to the same JSON a client reads, one operation at a time on a copy, so a
//! failing operation leaves the original untouched. Paths that would change a read-only field
//! (any `_`-prefixed field, keys, server-managed versions and times) are refused before anything
//! is applied, and `test` may read any path.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::ValidationError;

/// One RFC 6902 operation.
pub type Operation = json_patch::PatchOperation;

/// Why a patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The body is not a patch at all (HTTP 400).
    #[error("{0}")]
    Malformed(String),
    /// An operation would change a read-only field (HTTP 422).
    #[error("path '{path}' is read-only and cannot be changed")]
    ReadOnly {
        /// The refused path.
        path: String,
    },
    /// A `test` operation found another value (HTTP 409).
    #[error("test operation at index {index} failed: '{path}' does not hold the expected value")]
    TestFailed {
        /// The operation's index.
        index: usize,
        /// Its path.
        path: String,
    },
    /// An operation cannot be applied, e.g. a path that does not exist (HTTP 422).
    #[error("operation at index {index} on '{path}' cannot be applied: {reason}")]
    Failed {
        /// The operation's index.
        index: usize,
        /// Its path.
        path: String,
        /// Why.
        reason: String,
    },
    /// The patched document is not a valid representation of the resource (HTTP 422).
    #[error("the patched resource is invalid: {0}")]
    InvalidResult(String),
    /// The patched resource breaks a rule of the model (HTTP 422).
    #[error("the patched resource is invalid: {0}")]
    Invalid(#[from] ValidationError),
}

/// A parsed JSON Patch body: a bare array or `{"comment": ..., "patch": [...]}`.
///
/// ```
/// use domain::patch::JsonPatchBody;
/// let body = JsonPatchBody::parse(serde_json::json!(
///     {"comment": "rename", "patch": [{"op": "replace", "path": "/name", "value": "x"}]})).unwrap();
/// assert_eq!(body.comment.as_deref(), Some("rename"));
/// assert_eq!(body.operations.len(), 1);
/// assert!(JsonPatchBody::parse(serde_json::json!({"op": "add"})).is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPatchBody {
    /// A comment for the audit log.
    pub comment: Option<String>,
    /// The operations, in order.
    pub operations: Vec<Operation>,
}

impl JsonPatchBody {
    /// Reads a JSON Patch body.
    ///
    /// # Errors
    /// [`PatchError::Malformed`] when the body is neither an array of operations nor a
    /// `{comment, patch}` object, or an operation is ill-formed.
    pub fn parse(body: Value) -> Result<Self, PatchError> {
        let (comment, ops) = match body {
            Value::Array(_) => (None, body),
            Value::Object(mut map) => {
                let ops = map.remove("patch").ok_or_else(|| {
                    PatchError::Malformed(
                        "a JSON Patch body is an array of operations or {\"comment\", \"patch\": [...]}".into(),
                    )
                })?;
                let comment = match map.remove("comment") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(s)) => Some(s),
                    Some(_) => {
                        return Err(PatchError::Malformed("'comment' must be a string".into()))
                    }
                };
                if let Some(other) = map.keys().next() {
                    return Err(PatchError::Malformed(format!(
                        "unexpected field '{other}' in patch body"
                    )));
                }
                (comment, ops)
            }
            _ => {
                return Err(PatchError::Malformed(
                    "a JSON Patch body must be an array of operations".into(),
                ))
            }
        };
        let Value::Array(items) = ops else {
            return Err(PatchError::Malformed(
                "'patch' must be an array of operations".into(),
            ));
        };
        let operations = items
            .into_iter()
            .enumerate()
            .map(|(i, op)| {
                serde_json::from_value(op).map_err(|e| {
                    PatchError::Malformed(format!("operation at index {i} is invalid: {e}"))
                })
            })
            .collect::<Result<Vec<Operation>, _>>()?;
        Ok(Self {
            comment,
            operations,
        })
    }
}

/// Serializes a model value to the JSON document patches apply to.
///
/// # Errors
/// [`PatchError::InvalidResult`] if the value cannot be represented as JSON (never for model types).
pub fn to_document<T: Serialize>(value: &T) -> Result<Value, PatchError> {
    serde_json::to_value(value).map_err(|e| PatchError::InvalidResult(e.to_string()))
}

/// Reads a patched document back into a model value.
///
/// # Errors
/// [`PatchError::InvalidResult`] naming the field whose value has the wrong shape.
pub fn from_document<T: DeserializeOwned>(doc: Value) -> Result<T, PatchError> {
    serde_json::from_value(doc).map_err(|e| PatchError::InvalidResult(e.to_string()))
}

/// The segments of a JSON Pointer, unescaped.
fn segments(pointer: &json_patch::jsonptr::Pointer) -> Vec<String> {
    pointer.tokens().map(|t| t.decoded().into_owned()).collect()
}

/// Applies `ops` to a copy of `doc`. `read_only` says, for a path's segments, whether writing
/// there is refused; it is asked for every path an operation writes to (and a `move`'s source).
///
/// ```
/// use domain::patch::{apply, JsonPatchBody, PatchError};
/// let doc = serde_json::json!({"name": "a", "_version": 1});
/// let ops = JsonPatchBody::parse(serde_json::json!([
///     {"op": "test", "path": "/_version", "value": 1},
///     {"op": "replace", "path": "/name", "value": "b"}])).unwrap().operations;
/// let read_only = |p: &[String]| p.first().is_none_or(|s| s.starts_with('_'));
/// assert_eq!(apply(&doc, &ops, read_only).unwrap()["name"], "b");
/// let bad = JsonPatchBody::parse(serde_json::json!([{"op": "remove", "path": "/_version"}])).unwrap().operations;
/// assert!(matches!(apply(&doc, &bad, read_only), Err(PatchError::ReadOnly { .. })));
/// ```
///
/// # Errors
/// [`PatchError::ReadOnly`] before anything is applied, [`PatchError::TestFailed`] or
/// [`PatchError::Failed`] for the first operation that fails.
pub fn apply(
    doc: &Value,
    ops: &[Operation],
    read_only: impl Fn(&[String]) -> bool,
) -> Result<Value, PatchError> {
    for op in ops {
        let written: Vec<&json_patch::jsonptr::Pointer> = match op {
            Operation::Test(_) => vec![],
            Operation::Move(m) => vec![&m.from, &m.path],
            other => vec![other.path()],
        };
        for pointer in written {
            if read_only(&segments(pointer)) {
                return Err(PatchError::ReadOnly {
                    path: pointer.as_str().to_owned(),
                });
            }
        }
    }
    let mut next = doc.clone();
    for (index, op) in ops.iter().enumerate() {
        json_patch::patch(&mut next, std::slice::from_ref(op)).map_err(|e| {
            let path = op.path().as_str().to_owned();
            match e.kind {
                json_patch::PatchErrorKind::TestFailed => PatchError::TestFailed { index, path },
                kind => PatchError::Failed {
                    index,
                    path,
                    reason: kind.to_string(),
                },
            }
        })?;
    }
    Ok(next)
}

/// Applies `ops` to the JSON representation of `value`, where only the top-level fields named in
/// `writable` may be written, and reads the result back.
///
/// # Errors
/// As [`apply`], plus [`PatchError::InvalidResult`] when the result does not read back as a `T`.
pub fn apply_to_fields<T: Serialize + DeserializeOwned>(
    value: &T,
    ops: &[Operation],
    writable: &[&str],
) -> Result<T, PatchError> {
    let doc = to_document(value)?;
    let patched = apply(&doc, ops, |path| {
        path.first()
            .is_none_or(|first| !writable.contains(&first.as_str()))
    })?;
    from_document(patched)
}

/// Applies a JSON Merge Patch (RFC 7386) to a copy of `doc`, refusing it when any path it sets or
/// removes is read-only.
///
/// ```
/// use domain::patch::merge;
/// let doc = serde_json::json!({"name": "a", "tags": ["x"], "_version": 1});
/// let read_only = |p: &[String]| p.first().is_none_or(|s| s.starts_with('_'));
/// let next = merge(&doc, &serde_json::json!({"name": "b"}), read_only).unwrap();
/// assert_eq!(next, serde_json::json!({"name": "b", "tags": ["x"], "_version": 1}));
/// assert!(merge(&doc, &serde_json::json!({"_version": 2}), read_only).is_err());
/// ```
///
/// # Errors
/// [`PatchError::Malformed`] when the merge document is not an object, [`PatchError::ReadOnly`]
/// for a read-only path.
pub fn merge(
    doc: &Value,
    merge: &Value,
    read_only: impl Fn(&[String]) -> bool,
) -> Result<Value, PatchError> {
    if !merge.is_object() {
        return Err(PatchError::Malformed(
            "a merge patch must be a JSON object".into(),
        ));
    }
    fn check(
        current: Option<&Value>,
        merge: &Value,
        path: &mut Vec<String>,
        read_only: &dyn Fn(&[String]) -> bool,
    ) -> Result<(), PatchError> {
        match (merge, current) {
            (Value::Object(fields), Some(Value::Object(existing))) => {
                for (name, value) in fields {
                    path.push(name.clone());
                    check(existing.get(name), value, path, read_only)?;
                    path.pop();
                }
                Ok(())
            }
            (value, current) if current == Some(value) => Ok(()),
            _ if read_only(path) => Err(PatchError::ReadOnly {
                path: path
                    .iter()
                    .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
                    .collect(),
            }),
            _ => Ok(()),
        }
    }
    check(Some(doc), merge, &mut Vec::new(), &read_only)?;
    let mut next = doc.clone();
    json_patch::merge(&mut next, merge);
    Ok(next)
}
