//! Segments (`segments.doc`). The API's `_links` are not part of a segment; rows of earlier
//! releases that carry them are still read.

use domain::key::SegmentKey;
use domain::segment::{Segment, SegmentRule, SegmentTarget};
use ports::StoreResult;
use serde::{Deserialize, Serialize};

use super::{read, versioned, write, Versioned, FORMAT_VERSION};

/// A segment as `segments.doc` holds it. Targets of other context kinds and rules are
/// written with the domain's serde.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredSegment {
    /// Format version (absent, so 0, in rows of earlier releases).
    #[serde(rename = "v", default)]
    pub format: u32,
    /// The segment's key.
    #[serde(rename = "key")]
    pub key: String,
    /// Display name.
    #[serde(rename = "name")]
    pub name: String,
    /// Free text.
    #[serde(
        rename = "description",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<String>,
    /// Tags.
    #[serde(rename = "tags")]
    pub tags: Vec<String>,
    /// Creation time (epoch ms).
    #[serde(rename = "creationDate")]
    pub creation_date: i64,
    /// Last change (epoch ms).
    #[serde(rename = "lastModifiedDate")]
    pub last_modified_date: i64,
    /// The segment's version.
    #[serde(rename = "version")]
    pub version: i64,
    /// Deleted (never, for a stored segment).
    #[serde(rename = "deleted")]
    pub deleted: bool,
    /// Big segments' generation.
    #[serde(rename = "generation")]
    pub generation: i64,
    /// The bucketing salt (absent in rows of releases before segments had one: derived).
    #[serde(rename = "salt", default, skip_serializing_if = "String::is_empty")]
    pub salt: String,
    /// Included user keys.
    #[serde(rename = "included")]
    pub included: Vec<String>,
    /// Excluded user keys.
    #[serde(rename = "excluded")]
    pub excluded: Vec<String>,
    /// Included keys of other context kinds.
    #[serde(rename = "includedContexts")]
    pub included_contexts: Vec<SegmentTarget>,
    /// Excluded keys of other context kinds.
    #[serde(rename = "excludedContexts")]
    pub excluded_contexts: Vec<SegmentTarget>,
    /// Rules.
    #[serde(rename = "rules")]
    pub rules: Vec<SegmentRule>,
}
versioned!(StoredSegment);

impl From<&Segment> for StoredSegment {
    fn from(segment: &Segment) -> Self {
        Self {
            format: FORMAT_VERSION,
            key: segment.key.to_string(),
            name: segment.name.clone(),
            description: segment.description.clone(),
            tags: segment.tags.clone(),
            creation_date: segment.creation_date,
            last_modified_date: segment.last_modified_date,
            version: segment.version,
            deleted: segment.deleted,
            generation: segment.generation,
            salt: segment.salt.clone(),
            included: segment.included.clone(),
            excluded: segment.excluded.clone(),
            included_contexts: segment.included_contexts.clone(),
            excluded_contexts: segment.excluded_contexts.clone(),
            rules: segment.rules.clone(),
        }
    }
}

impl From<StoredSegment> for Segment {
    fn from(stored: StoredSegment) -> Self {
        let salt = if stored.salt.is_empty() {
            domain::segment::derived_salt(&stored.key, stored.creation_date)
        } else {
            stored.salt
        };
        Segment {
            salt,
            key: SegmentKey::from_stored(stored.key),
            name: stored.name,
            description: stored.description,
            tags: stored.tags,
            creation_date: stored.creation_date,
            last_modified_date: stored.last_modified_date,
            version: stored.version,
            deleted: stored.deleted,
            generation: stored.generation,
            included: stored.included,
            excluded: stored.excluded,
            included_contexts: stored.included_contexts,
            excluded_contexts: stored.excluded_contexts,
            rules: stored.rules,
        }
    }
}

/// The JSON of `segment`.
pub fn doc_json(segment: &Segment) -> StoreResult<String> {
    write(&StoredSegment::from(segment))
}

/// A segment from its JSON.
pub fn read_doc(text: &str) -> StoreResult<Segment> {
    read::<StoredSegment>(text, "segment").map(Segment::from)
}

#[cfg(test)]
mod tests {
    use domain::flag::{Clause, Operator};
    use serde_json::json;

    use super::*;

    fn full_segment() -> Segment {
        Segment {
            key: SegmentKey::parse("vip").unwrap(),
            name: "VIP".into(),
            description: Some("d".into()),
            tags: vec!["t".into()],
            creation_date: 1,
            last_modified_date: 2,
            version: 3,
            deleted: false,
            generation: 0,
            // What a row without a salt reads as (see the test of earlier releases).
            salt: domain::segment::derived_salt("vip", 1),
            included: vec!["alice".into()],
            excluded: vec!["mallory".into()],
            included_contexts: vec![SegmentTarget {
                values: vec!["acme".into()],
                context_kind: "org".into(),
            }],
            excluded_contexts: vec![SegmentTarget {
                values: vec!["evil".into()],
                context_kind: "org".into(),
            }],
            rules: vec![SegmentRule {
                id: "r1".into(),
                clauses: vec![Clause {
                    id: "c1".into(),
                    attribute: "email".into(),
                    op: Operator::EndsWith,
                    values: vec![json!("@example.com")],
                    negate: false,
                    context_kind: "user".into(),
                }],
                weight: Some(50000),
                bucket_by: Some("key".into()),
                rollout_context_kind: Some("user".into()),
                description: Some("half".into()),
            }],
        }
    }

    /// The stored format of [`full_segment`]: a change here is a change of the stored format.
    const DOC: &str = r#"{"v":1,"key":"vip","name":"VIP","description":"d","tags":["t"],"creationDate":1,"lastModifiedDate":2,"version":3,"deleted":false,"generation":0,"salt":"e968d7658d6fd44d1c6e343cde15345f","included":["alice"],"excluded":["mallory"],"includedContexts":[{"values":["acme"],"contextKind":"org"}],"excludedContexts":[{"values":["evil"],"contextKind":"org"}],"rules":[{"_id":"r1","clauses":[{"_id":"c1","attribute":"email","op":"endsWith","values":["@example.com"],"negate":false,"contextKind":"user"}],"weight":50000,"bucketBy":"key","rolloutContextKind":"user","description":"half"}]}"#;

    #[test]
    fn the_stored_json_of_a_full_segment_is_pinned() {
        assert_eq!(doc_json(&full_segment()).unwrap(), DOC);
        assert_eq!(read_doc(DOC).unwrap(), full_segment());
    }

    #[test]
    fn the_format_of_earlier_releases_reads() {
        // Written by the release before the stored types: the API's JSON, links included.
        let old = r#"{"key":"vip","name":"VIP","description":"d","tags":["t"],"creationDate":1,"lastModifiedDate":2,"version":3,"deleted":false,"generation":0,"included":["alice"],"excluded":["mallory"],"includedContexts":[{"values":["acme"],"contextKind":"org"}],"excludedContexts":[{"values":["evil"],"contextKind":"org"}],"rules":[{"_id":"r1","clauses":[{"_id":"c1","attribute":"email","op":"endsWith","values":["@example.com"],"negate":false,"contextKind":"user"}],"weight":50000,"bucketBy":"key","rolloutContextKind":"user","description":"half"}],"_links":{"parent":{"href":"/api/v2/segments/p/production","type":"application/json"},"self":{"href":"/api/v2/segments/p/production/vip","type":"application/json"}}}"#;
        assert_eq!(read_doc(old).unwrap(), full_segment());
    }
}
