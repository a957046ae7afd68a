//! JSON Patch (RFC 6902) and JSON Merge Patch (RFC 7386) over the model's JSON representation,
//! with guards for read-only fields.
//!
//! A patch is applied to the same JSON a client reads, one operation at a time on a copy, so a
//! failing operation leaves the original untouched. Paths that would change a read-only field
//! (any `_`-prefixed field, keys, server-managed versions and times) are refused before anything
//! is applied, and `test` may read any path.
//!
//! Every request has a bounded cost: a JSON Patch has at most [`MAX_OPERATIONS`] operations, and
//! no operation may make the document larger than [`MAX_DOCUMENT_BYTES`]. The size is checked
//! before each operation is applied, from the sizes of the values it inserts and replaces, so a
//! `copy` that would double a large value is refused without the copy ever being made. Nor may
//! an operation nest the document deeper than [`MAX_JSON_DEPTH`] levels, so that many shallow
//! operations cannot build a document too deep to store, read back or drop.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::ValidationError;

mod merge;
pub use merge::merge;

/// One RFC 6902 operation.
pub type Operation = json_patch::PatchOperation;

/// The most operations one JSON Patch may have.
pub const MAX_OPERATIONS: usize = 1000;

/// The largest document a patch may produce: bytes of compact JSON, not counting the derived
/// fields ([`DERIVED_FIELDS`]) that no patch can write. A patch that makes a document grow past
/// it is refused; one that leaves a larger document as large or smaller is not.
pub const MAX_DOCUMENT_BYTES: usize = 1 << 20;

/// The deepest a JSON document may nest while a patch is applied to it, in levels of arrays and
/// objects (the HTTP adapter holds request bodies to it too). It leaves room for a resource's own
/// structure around values of [`crate::MAX_VALUE_DEPTH`] levels, and keeps every stored document
/// and audit entry well below the 128 levels `serde_json` reads.
pub const MAX_JSON_DEPTH: usize = 64;

/// Whether `value` nests arrays and objects more than `limit` levels deep (`1` has no level,
/// `[1]` one, `{"a": [1]}` two). It looks no deeper than `limit + 1` levels, so it costs little
/// stack whatever the value.
///
/// ```
/// use domain::patch::nests_deeper_than;
/// use serde_json::json;
/// assert!(!nests_deeper_than(&json!("text"), 0));
/// assert!(!nests_deeper_than(&json!({"a": [1]}), 2));
/// assert!(nests_deeper_than(&json!({"a": [1]}), 1));
/// ```
pub fn nests_deeper_than(value: &Value, limit: usize) -> bool {
    let deeper = |item: &Value| {
        limit
            .checked_sub(1)
            .is_none_or(|rest| nests_deeper_than(item, rest))
    };
    match value {
        Value::Array(items) => limit == 0 || items.iter().any(deeper),
        Value::Object(fields) => limit == 0 || fields.values().any(deeper),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => false,
    }
}

/// Whether putting `value` at `path` makes that branch of a document deeper than
/// [`MAX_JSON_DEPTH`]: every token of the path descends into one array or object.
fn lands_too_deep(path: &json_patch::jsonptr::Pointer, value: &Value) -> bool {
    let levels = path.tokens().count();
    levels > MAX_JSON_DEPTH || nests_deeper_than(value, MAX_JSON_DEPTH - levels)
}

/// The most bytes of the document one patch may read to measure what its operations replace,
/// remove, copy or move (16 times [`MAX_DOCUMENT_BYTES`]): measuring reads that part of the
/// document, so many operations on one large subtree would otherwise read it many times over.
pub const MAX_MEASURED_BYTES: usize = 16 * MAX_DOCUMENT_BYTES;

/// Members of a resource's document (or of a flag's configurations) that are not counted against
/// [`MAX_DOCUMENT_BYTES`]: what the API adds to show it (links, UI addresses, summaries) and the
/// environment's name a configuration carries. Every `_` member is read-only.
pub const DERIVED_FIELDS: [&str; 4] = ["_links", "_site", "_summary", "_environmentName"];

