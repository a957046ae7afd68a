//! The flag-management model and its rules, free of I/O.
//!
//! An account holds [projects](project::Project); a project holds
//! [environments](environment::Environment); a [flag](flag::Flag) exists in every environment of
//! its project and is configured independently in each ([`flag::FlagConfig`]). Flags change by
//! JSON Patch ([`patch`]) or by semantic patch ([`instruction`]); both end in the same validation
//! ([`flag::Flag::validate`]), so no form of change can produce an invalid flag.
//!
//! Nothing here performs I/O: identifiers, random salts and the current time are passed in by the
//! caller, which keeps every rule a pure, testable function.
//!
//! ```
//! use domain::flag::{Flag, NewFlag};
//! use domain::key::FlagKey;
//!
//! let new = NewFlag::boolean(FlagKey::parse("dark-mode").unwrap(), "Dark mode");
//! let mut ids = domain::SequentialIds::default();
//! let flag = Flag::create(new, 1_700_000_000_000, &mut ids).unwrap();
//! assert_eq!(flag.variations.len(), 2);
//! assert_eq!(flag.defaults.off_variation, 1);
//! ```

#![warn(missing_docs)]

pub mod audit;
pub mod catalogue;
pub mod custom_role;
pub mod environment;
pub mod evaluation;
pub mod flag;
pub mod id;
pub mod instruction;
pub mod key;
pub mod member;
mod newtype;
pub mod patch;
pub mod policy;
pub mod project;
pub mod query;
pub mod role;
mod rules;
pub mod segment;
pub mod targeting;
pub mod team;
pub mod text;
pub mod token;
pub mod version;
pub mod webhook;

/// A source of fresh identifiers, so that the model can create variations, rules and clauses
/// without doing I/O itself.
///
/// ```
/// use domain::{IdSource, SequentialIds};
/// let mut ids = SequentialIds::default();
/// assert_ne!(ids.uuid(), ids.uuid());
/// ```
pub trait IdSource {
    /// A new UUID string (for variation, rule and clause `_id`s).
    fn uuid(&mut self) -> String;
    /// A new random hex string of `len` characters (salts, `sel`).
    fn hex(&mut self, len: usize) -> String;
}

/// Deterministic identifiers for tests and examples: `00000000-0000-4000-8000-000000000001`, ...
///
/// ```
/// use domain::{IdSource, SequentialIds};
/// let mut ids = SequentialIds::default();
/// assert_eq!(ids.uuid(), "00000000-0000-4000-8000-000000000001");
/// assert_eq!(ids.hex(4), "0002");
/// ```
#[derive(Debug, Default, Clone)]
pub struct SequentialIds {
    next: u64,
}

impl IdSource for SequentialIds {
    fn uuid(&mut self) -> String {
        self.next += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.next)
    }

    fn hex(&mut self, len: usize) -> String {
        self.next += 1;
        format!("{:0>len$x}", self.next, len = len)
    }
}

/// One field of an input that broke a rule, as reported in an error's `errors` list.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FieldError {
    /// The field, as named in the JSON body (`key`, `variations[1].value`).
    pub attribute: String,
    /// What is wrong with it.
    pub reason: String,
}

impl FieldError {
    /// A field error for `attribute`.
    pub fn new(attribute: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            attribute: attribute.into(),
            reason: reason.into(),
        }
    }
}

/// An input that breaks one or more rules of the model.
///
/// ```
/// use domain::{FieldError, ValidationError};
/// let err = ValidationError::single("name", "must not be empty");
/// assert_eq!(err.to_string(), "name: must not be empty");
/// assert_eq!(err.errors, vec![FieldError::new("name", "must not be empty")]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.errors.iter().map(|e| format!("{}: {}", e.attribute, e.reason)).collect::<Vec<_>>().join("; "))]
pub struct ValidationError {
    /// Every broken rule, one per field.
    pub errors: Vec<FieldError>,
}

