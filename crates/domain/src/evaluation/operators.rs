//! The clause operators: how an attribute's value is compared with one of a clause's values.
//! `segmentMatch` is not here: it asks the segments (see `evaluate.rs`).

use std::cmp::Ordering;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::rules::MAX_REGEX_BYTES;

/// Whether `operator` holds between the context's `value` and the clause's `expected`. An
/// operator no SDK knows, or values of the wrong types, never match.
pub(crate) fn matches(operator: &str, value: &Value, expected: &Value) -> bool {
    match operator {
        "in" => equal(value, expected),
        "startsWith" => strings(value, expected, |a, b| a.starts_with(b)),
        "endsWith" => strings(value, expected, |a, b| a.ends_with(b)),
        "contains" => strings(value, expected, |a, b| a.contains(b)),
        "matches" => match (value, pattern(expected)) {
            (Value::String(text), Some(re)) => re.is_match(text),
            _ => false,
        },
        "lessThan" => numbers(value, expected, |o| o == Ordering::Less),
        "lessThanOrEqual" => numbers(value, expected, |o| o != Ordering::Greater),
        "greaterThan" => numbers(value, expected, |o| o == Ordering::Greater),
        "greaterThanOrEqual" => numbers(value, expected, |o| o != Ordering::Less),
        "before" => dates(value, expected, |o| o == Ordering::Less),
        "after" => dates(value, expected, |o| o == Ordering::Greater),
        "semVerEqual" => versions(value, expected, |o| o == Ordering::Equal),
        "semVerLessThan" => versions(value, expected, |o| o == Ordering::Less),
        "semVerGreaterThan" => versions(value, expected, |o| o == Ordering::Greater),
        _ => false,
    }
}

/// JSON equality, with numbers compared by value (`1` equals `1.0`, never `true`).
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn strings(a: &Value, b: &Value, test: impl Fn(&str, &str) -> bool) -> bool {
    match (a, b) {
        (Value::String(a), Value::String(b)) => test(a, b),
        _ => false,
    }
}

/// `value` compiled as a `matches` pattern: none for a value that is not a string, invalid, or
/// larger compiled than the management API accepts (`MAX_REGEX_BYTES`; such a pattern never
/// matches), so that a clause's cost is bounded whatever the SDK data holds.
pub(crate) fn pattern(value: &Value) -> Option<regex::Regex> {
    let pattern = value.as_str()?;
    regex::RegexBuilder::new(pattern)
        .size_limit(MAX_REGEX_BYTES)
        .build()
        .ok()
}

fn numbers(a: &Value, b: &Value, test: impl Fn(Ordering) -> bool) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(a), Some(b)) if a.is_finite() && b.is_finite() => a.partial_cmp(&b).is_some_and(test),
        _ => false,
    }
}

/// A date: epoch milliseconds (a number, its fraction dropped, as the SDKs read it), or an
/// RFC 3339 string (to the nanosecond).
fn date(value: &Value) -> Option<DateTime<Utc>> {
    match value {
        Value::Number(n) => {
            let ms = n.as_f64().filter(|ms| ms.is_finite())?;
            #[allow(clippy::cast_possible_truncation)]
            DateTime::from_timestamp_millis(ms as i64)
        }
        Value::String(text) => DateTime::parse_from_rfc3339(text)
            .ok()
            .map(|date| date.with_timezone(&Utc)),
        _ => None,
    }
}

fn dates(a: &Value, b: &Value, test: impl Fn(Ordering) -> bool) -> bool {
    match (date(a), date(b)) {
        (Some(a), Some(b)) => test(a.cmp(&b)),
        _ => false,
    }
}

/// A semantic version, read leniently: `2` is `2.0.0` and `2.1` is `2.1.0`; build metadata is
/// kept out of comparisons.
fn version(value: &Value) -> Option<semver::Version> {
    let text = value.as_str()?;
    if let Ok(version) = semver::Version::parse(text) {
        return Some(version);
    }
    // Complete a missing minor or patch number before any pre-release or build part.
    let split = text.find(['-', '+']).unwrap_or(text.len());
    let (numbers, rest) = text.split_at(split);
    let completed = match numbers.split('.').count() {
        1 => format!("{numbers}.0.0{rest}"),
        2 => format!("{numbers}.0{rest}"),
        _ => return None,
    };
    semver::Version::parse(&completed).ok()
}

fn versions(a: &Value, b: &Value, test: impl Fn(Ordering) -> bool) -> bool {
    match (version(a), version(b)) {
        (Some(a), Some(b)) => {
            let ordering = (a.major, a.minor, a.patch)
                .cmp(&(b.major, b.minor, b.patch))
                .then_with(|| a.pre.cmp(&b.pre));
            test(ordering)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_by_value_and_never_with_booleans() {
        assert!(matches("in", &json!(1), &json!(1.0)));
        assert!(!matches("in", &json!(1), &json!(true)));
        assert!(matches("lessThan", &json!(1), &json!(1.5)));
        assert!(!matches("lessThan", &json!("1"), &json!(2)));
    }

    #[test]
    fn dates_are_epoch_ms_or_rfc_3339() {
        let ms = json!(1_000_000_000_000_i64);
        assert!(matches("before", &ms, &json!("2001-09-09T01:46:40.001Z")));
        assert!(!matches("before", &ms, &json!("2001-09-09T01:46:40Z")));
        assert!(matches(
            "after",
            &json!("2001-09-09T03:46:40+02:00"),
            &json!(999_999_999_999_i64)
        ));
        assert!(!matches("after", &json!("not a date"), &ms));
    }

    #[test]
    fn versions_are_read_leniently_and_build_metadata_is_ignored() {
        assert!(matches("semVerEqual", &json!("2"), &json!("2.0.0")));
        assert!(matches("semVerEqual", &json!("2.1"), &json!("2.1.0")));
        assert!(matches(
            "semVerEqual",
            &json!("2.0.0+build"),
            &json!("2.0.0")
        ));
        assert!(matches(
            "semVerLessThan",
            &json!("2.0.0-rc.1"),
            &json!("2.0.0")
        ));
        assert!(matches("semVerGreaterThan", &json!("2.0.1"), &json!("2")));
        assert!(!matches("semVerEqual", &json!("x"), &json!("2")));
    }

    #[test]
    fn unknown_operators_and_bad_patterns_never_match() {
        assert!(!matches("almost", &json!("a"), &json!("a")));
        assert!(!matches("matches", &json!("a"), &json!("(")));
        assert!(matches("matches", &json!("abc"), &json!("^a.c$")));
    }
}