/// Why a patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The body is not a patch at all.
    #[error("{0}")]
    Malformed(String),
    /// An operation would change a read-only field.
    #[error("path '{path}' is read-only and cannot be changed")]
    ReadOnly {
        /// The refused path.
        path: String,
    },
    /// A `test` operation found another value.
    #[error("test operation at index {index} failed: '{path}' does not hold the expected value")]
    TestFailed {
        /// The operation's index.
        index: usize,
        /// Its path.
        path: String,
    },
    /// An operation cannot be applied, e.g. a path that does not exist.
    #[error("operation at index {index} on '{path}' cannot be applied: {reason}")]
    Failed {
        /// The operation's index.
        index: usize,
        /// Its path.
        path: String,
        /// Why.
        reason: String,
    },
    /// The patch would make the document larger than the limit.
    #[error("{operation} would make the resource larger than {limit} bytes of JSON, the size limit of a resource")]
    TooLarge {
        /// Which operation (`operation at index 3 on '/x'`, `the merge patch`).
        operation: String,
        /// The limit in bytes ([`MAX_DOCUMENT_BYTES`]).
        limit: usize,
    },
    /// The patched document is not a valid representation of the resource.
    #[error("the patched resource is invalid: {0}")]
    InvalidResult(String),
    /// The patched resource breaks a rule of the model.
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
    /// `{comment, patch}` object, has more than [`MAX_OPERATIONS`] operations, or an operation
    /// is ill-formed.
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
        check_operation_count(items.len())?;
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

/// Copies the members `names` of the object `shown` (those it has) into the object `own`: what
/// a representation adds to a resource's own document (`_links`, ...). A patch applies to a
/// resource as a client sees it, so that it can `test` and `copy` from those members and send
/// them back unchanged in a merge patch; only those members come from the representation, every
/// other value is the resource's own.
///
/// ```
/// let mut doc = serde_json::json!({"name": "n"});
/// let shown = serde_json::json!({"name": "shown", "_links": {}});
/// domain::patch::copy_members(&mut doc, &shown, &["_links"]);
/// assert_eq!(doc, serde_json::json!({"name": "n", "_links": {}}));
/// ```
pub fn copy_members(own: &mut Value, shown: &Value, names: &[&str]) {
    if let (Value::Object(fields), Value::Object(shown)) = (own, shown) {
        for name in names {
            if let Some(value) = shown.get(*name) {
                fields.insert((*name).to_owned(), value.clone());
            }
        }
    }
}

/// Removes the members `names` from the object `doc`, if it is one: after a patch of a resource
/// as shown (see [`copy_members`]), every `_` path being read-only, they are still what was
/// shown, and are removed before the document is read back.
///
/// ```
/// let mut doc = serde_json::json!({"name": "n", "_links": {}});
/// domain::patch::remove_members(&mut doc, &["_links"]);
/// assert_eq!(doc, serde_json::json!({"name": "n"}));
/// ```
pub fn remove_members(doc: &mut Value, names: &[&str]) {
    if let Value::Object(fields) = doc {
        for name in names {
            fields.remove(*name);
        }
    }
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

/// Checks the number of operations of a patch against [`MAX_OPERATIONS`].
fn check_operation_count(count: usize) -> Result<(), PatchError> {
    if count > MAX_OPERATIONS {
        return Err(PatchError::Malformed(format!(
            "a JSON Patch has at most {MAX_OPERATIONS} operations (the limit of operations per patch); this one has {count}"
        )));
    }
    Ok(())
}

/// An `io::Write` that only counts bytes.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The length of `value` as compact JSON, counted without building the text.
///
/// ```
/// assert_eq!(domain::patch::json_len(&serde_json::json!({"a": [1, "b\n"]})), 15);
/// ```
pub fn json_len<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = ByteCounter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        // Only non-string map keys can fail, and `Value` has none; count the worst case.
        Err(_) => usize::MAX,
    }
}

/// The length of an object member `"key":value` whose value is `value_len` bytes long.
fn member_len(key: &str, value_len: usize) -> usize {
    json_len(key).saturating_add(1).saturating_add(value_len)
}

/// The bytes of `doc` taken by [`DERIVED_FIELDS`] (with their names and separators), where a
/// representation puts them: members of the resource itself and, for a flag, of each of its
/// `environments`. A member of that name anywhere else is a client's data (a JSON variation
/// value, a custom property) and counts like any other.
fn derived_len(doc: &Value) -> usize {
    fn own_members(value: &Value) -> usize {
        match value {
            Value::Object(fields) => fields
                .iter()
                .filter(|(name, _)| DERIVED_FIELDS.contains(&name.as_str()))
                .map(|(name, value)| member_len(name, json_len(value)).saturating_add(1))
                .fold(0, usize::saturating_add),
            _ => 0,
        }
    }
    let environments = match doc.get("environments") {
        Some(Value::Object(configs)) => configs
            .values()
            .map(own_members)
            .fold(0, usize::saturating_add),
        _ => 0,
    };
    own_members(doc).saturating_add(environments)
}

