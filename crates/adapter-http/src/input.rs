//! The characters a request may carry. One rule, applied before any handler reads its input:
//!
//! - NUL (U+0000) is refused in every string the API receives: anywhere in a JSON body (values
//!   and member names, comments included) and in every query parameter and path segment.
//!   PostgreSQL text cannot hold it, and no field of the model needs it.
//! - Query parameters and path segments are single-line: every control character (Unicode
//!   `Cc`: U+0000..U+001F, U+007F..U+009F) is refused there.
//! - Single-line fields of the model (keys, names, tags, emails) refuse control characters too;
//!   `domain` checks those. Free text (descriptions, comments) and JSON values (variation values,
//!   clause values) may hold any other character, escaped in JSON, and are returned as sent.
//!
//! Each refusal is a 400 `invalid_request` naming the JSON Pointer, the parameter or the path.
//!
//! A JSON body nests at most [`MAX_JSON_DEPTH`] levels of arrays and objects, checked on the
//! bytes before they are parsed: whatever a request brings into the audit log (the patch it sent,
//! as `delta`) stays readable.

use domain::patch::MAX_JSON_DEPTH;
use domain::FieldError;
use serde_json::Value;

use crate::error::ApiError;

/// Where the first NUL in `value` is, as the tokens of a JSON Pointer in reverse order: the
/// string holding it, or the object whose member name holds it. Nothing is allocated on the
/// way down, only on the way back from a find.
fn find_nul(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::String(text) => text.contains('\0').then(Vec::new),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
            let mut tokens = find_nul(item)?;
            tokens.push(i.to_string());
            Some(tokens)
        }),
        Value::Object(members) => members.iter().find_map(|(name, item)| {
            if name.contains('\0') {
                return Some(Vec::new());
            }
            let mut tokens = find_nul(item)?;
            tokens.push(name.clone());
            Some(tokens)
        }),
        Value::Null | Value::Bool(_) | Value::Number(_) => None,
    }
}

/// The JSON Pointer (RFC 6901) of reversed `tokens`; `/` for the whole document.
fn pointer(tokens: &[String]) -> String {
    if tokens.is_empty() {
        return "/".to_owned();
    }
    tokens
        .iter()
        .rev()
        .map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// Refuses a JSON body holding a NUL character anywhere.
///
/// # Errors
/// 400 `invalid_request` naming the JSON Pointer of the string (or of the object whose member
/// name) holding it.
pub fn check_body(value: &Value) -> Result<(), ApiError> {
    let Some(tokens) = find_nul(value) else {
        return Ok(());
    };
    let shown = pointer(&tokens);
    Err(ApiError {
        errors: vec![FieldError::new(
            shown.clone(),
            "must not contain the NUL character (U+0000)",
        )],
        ..ApiError::invalid(format!(
            "{shown}: the request body must not contain the NUL character (U+0000)"
        ))
    })
}

/// Whether the JSON text `body` opens more than `limit` arrays and objects inside one another
/// (brackets in strings do not count). One pass over the bytes, no allocation.
fn nests_deeper_than(body: &[u8], limit: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in body {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Refuses a JSON body that nests arrays and objects more than [`MAX_JSON_DEPTH`] levels deep,
/// before it is parsed.
///
/// # Errors
/// 400 `invalid_request` naming the limit.
pub fn check_body_depth(body: &[u8]) -> Result<(), ApiError> {
    if nests_deeper_than(body, MAX_JSON_DEPTH) {
        return Err(ApiError::invalid(format!(
            "the request body nests arrays and objects more than {MAX_JSON_DEPTH} levels deep; {MAX_JSON_DEPTH} levels is the limit of a request body's nesting depth"
        )));
    }
    Ok(())
}

fn first_control(text: &str) -> Option<char> {
    text.chars().find(|c| c.is_control())
}

fn control_error(what: String, c: char) -> ApiError {
    ApiError::invalid(format!(
        "{what} must not contain control characters (found U+{:04X})",
        u32::from(c)
    ))
}

/// Refuses control characters in the query parameters (names and decoded values) and in the
/// decoded path segments of a request.
///
/// # Errors
/// 400 `invalid_request` naming the parameter or the path.
pub fn check_request_line(path: &str, query: &str) -> Result<(), ApiError> {
    for segment in path.split('/') {
        let decoded = percent_encoding::percent_decode_str(segment).decode_utf8_lossy();
        if let Some(c) = first_control(&decoded) {
            return Err(control_error("the path".to_owned(), c));
        }
    }
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        if let Some(c) = first_control(&name) {
            return Err(control_error("a query parameter name".to_owned(), c));
        }
        if let Some(c) = first_control(&value) {
            return Err(control_error(format!("query parameter '{name}'"), c));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nul_is_found_in_values_and_member_names() {
        let at = |value: Value| find_nul(&value).map(|tokens| pointer(&tokens));
        assert_eq!(at(json!({"a": ["x", "y\u{0}"]})), Some("/a/1".into()));
        assert_eq!(at(json!({"a/b": {"c\u{0}": 1}})), Some("/a~1b".into()));
        assert_eq!(at(json!({"x~": [{"\u{0}": 1}]})), Some("/x~0/0".into()));
        assert_eq!(at(json!("\u{0}")), Some("/".into()));
        assert_eq!(at(json!({"a": "tab\there\u{1}", "n": 1})), None);
        let err = check_body(&json!([{"value": "\u{0}"}])).unwrap_err();
        assert_eq!(err.errors[0].attribute, "/0/value");
    }

    #[test]
    fn body_depth_counts_brackets_outside_strings() {
        assert!(!nests_deeper_than(br#"{"a": [1, {"b": 2}]}"#, 3));
        assert!(nests_deeper_than(br#"{"a": [1, {"b": 2}]}"#, 2));
        assert!(!nests_deeper_than(br#"[[], [], "[[[[", "\"[[[[{{"]"#, 2));
        assert!(nests_deeper_than(br#"["\\", [[]]]"#, 2));
        assert!(!nests_deeper_than(br#"["\\", [[]]]"#, 3));
        let deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
        assert!(check_body_depth(&deep.as_bytes()[1..deep.len() - 1]).is_ok());
        let err = check_body_depth(deep.as_bytes()).unwrap_err();
        assert!(err.message.contains("64 levels"), "{}", err.message);
    }

    #[test]
    fn request_lines_are_single_line() {
        assert!(check_request_line("/api/v2/projects/web", "filter=query:a%20b&x=%2B").is_ok());
        let err = check_request_line("/api/v2/projects/we%00b", "").unwrap_err();
        assert!(err.message.contains("path") && err.message.contains("U+0000"));
        let err = check_request_line("/api/v2/projects", "filter=query:a%0Ab").unwrap_err();
        assert!(err.message.contains("'filter'") && err.message.contains("U+000A"));
        assert!(check_request_line("/api/v2/projects", "a%7F=1").is_err());
    }
}
