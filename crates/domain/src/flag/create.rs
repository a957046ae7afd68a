//! Creating flags.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CustomProperty, Defaults, Experiments, Flag, FlagKind, Variation};
use crate::key::FlagKey;
use crate::link::Links;
use crate::project::ClientSideAvailability;
use crate::{normalize_tags, IdSource, ValidationError};

/// A variation in a create request.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct VariationPost {
    /// The value: boolean, string, number or JSON; JSON nests at most 32 levels of arrays and
    /// objects.
    pub value: Value,
    /// Display name.
    pub name: Option<String>,
    /// Free text.
    pub description: Option<String>,
}

/// `POST /flags/{projectKey}` body.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlagPost {
    /// Flag key, unique in the project.
    pub key: String,
    /// Display name.
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 256, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$")
    )]
    pub name: String,
    /// Free text (default empty).
    pub description: Option<String>,
    /// Variations (default: boolean `[true, false]`); at most 1000.
    #[cfg_attr(feature = "openapi", schema(max_items = 1000))]
    pub variations: Option<Vec<VariationPost>>,
    /// Default true.
    pub temporary: Option<bool>,
    /// Tags.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_items = 100))]
    pub tags: Vec<String>,
    /// Variation indexes for new environments (default on=0, off=1 for two variations; else on=0, off=last).
    pub defaults: Option<Defaults>,
    /// Client-side availability (default: mobile yes, browser no).
    pub client_side_availability: Option<ClientSideAvailability>,
    /// Deprecated mirror of `clientSideAvailability.usingEnvironmentId`.
    pub include_in_snippet: Option<bool>,
    /// Custom properties.
    pub custom_properties: Option<BTreeMap<String, CustomProperty>>,
    /// The maintaining member's `_id`.
    pub maintainer_id: Option<String>,
}

/// A flag request whose key is valid; the rest is checked by [`Flag::create`].
#[derive(Debug, Clone, PartialEq)]
pub struct NewFlag {
    /// The key.
    pub key: FlagKey,
    /// The rest of the request.
    pub post: FlagPost,
}

impl NewFlag {
    /// A boolean flag with default settings.
    pub fn boolean(key: FlagKey, name: &str) -> Self {
        let post = FlagPost {
            key: key.as_str().to_owned(),
            name: name.to_owned(),
            ..Default::default()
        };
        Self { key, post }
    }
}

impl NewFlag {
    /// A flag serving `values` (multivariate unless they are `true` and `false`), with default
    /// settings.
    ///
    /// ```
    /// use domain::flag::{Flag, FlagKind, NewFlag};
    /// use domain::key::FlagKey;
    /// let new = NewFlag::with_values(FlagKey::parse("size").unwrap(), "Size", ["s", "m", "l"].map(serde_json::Value::from));
    /// let flag = Flag::create(new, 1, &mut domain::SequentialIds::default()).unwrap();
    /// assert_eq!(flag.kind, FlagKind::Multivariate);
    /// assert_eq!(flag.defaults.off_variation, 2);
    /// ```
    pub fn with_values(key: FlagKey, name: &str, values: impl IntoIterator<Item = Value>) -> Self {
        let variations = values
            .into_iter()
            .map(|value| VariationPost {
                value,
                name: None,
                description: None,
            })
            .collect();
        let mut new = Self::boolean(key, name);
        new.post.variations = Some(variations);
        new
    }
}

impl FlagPost {
    /// Checks the key; the remaining rules are checked on the created flag.
    ///
    /// # Errors
    /// [`ValidationError`] on `key`.
    pub fn validate(self) -> Result<NewFlag, ValidationError> {
        let key =
            FlagKey::parse(&self.key).map_err(|e| ValidationError::single("key", e.reason))?;
        Ok(NewFlag { key, post: self })
    }
}

impl Flag {
    /// Builds a new flag (without environments) and checks every rule.
    ///
    /// ```
    /// use domain::flag::{Flag, FlagKind, FlagPost, VariationPost};
    /// use serde_json::json;
    /// let post = FlagPost {
    ///     key: "color".into(),
    ///     name: "Color".into(),
    ///     variations: Some(vec![
    ///         VariationPost { value: json!("red"), name: None, description: None },
    ///         VariationPost { value: json!("blue"), name: None, description: None },
    ///     ]),
    ///     ..Default::default()
    /// };
    /// let mut ids = domain::SequentialIds::default();
    /// let flag = Flag::create(post.validate().unwrap(), 1, &mut ids).unwrap();
    /// assert_eq!(flag.kind, FlagKind::Multivariate);
    /// ```
    ///
    /// # Errors
    /// [`ValidationError`] for an empty name, bad tags, duplicate or mixed-type variation values,
    /// or defaults out of range.
    pub fn create(new: NewFlag, now: i64, ids: &mut dyn IdSource) -> Result<Flag, ValidationError> {
        let post = new.post;
        let variations: Vec<Variation> = match post.variations {
            Some(variations) => variations
                .into_iter()
                .map(|v| Variation {
                    id: ids.uuid(),
                    value: v.value,
                    name: v.name,
                    description: v.description,
                })
                .collect(),
            None => [true, false]
                .into_iter()
                .map(|b| Variation {
                    id: ids.uuid(),
                    value: Value::Bool(b),
                    name: None,
                    description: None,
                })
                .collect(),
        };
        let kind = if variations.iter().all(|v| v.value.is_boolean()) {
            FlagKind::Boolean
        } else {
            FlagKind::Multivariate
        };
        let defaults = post.defaults.unwrap_or(Defaults {
            on_variation: 0,
            off_variation: variations.len().saturating_sub(1),
        });
        let availability = post
            .client_side_availability
            .unwrap_or(ClientSideAvailability {
                using_mobile_key: true,
                using_environment_id: false,
            });
        let availability = match (post.client_side_availability, post.include_in_snippet) {
            (None, Some(snippet)) => ClientSideAvailability {
                using_environment_id: snippet,
                ..availability
            },
            _ => availability,
        };
        let mut tags = post.tags;
        let mut errors = Vec::new();
        crate::validate_tags("tags", &tags, &mut errors);
        ValidationError::check(errors)?;
        normalize_tags(&mut tags);
        let flag = Flag {
            key: new.key.into_string(),
            name: post.name,
            description: post.description.unwrap_or_default(),
            kind,
            version: 1,
            creation_date: now,
            variations,
            temporary: post.temporary.unwrap_or(true),
            tags,
            archived: false,
            archived_date: None,
            deprecated: false,
            deprecated_date: None,
            custom_properties: post.custom_properties.unwrap_or_default(),
            experiments: Experiments::default(),
            client_side_availability: availability,
            include_in_snippet: availability.using_environment_id,
            defaults,
            maintainer_id: post.maintainer_id,
            maintainer: None,
            links: Links::new(),
            environments: BTreeMap::new(),
        };
        flag.validate()?;
        Ok(flag)
    }
}