/// How an operation changes the length of a document: bytes it adds and bytes it takes away.
#[derive(Debug, Clone, Copy, Default)]
struct Change {
    added: usize,
    removed: usize,
}

/// A separator `,` is needed when a container already has `others` members.
fn comma(others: usize) -> usize {
    usize::from(others > 0)
}

/// What inserting a value `len` bytes long at `path` (RFC 6902 `add`) does to the length of
/// `doc`, whose length is `doc_len`. A path that does not resolve changes nothing (the operation
/// will fail).
fn add_change(
    doc: &Value,
    path: &json_patch::jsonptr::Pointer,
    len: usize,
    doc_len: usize,
    read: &mut usize,
) -> Change {
    let Some((parent, last)) = path.split_back() else {
        return Change {
            added: len,
            removed: doc_len,
        };
    };
    match doc.pointer(parent.as_str()) {
        Some(Value::Object(fields)) => {
            let name = last.decoded();
            match fields.get(name.as_ref()) {
                Some(old) => Change {
                    added: len,
                    removed: measure(old, read),
                },
                None => Change {
                    added: member_len(&name, len).saturating_add(comma(fields.len())),
                    removed: 0,
                },
            }
        }
        Some(Value::Array(items)) => Change {
            added: len.saturating_add(comma(items.len())),
            removed: 0,
        },
        _ => Change::default(),
    }
}

/// The length of `value`, a part of the document, adding it to the bytes `read` so far.
fn measure(value: &Value, read: &mut usize) -> usize {
    let len = json_len(value);
    *read = read.saturating_add(len);
    len
}

/// The bytes that removing the value at `path` takes from `doc` (0 when there is none).
fn removed_len(doc: &Value, path: &json_patch::jsonptr::Pointer, read: &mut usize) -> usize {
    let Some((parent, last)) = path.split_back() else {
        return 0;
    };
    match doc.pointer(parent.as_str()) {
        Some(Value::Object(fields)) => {
            let name = last.decoded();
            fields.get(name.as_ref()).map_or(0, |old| {
                member_len(&name, measure(old, read)).saturating_add(comma(fields.len() - 1))
            })
        }
        Some(Value::Array(items)) => last
            .to_index()
            .ok()
            .and_then(|index| index.for_len(items.len()).ok())
            .and_then(|index| items.get(index))
            .map_or(0, |old| {
                measure(old, read).saturating_add(comma(items.len() - 1))
            }),
        _ => 0,
    }
}

/// Takes the value at `from` out of `doc`, as RFC 6902 `move` does before inserting it again
/// (the same rules as the `json_patch` crate's `remove`, `-` not allowed).
fn take(doc: &mut Value, from: &json_patch::jsonptr::Pointer) -> Option<Value> {
    let (parent, last) = from.split_back()?;
    match doc.pointer_mut(parent.as_str())? {
        Value::Object(fields) => fields.remove(last.decoded().as_ref()),
        Value::Array(items) => {
            let index = last.to_index().ok()?.for_len(items.len()).ok()?;
            Some(items.remove(index))
        }
        _ => None,
    }
}

/// A document being patched, with its length kept up to date operation by operation.
struct Measured<'a> {
    doc: &'a mut Value,
    /// Its length as compact JSON.
    len: usize,
    /// The largest length an operation may make it grow to: the limit plus the derived fields.
    budget: usize,
    /// The limit, for messages.
    limit: usize,
    /// Bytes of the document read so far to measure operations (at most
    /// [`MAX_MEASURED_BYTES`]).
    read: usize,
}

