//! Text as the console writes it: dates, clauses, notices, form text, addresses.

use domain::flag::{Clause, Operator};

/// `text` as a query-string value or path segment.
pub(crate) fn encode(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, UNRESERVED).to_string()
}

/// Free text as a form sent it (a comment for the audit log, a token's description): control
/// characters but newlines and tabs dropped, and none unless it says something (a letter or a
/// digit: a comment of spaces or invisible characters is none, also where one is required).
pub(crate) fn free_text(comment: Option<String>) -> Option<String> {
    comment
        .map(|c| {
            c.chars()
                .filter(|ch| !ch.is_control() || matches!(ch, '\n' | '\t'))
                .collect::<String>()
        })
        .filter(|c| c.chars().any(says_something))
}

/// `epoch_ms` as `2026-11-27 20:30:12 UTC`.
pub(crate) fn utc(epoch_ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(epoch_ms).map_or_else(
        || format!("{epoch_ms} ms after 1970"),
        |date| date.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
    )
}

/// A clause as a sentence: `user email ends with "@example.com"`.
pub(crate) fn clause_text(clause: &Clause) -> String {
    let mut values: Vec<String> = clause
        .values
        .iter()
        .take(VALUES_SHOWN)
        .map(ToString::to_string)
        .collect();
    if clause.values.len() > VALUES_SHOWN {
        values.push(format!("and {} more", clause.values.len() - VALUES_SHOWN));
    }
    let subject = if clause.op == Operator::SegmentMatch {
        clause.context_kind.clone()
    } else {
        format!("{} {}", clause.context_kind, clause.attribute)
    };
    format!(
        "{subject} {} {}",
        operator_words(&clause.op, clause.negate),
        values.join(", ")
    )
}

/// An operator in words.
fn operator_words(op: &Operator, negate: bool) -> &'static str {
    match (op, negate) {
        (Operator::In, false) => "is one of",
        (Operator::In, true) => "is not one of",
        (Operator::EndsWith, false) => "ends with",
        (Operator::EndsWith, true) => "does not end with",
        (Operator::StartsWith, false) => "starts with",
        (Operator::StartsWith, true) => "does not start with",
        (Operator::Matches, false) => "matches",
        (Operator::Matches, true) => "does not match",
        (Operator::Contains, false) => "contains",
        (Operator::Contains, true) => "does not contain",
        (Operator::LessThan, false) => "is less than",
        (Operator::LessThan, true) => "is not less than",
        (Operator::LessThanOrEqual, false) => "is at most",
        (Operator::LessThanOrEqual, true) => "is more than",
        (Operator::GreaterThan, false) => "is greater than",
        (Operator::GreaterThan, true) => "is not greater than",
        (Operator::GreaterThanOrEqual, false) => "is at least",
        (Operator::GreaterThanOrEqual, true) => "is less than",
        (Operator::Before, false) => "is before",
        (Operator::Before, true) => "is not before",
        (Operator::After, false) => "is after",
        (Operator::After, true) => "is not after",
        (Operator::SegmentMatch, false) => "is in segment",
        (Operator::SegmentMatch, true) => "is not in segment",
        (Operator::SemVerEqual, false) => "is version",
        (Operator::SemVerEqual, true) => "is not version",
        (Operator::SemVerLessThan, false) => "is a version before",
        (Operator::SemVerLessThan, true) => "is not a version before",
        (Operator::SemVerGreaterThan, false) => "is a version after",
        (Operator::SemVerGreaterThan, true) => "is not a version after",
    }
}

/// A clause's values shown before "and N more".
const VALUES_SHOWN: usize = 10;

/// What a successful change says on the page it returns to (`?done=`).
pub(crate) fn done_text(done: &str) -> Option<&'static str> {
    Some(match done {
        "settings" => "The settings were saved.",
        "serving" => "What the environment serves was saved.",
        "archived" => "The flag was archived.",
        "restored" => "The flag was restored.",
        "copied" => "The configuration was copied.",
        "unchanged" => "Nothing was changed: the flag already was as the form asked.",
        _ => return None,
    })
}

/// What [`encode`] leaves as it is: RFC 3986's unreserved characters.
const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Whether `c` is a letter or a digit that shows (not one of Unicode's blank fillers).
pub(crate) fn says_something(c: char) -> bool {
    c.is_alphanumeric() && !matches!(c, '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}')
}
