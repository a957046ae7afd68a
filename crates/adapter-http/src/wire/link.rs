//! Hypermedia links (`_links`, `_site`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The media type of links to API resources.
pub const JSON: &str = "application/json";
/// The media type of links to UI pages.
pub const HTML: &str = "text/html";

/// A link: a path (no host) and the media type found there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(description = "A link: a path (no host) and the media type found there.")]
pub struct Link {
    /// The path of the linked resource.
    pub href: String,
    /// Its media type.
    #[serde(rename = "type")]
    pub kind: String,
}

impl Link {
    /// A link to an API resource.
    pub fn api(href: impl Into<String>) -> Self {
        Self {
            href: href.into(),
            kind: JSON.to_owned(),
        }
    }

    /// A link to a UI page.
    pub fn site(href: impl Into<String>) -> Self {
        Self {
            href: href.into(),
            kind: HTML.to_owned(),
        }
    }
}

/// A map of link names to links.
pub type Links = BTreeMap<String, Link>;

/// The OpenAPI schema of [`Links`] (a named map, so documents say `Links` rather than `BTreeMap`).
#[derive(Debug, utoipa::ToSchema)]
#[schema(as = Links, description = "Links by name (`self`, `parent`, ...).")]
pub struct LinksSchema(#[allow(dead_code)] std::collections::BTreeMap<String, Link>);