impl Measured<'_> {
    /// Refuses a change that grows the document past the budget; otherwise records it.
    fn admit(&mut self, change: Change, index: usize, path: &str) -> Result<(), PatchError> {
        let next = self
            .len
            .saturating_sub(change.removed)
            .saturating_add(change.added);
        if change.added > change.removed && next > self.budget {
            return Err(PatchError::TooLarge {
                operation: format!("operation at index {index} on '{path}'"),
                limit: self.limit,
            });
        }
        self.len = next;
        Ok(())
    }

    /// Refuses operation `index` before it runs: when what it puts would land too deep, or the
    /// operations before it read the most a patch may read to measure its changes.
    fn refuse_early(&self, index: usize, op: &Operation, path: &str) -> Result<(), PatchError> {
        let landing = match op {
            Operation::Add(add) => Some((&add.path, Some(&add.value))),
            Operation::Replace(replace) => Some((&replace.path, Some(&replace.value))),
            Operation::Copy(copy) => Some((&copy.path, self.doc.pointer(copy.from.as_str()))),
            Operation::Remove(_) | Operation::Test(_) | Operation::Move(_) => None,
        };
        if let Some((at, Some(value))) = landing {
            if lands_too_deep(at, value) {
                return Err(nested_too_deep(index, path));
            }
        }
        if self.read > MAX_MEASURED_BYTES {
            return Err(PatchError::Failed {
                index,
                path: path.to_owned(),
                reason: format!(
                    "the operations before it read more than {MAX_MEASURED_BYTES} bytes of the resource to measure what they change, the work limit of one patch"
                ),
            });
        }
        Ok(())
    }

    /// Applies operation `index`, refusing it before it is applied when it would grow the
    /// document past the budget.
    fn apply(&mut self, index: usize, op: &Operation) -> Result<(), PatchError> {
        let path = op.path().as_str();
        let fail = |kind| patch_failure(index, path, kind);
        let too_deep = || nested_too_deep(index, path);
        // RFC 6902 4.6: numbers are equal when their values are (`3.0` tests equal to `3`);
        // serde_json's `==` also compares how they were written.
        if let Operation::Test(test) = op {
            if let Some(current) = self.doc.pointer(test.path.as_str()) {
                return if same_json(current, &test.value) {
                    Ok(())
                } else {
                    Err(fail(json_patch::PatchErrorKind::TestFailed))
                };
            }
        }
        self.refuse_early(index, op, path)?;
        let read = &mut self.read;
        let change = match op {
            Operation::Add(add) => {
                add_change(self.doc, &add.path, json_len(&add.value), self.len, read)
            }
            Operation::Replace(replace) => Change {
                added: json_len(&replace.value),
                removed: self
                    .doc
                    .pointer(replace.path.as_str())
                    .map_or(0, |old| measure(old, read)),
            },
            Operation::Copy(copy) => match self.doc.pointer(copy.from.as_str()) {
                Some(source) => {
                    let len = measure(source, read);
                    add_change(self.doc, &copy.path, len, self.len, read)
                }
                None => Change::default(),
            },
            Operation::Remove(remove) => Change {
                added: 0,
                removed: removed_len(self.doc, &remove.path, read),
            },
            Operation::Test(_) => Change::default(),
            Operation::Move(mv) => {
                // Taken out and inserted again, so that the insertion is measured where it lands.
                if mv.path.starts_with(&mv.from) && mv.path.len() != mv.from.len() {
                    return Err(fail(json_patch::PatchErrorKind::CannotMoveInsideItself));
                }
                let removed = removed_len(self.doc, &mv.from, &mut self.read);
                let value = self
                    .doc
                    .pointer(mv.from.as_str())
                    .ok_or_else(|| fail(json_patch::PatchErrorKind::InvalidFromPointer))?;
                if lands_too_deep(&mv.path, value) {
                    return Err(too_deep());
                }
                let value = take(self.doc, &mv.from)
                    .ok_or_else(|| fail(json_patch::PatchErrorKind::InvalidFromPointer))?;
                self.len = self.len.saturating_sub(removed);
                let len = json_len(&value);
                let change = add_change(self.doc, &mv.path, len, self.len, &mut self.read);
                self.admit(change, index, path)?;
                let add = Operation::Add(json_patch::AddOperation {
                    path: mv.path.clone(),
                    value,
                });
                return json_patch::patch(self.doc, std::slice::from_ref(&add))
                    .map_err(|e| fail(e.kind));
            }
        };
        let before = self.len;
        self.admit(change, index, path)?;
        json_patch::patch(self.doc, std::slice::from_ref(op)).map_err(|e| {
            self.len = before;
            fail(e.kind)
        })
    }
}

/// Operation `index` failed as json-patch says.
fn patch_failure(index: usize, path: &str, kind: json_patch::PatchErrorKind) -> PatchError {
    match kind {
        json_patch::PatchErrorKind::TestFailed => PatchError::TestFailed {
            index,
            path: path.to_owned(),
        },
        kind => PatchError::Failed {
            index,
            path: path.to_owned(),
            reason: kind.to_string(),
        },
    }
}

/// Operation `index` would nest the document too deep.
fn nested_too_deep(index: usize, path: &str) -> PatchError {
    PatchError::Failed {
        index,
        path: path.to_owned(),
        reason: format!(
            "it would nest the resource deeper than {MAX_JSON_DEPTH} levels of arrays and objects, the limit of JSON nesting depth"
        ),
    }
}

