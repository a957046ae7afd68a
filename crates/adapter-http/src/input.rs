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

use domain::FieldError;
use serde_json::Value;

use crate::error::ApiError;

/// The JSON Pointer (RFC 6901) of `parent` extended by `token`.
fn pointer(parent: &str, token: &str) -> String {
    format!("{parent}/{}", token.replace('~', "~0").replace('/', "~1"))
}

/// Where the first NUL in `value` is: the pointer of the string holding it, or of the object
/// whose member name holds it.
fn find_nul(value: &Value, at: &str) -> Option<String> {
    match value {
        Value::String(text) => text.contains('\0').then(|| at.to_owned()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| find_nul(item, &pointer(at, &i.to_string()))),
        Value::Object(members) => members.iter().find_map(|(name, item)| {
            if name.contains('\0') {
                Some(at.to_owned())
            } else {
                find_nul(item, &pointer(at, name))
            }
        }),
        Value::Null | Value::Bool(_) | Value::Number(_) => None,
    }
}

/// Refuses a JSON body holding a NUL character anywhere.
///
/// # Errors
/// 400 `invalid_request` naming the JSON Pointer of the string (or of the object whose member
/// name) holding it.
pub fn check_body(value: &Value) -> Result<(), ApiError> {
    let Some(at) = find_nul(value, "") else {
        return Ok(());
    };
    let shown = if at.is_empty() { "/" } else { at.as_str() };
    Err(ApiError {
        errors: vec![FieldError::new(
            shown,
            "must not contain the NUL character (U+0000)",
        )],
        ..ApiError::invalid(format!(
            "{shown}: the request body must not contain the NUL character (U+0000)"
        ))
    })
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
        assert_eq!(
            find_nul(&json!({"a": ["x", "y\u{0}"]}), ""),
            Some("/a/1".into())
        );
        assert_eq!(
            find_nul(&json!({"a/b": {"c\u{0}": 1}}), ""),
            Some("/a~1b".into())
        );
        assert_eq!(find_nul(&json!("\u{0}"), ""), Some(String::new()));
        assert_eq!(find_nul(&json!({"a": "tab\there\u{1}", "n": 1}), ""), None);
        let err = check_body(&json!([{"value": "\u{0}"}])).unwrap_err();
        assert_eq!(err.errors[0].attribute, "/0/value");
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
