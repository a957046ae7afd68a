//! JSON Merge Patch (RFC 7386), with the guards of JSON Patch: read-only paths and the size
//! limit.

use serde_json::Value;

use super::{derived_len, json_len, PatchError, MAX_DOCUMENT_BYTES};

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
/// for a read-only path, [`PatchError::TooLarge`] when it makes the document grow past
/// [`MAX_DOCUMENT_BYTES`].
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
    // A merge patch cannot copy, so the result is at most the document and the body together:
    // measuring it afterwards costs no more than the merge did.
    let before = json_len(doc);
    let after = json_len(&next);
    if after > before && after.saturating_sub(derived_len(&next)) > MAX_DOCUMENT_BYTES {
        return Err(PatchError::TooLarge {
            operation: "the merge patch".into(),
            limit: MAX_DOCUMENT_BYTES,
        });
    }
    Ok(next)
}