/// JSON equality as RFC 6902 `test` defines it: numbers by value, arrays item by item,
/// objects member by member whatever their order, everything else as written.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64().zip(y.as_f64()).is_some_and(|(x, y)| x == y),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, x)| y.get(key).is_some_and(|y| same_json(x, y)))
        }
        _ => a == b,
    }
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
/// [`PatchError::Malformed`] for more than [`MAX_OPERATIONS`] operations and
/// [`PatchError::ReadOnly`] before anything is applied; [`PatchError::TestFailed`],
/// [`PatchError::Failed`] or [`PatchError::TooLarge`] (more than [`MAX_DOCUMENT_BYTES`]) for the
/// first operation that fails.
pub fn apply(
    doc: &Value,
    ops: &[Operation],
    read_only: impl Fn(&[String]) -> bool,
) -> Result<Value, PatchError> {
    apply_within(doc, ops, read_only, MAX_DOCUMENT_BYTES)
}

/// [`apply`] with another limit than [`MAX_DOCUMENT_BYTES`] on the patched document (bytes of
/// compact JSON, [`DERIVED_FIELDS`] not counted).
///
/// ```
/// use domain::patch::{apply_within, JsonPatchBody, PatchError};
/// let doc = serde_json::json!({"x": "0123456789"});
/// let ops = JsonPatchBody::parse(serde_json::json!([
///     {"op": "copy", "from": "/x", "path": "/y"}])).unwrap().operations;
/// let anything = |_: &[String]| false;
/// assert!(apply_within(&doc, &ops, anything, 40).is_ok());
/// assert!(matches!(apply_within(&doc, &ops, anything, 20), Err(PatchError::TooLarge { .. })));
/// ```
///
/// # Errors
/// As [`apply`].
pub fn apply_within(
    doc: &Value,
    ops: &[Operation],
    read_only: impl Fn(&[String]) -> bool,
    limit: usize,
) -> Result<Value, PatchError> {
    check_operation_count(ops.len())?;
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
    let len = json_len(&next);
    let budget = limit.saturating_add(derived_len(&next));
    let mut sized = Measured {
        doc: &mut next,
        len,
        budget,
        limit,
        read: 0,
    };
    for (index, op) in ops.iter().enumerate() {
        sized.apply(index, op)?;
    }
    Ok(next)
}

/// Checks a change made by other means than a JSON or merge patch (a semantic patch): `after`
/// may not be larger than [`MAX_DOCUMENT_BYTES`] (as [`apply`] counts) unless it is no larger
/// than `before`. Measuring costs no more than the change did, as it cannot copy. The same as
/// [`check_size`]`("the change", Some(before), after)`.
///
/// ```
/// use domain::patch::{check_growth, MAX_DOCUMENT_BYTES};
/// let small = serde_json::json!({"d": ""});
/// let big = serde_json::json!({"d": "x".repeat(MAX_DOCUMENT_BYTES)});
/// assert!(check_growth(&small, &small).is_ok());
/// assert!(check_growth(&small, &big).is_err());
/// assert!(check_growth(&big, &small).is_ok());
/// ```
///
/// # Errors
/// [`PatchError::TooLarge`].
pub fn check_growth<T: Serialize>(before: &T, after: &T) -> Result<(), PatchError> {
    check_size("the change", Some(before), after)
}

/// Checks a resource written by other means than a JSON or merge patch against
/// [`MAX_DOCUMENT_BYTES`] (as [`apply`] counts): a changed resource (`before` is what it was: a
/// semantic patch, a copy between environments) may be larger only if it is no larger than
/// before; a new one (`before` is `None`: a create, a clone) may not be larger at all. `what`
/// names the change in the error. Measuring counts bytes without building the text.
///
/// ```
/// use domain::patch::{check_size, MAX_DOCUMENT_BYTES};
/// let small = serde_json::json!({"d": ""});
/// let big = serde_json::json!({"d": "x".repeat(MAX_DOCUMENT_BYTES)});
/// assert!(check_size("the clone", None, &small).is_ok());
/// let err = check_size("the clone", None, &big).unwrap_err();
/// assert!(err.to_string().starts_with("the clone would make the resource larger than 1048576 bytes"));
/// assert!(check_size("the copy", Some(&big), &small).is_ok());
/// assert!(check_size("the copy", Some(&big), &big).is_ok());
/// assert!(check_size("the copy", Some(&small), &big).is_err());
/// ```
///
/// # Errors
/// [`PatchError::TooLarge`].
pub fn check_size<T: Serialize>(
    what: &str,
    before: Option<&T>,
    after: &T,
) -> Result<(), PatchError> {
    let len = json_len(after);
    if len <= MAX_DOCUMENT_BYTES || before.is_some_and(|before| len <= json_len(before)) {
        return Ok(());
    }
    if len.saturating_sub(derived_len(&to_document(after)?)) <= MAX_DOCUMENT_BYTES {
        return Ok(());
    }
    Err(PatchError::TooLarge {
        operation: what.to_owned(),
        limit: MAX_DOCUMENT_BYTES,
    })
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
    apply_to_fields_as_shown(value, &Value::Null, &[], ops, writable)
}