impl ValidationError {
    /// An error about one field.
    pub fn single(attribute: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            errors: vec![FieldError::new(attribute, reason)],
        }
    }

    /// Collects field errors; `Ok(())` when there are none.
    pub fn check(errors: Vec<FieldError>) -> Result<(), Self> {
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Self { errors })
        }
    }
}

/// The most tags an object (project, environment, flag, segment, webhook) may carry.
///
/// ```
/// assert_eq!(domain::MAX_TAGS, 100);
/// ```
pub const MAX_TAGS: usize = 100;

/// The most target values (context keys, all variations or inclusions and context kinds
/// together) one flag environment or one segment may hold.
///
/// ```
/// assert_eq!(domain::MAX_TARGETS, 15_000);
/// ```
pub const MAX_TARGETS: usize = 15_000;

/// The most prerequisites one flag environment may have.
///
/// ```
/// assert_eq!(domain::MAX_PREREQUISITES, 100);
/// ```
pub const MAX_PREREQUISITES: usize = 100;

/// How deep a JSON value a resource holds on behalf of its users (a flag's variation values) may
/// nest: levels of arrays and objects, so `1` has none and `{"a": [1]}` two. Whole stored
/// documents and audit entries, which wrap such values in a few more levels, so stay far below
/// the 128 levels `serde_json` reads back.
///
/// ```
/// assert_eq!(domain::MAX_VALUE_DEPTH, 32);
/// ```
pub const MAX_VALUE_DEPTH: usize = 32;

/// Tags: at most [`MAX_TAGS`], each 1..64 characters of `[A-Za-z0-9._-]`.
pub(crate) fn validate_tags(attribute: &str, tags: &[String], errors: &mut Vec<FieldError>) {
    if tags.len() > MAX_TAGS {
        errors.push(FieldError::new(
            attribute,
            format!("at most {MAX_TAGS} tags are allowed, not {}", tags.len()),
        ));
        return;
    }
    for (i, tag) in tags.iter().enumerate() {
        let ok = !tag.is_empty()
            && tag.len() <= text::MAX_TAG_CHARS
            && tag
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !ok {
            errors.push(FieldError::new(
                format!("{attribute}[{i}]"),
                "a tag is 1 to 64 characters of letters, digits, '.', '_' or '-'",
            ));
        }
    }
}

/// Sorts and de-duplicates tags so that stored tags are canonical.
pub(crate) fn normalize_tags(tags: &mut Vec<String>) {
    tags.sort();
    tags.dedup();
}

/// Names: [`text::NAME_PATTERN`], at most [`text::MAX_NAME_CHARS`] characters.
pub(crate) fn validate_name(attribute: &str, name: &str, errors: &mut Vec<FieldError>) {
    let before = errors.len();
    if name.chars().count() > text::MAX_NAME_CHARS {
        errors.push(FieldError::new(
            attribute,
            format!("must be at most {} characters", text::MAX_NAME_CHARS),
        ));
        return;
    }
    validate_single_line(attribute, name, errors);
    if errors.len() == before && !text::is_name(name) {
        errors.push(FieldError::new(
            attribute,
            "must not be empty or only white space",
        ));
    }
}

/// Labels (variation, token, webhook and member names): [`text::SINGLE_LINE_PATTERN`], at most
/// [`text::MAX_NAME_CHARS`] characters; empty is allowed.
pub(crate) fn validate_label(attribute: &str, label: &str, errors: &mut Vec<FieldError>) {
    if label.chars().count() > text::MAX_NAME_CHARS {
        errors.push(FieldError::new(
            attribute,
            format!("must be at most {} characters", text::MAX_NAME_CHARS),
        ));
    } else {
        validate_single_line(attribute, label, errors);
    }
}

/// Single-line text (names, emails): no control characters (Unicode `Cc`: NUL, tab, line
/// breaks, escape, DEL, C1). Free text such as descriptions may hold them.
pub(crate) fn validate_single_line(attribute: &str, text: &str, errors: &mut Vec<FieldError>) {
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        errors.push(FieldError::new(
            attribute,
            format!(
                "must not contain control characters (found U+{:04X})",
                u32::from(c)
            ),
        ));
    }
}
