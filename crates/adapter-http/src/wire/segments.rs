//! Segments as the API shows them: `Segment` with its `_links`, the page of segments, and a
//! segment with the flags that use it.

use crate::wire::link::{Link, Links};
use domain::segment::{SegmentRule, SegmentTarget};
use serde::Serialize;

use super::flags::flag_site;
use super::hrefs::{flag_href, segment_href, segments_href};

/// A segment of one environment.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Segment {
    /// Unique within the project and environment; never changes.
    pub key: String,
    /// Display name.
    pub name: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub description: Option<String>,
    /// Sorted, unique tags.
    #[schema(max_items = 100)]
    pub tags: Vec<String>,
    /// Creation time (epoch ms).
    pub creation_date: i64,
    /// Last change (epoch ms).
    pub last_modified_date: i64,
    /// Grows by one with every change.
    pub version: i64,
    /// Always false for a stored segment.
    pub deleted: bool,
    /// Big segments' recreation count (always 0 here).
    pub generation: i64,
    /// Mixed into the hash that weighted rules bucket contexts by; made at creation, never
    /// changed.
    pub salt: String,
    /// User keys in the segment.
    pub included: Vec<String>,
    /// User keys kept out of the segment.
    pub excluded: Vec<String>,
    /// Keys of other context kinds in the segment.
    pub included_contexts: Vec<SegmentTarget>,
    /// Keys of other context kinds kept out.
    pub excluded_contexts: Vec<SegmentTarget>,
    /// Rules, in order.
    pub rules: Vec<SegmentRule>,
    /// `self`, `parent`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}

impl Segment {
    /// Segment `segment` of environment `environment_key` of project `project_key`.
    pub fn of(project_key: &str, environment_key: &str, segment: domain::segment::Segment) -> Self {
        Self {
            links: Links::from([
                (
                    "parent".to_owned(),
                    Link::api(segments_href(project_key, environment_key)),
                ),
                (
                    "self".to_owned(),
                    Link::api(segment_href(project_key, environment_key, &segment.key)),
                ),
            ]),
            key: segment.key.into_string(),
            name: segment.name,
            description: segment.description,
            tags: segment.tags,
            creation_date: segment.creation_date,
            last_modified_date: segment.last_modified_date,
            version: segment.version,
            deleted: segment.deleted,
            generation: segment.generation,
            salt: segment.salt,
            included: segment.included,
            excluded: segment.excluded,
            included_contexts: segment.included_contexts,
            excluded_contexts: segment.excluded_contexts,
            rules: segment.rules,
        }
    }
}

/// A page of segments.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Segments {
    /// The segments.
    pub items: Vec<Segment>,
    /// All matches.
    #[serde(rename = "totalCount")]
    pub total_count: u64,
    /// Paging links.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}

crate::wire::page::collection_of!(Segments, Segment);

/// A flag whose rules use a segment.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SegmentFlag {
    /// Flag key.
    pub key: String,
    /// Flag name.
    pub name: String,
    /// `self`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
    /// The flag's UI page in this environment.
    #[serde(rename = "_site")]
    pub site: Link,
}

/// A segment with the flags that use it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SegmentDetail {
    /// The segment.
    #[serde(flatten)]
    pub segment: Segment,
    /// Flags whose rules in this environment use the segment.
    #[serde(rename = "_flags")]
    pub flags: Vec<SegmentFlag>,
}

impl SegmentDetail {
    /// `found` in environment `environment_key` of project `project_key`.
    pub fn of(project_key: &str, environment_key: &str, found: service::SegmentWithFlags) -> Self {
        let flags = found
            .flags
            .into_iter()
            .map(|(key, name)| SegmentFlag {
                links: Links::from([("self".to_owned(), Link::api(flag_href(project_key, &key)))]),
                site: flag_site(project_key, environment_key, &key),
                key,
                name,
            })
            .collect();
        Self {
            segment: Segment::of(project_key, environment_key, found.segment),
            flags,
        }
    }
}