/// [`apply_to_fields`] on `value` as the API shows it: with the members `shown_only` of `shown`
/// (its representation, e.g. `_links`), which the operations may `test` and `copy` from but not
/// write (see [`copy_members`]).
///
/// # Errors
/// As [`apply_to_fields`].
pub fn apply_to_fields_as_shown<T: Serialize + DeserializeOwned>(
    value: &T,
    shown: &Value,
    shown_only: &[&str],
    ops: &[Operation],
    writable: &[&str],
) -> Result<T, PatchError> {
    let mut doc = to_document(value)?;
    copy_members(&mut doc, shown, shown_only);
    let mut patched = apply(&doc, ops, |path| {
        path.first()
            .is_none_or(|first| !writable.contains(&first.as_str()))
    })?;
    remove_members(&mut patched, shown_only);
    from_document(patched)
}

/// What the API adds to the document of a project, environment, member or webhook when it shows
/// it.
pub const LINKS_ONLY: [&str; 1] = ["_links"];

#[cfg(test)]
mod equality_tests {
    use serde_json::json;

    #[test]
    fn test_compares_numbers_by_value() {
        let doc = json!({"_version": 3, "weights": [1.5, 2], "nested": {"a": 1, "b": [0.0]}});
        for (value, equal) in [
            (json!(3.0), true),
            (json!(3), true),
            (json!(3.5), false),
            (json!("3"), false),
        ] {
            assert_eq!(super::same_json(&doc["_version"], &value), equal, "{value}");
        }
        assert!(super::same_json(&doc["weights"], &json!([1.5, 2.0])));
        assert!(super::same_json(
            &doc["nested"],
            &json!({"b": [0], "a": 1.0})
        ));
        assert!(!super::same_json(&doc["nested"], &json!({"a": 1})));
        assert!(!super::same_json(&json!(u64::MAX), &json!(-1)));
    }

    #[test]
    fn a_version_test_written_as_a_float_passes() {
        let doc = json!({"_version": 3, "name": "x"});
        let ops: Vec<super::Operation> = serde_json::from_value(json!([
            {"op": "test", "path": "/_version", "value": 3.0},
            {"op": "replace", "path": "/name", "value": "y"}
        ]))
        .unwrap();
        let patched = super::apply(&doc, &ops, |_| false).unwrap();
        assert_eq!(patched["name"], "y");
        let ops: Vec<super::Operation> = serde_json::from_value(json!([
            {"op": "test", "path": "/_version", "value": 2.0}
        ]))
        .unwrap();
        assert!(matches!(
            super::apply(&doc, &ops, |_| false),
            Err(super::PatchError::TestFailed { .. })
        ));
    }
}

#[cfg(test)]
mod derived_tests {
    use serde_json::json;

    use super::*;

    fn ops(value: Value) -> Vec<Operation> {
        JsonPatchBody::parse(value).unwrap().operations
    }

    #[test]
    fn only_the_representations_own_members_go_uncounted() {
        let big = "x".repeat(MAX_DOCUMENT_BYTES);
        let rename = ops(json!([{"op": "replace", "path": "/name", "value": "n"}]));
        // Where the representation puts them, derived members are not counted...
        let shown = json!({"_links": {"self": big}, "environments": {"e": {"_site": {"href": big}}}, "name": ""});
        assert!(apply(&shown, &rename, |_| false).is_ok());
        // ...but a client's value of that name anywhere else is.
        let smuggled = json!({"variations": [{"value": {"_links": big}}], "name": ""});
        let result = apply(&smuggled, &rename, |_| false);
        assert!(
            matches!(result, Err(PatchError::TooLarge { .. })),
            "{result:?}"
        );
    }
}
