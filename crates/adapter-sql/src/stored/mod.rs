//! The stored format: how the JSON columns hold domain values, owned by the store.
//!
//! Five aggregates are kept as JSON documents: a flag's settings (`flags.settings`) and each of
//! its per-environment configurations (`flag_configs.config`), segments (`segments.doc`), audit
//! entries (`audit_log.entry`, with the detail apart in `audit_details.detail`), webhooks
//! (`webhooks.doc`) and custom roles (`custom_roles.doc`). Each has a `Stored…` type here with serde names of its own, spelled out
//! field by field, so renaming a field of the API or of the domain cannot silently change what
//! is written, and old rows stay readable.
//!
//! # Versions
//! Every document carries its format version in `"v"`:
//! - **0** (no `"v"`): what releases before the stored types wrote, the API's JSON of the
//!   domain value, presentation data included (`_links`, `_site`, `_summary`,
//!   `_environmentName`). The readers accept it and ignore that presentation data.
//! - **1** ([`FORMAT_VERSION`]): the same field names as version 0 (so a partial reader, such as
//!   the status facts of a configuration, reads both), without presentation data or fields
//!   derived at read time.
//!
//! A document with a version above [`FORMAT_VERSION`] was written by a newer release and is
//! refused rather than misread.
//!
//! # Domain types inside the format
//! The top-level documents and the flag-wide leaves are mirrored here. Deeper plain-data parts
//! are written with the domain's own serde and so are part of the stored format too:
//! [`domain::flag::Target`], [`domain::flag::Rule`], [`domain::flag::Clause`] (with
//! [`domain::flag::Operator`]), [`domain::flag::VariationOrRollout`],
//! [`domain::flag::Rollout`], [`domain::flag::WeightedVariation`],
//! [`domain::flag::Prerequisite`], [`domain::segment::SegmentTarget`],
//! [`domain::segment::SegmentRule`], [`domain::webhook::Statement`] (with
//! [`domain::webhook::Effect`]) and [`domain::audit::Access`]. The tests of each module pin
//! the JSON of a fully populated document (golden strings), so a serde change of one of these
//! types fails a test instead of changing the stored format unnoticed.

pub mod audit;
pub mod custom_role;
pub mod flag;
pub mod segment;
pub mod webhook;

use ports::{StoreError, StoreResult};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// The format version written today.
pub const FORMAT_VERSION: u32 = 1;

/// The error of a document the store cannot read.
fn corrupt(what: &str, err: impl std::fmt::Display) -> StoreError {
    StoreError::Other(format!("stored {what} cannot be read: {err}"))
}

/// `value` as JSON text.
fn write<T: Serialize>(value: &T) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Other(e.to_string()))
}

/// A document of `what` from its JSON text, refusing versions this release does not know.
fn read<T: DeserializeOwned + Versioned>(text: &str, what: &str) -> StoreResult<T> {
    let document: T = serde_json::from_str(text).map_err(|e| corrupt(what, e))?;
    if document.format() > FORMAT_VERSION {
        return Err(corrupt(
            what,
            format!(
                "format version {} is newer than this release reads ({FORMAT_VERSION})",
                document.format()
            ),
        ));
    }
    Ok(document)
}

/// A stored document that says which format version it was written in.
trait Versioned {
    /// The `"v"` field (0 when absent).
    fn format(&self) -> u32;
}

/// Implements [`Versioned`] for documents whose version is in a `format` field.
macro_rules! versioned {
    ($($document:ty),*) => {
        $(impl Versioned for $document {
            fn format(&self) -> u32 {
                self.format
            }
        })*
    };
}
use versioned;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newer_format_is_refused() {
        let newer = format!(
            r#"{{"v": {}, "_id": "1", "url": "https://example.com", "on": true, "statements": [], "tags": []}}"#,
            FORMAT_VERSION + 1
        );
        let err = read::<webhook::StoredWebhook>(&newer, "webhook").unwrap_err();
        assert!(err.to_string().contains("newer"), "{err}");
    }
}
