//! Creating flags.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    CustomProperty, Defaults, Experiments, Flag, FlagKind, Prerequisite, ProjectFlags, Variation,
};
use crate::key::FlagKey;
use crate::project::ClientSideAvailability;
use crate::{normalize_tags, FieldError, IdSource, ValidationError, MAX_PREREQUISITES};

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
    /// Turn targeting on in every environment at creation (default false: off everywhere).
    pub is_flag_on: Option<bool>,
    /// Prerequisites added in every environment at creation, at most 100: each names an
    /// existing, non-archived flag of the project and the `_id` of one of its variations.
    #[cfg_attr(feature = "openapi", schema(max_items = 100))]
    pub initial_prerequisites: Option<Vec<InitialPrerequisite>>,
    /// Not supported: migration and holdout flags do not exist here. A request that sets it
    /// (to anything but `null`) is a 400 naming the field.
    pub purpose: Option<Value>,
    /// Not supported: migration flags do not exist here. A request that sets it (to anything
    /// but `null`) is a 400 naming the field.
    pub migration_settings: Option<Value>,
    /// The maintaining team's key: an existing team (a 400 naming the field otherwise), not
    /// together with `maintainerId`.
    pub maintainer_team_key: Option<String>,
}

/// A prerequisite of a new flag (`initialPrerequisites` of a create request).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InitialPrerequisite {
    /// Key of the prerequisite flag (an existing, non-archived flag of the project).
    pub key: String,
    /// `_id` of the variation of that flag that must be served; stored as its index.
    pub variation_id: String,
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
    /// Checks the key, refuses the fields this service does not support (`purpose`,
    /// `migrationSettings`), refuses a maintaining member and team together, and checks the
    /// shape of
    /// `initialPrerequisites` (at most [`MAX_PREREQUISITES`], each flag once, not the flag
    /// itself); the remaining rules are checked on the created flag and, for prerequisites,
    /// against the project by [`Flag::add_initial_prerequisites`].
    ///
    /// ```
    /// use domain::flag::FlagPost;
    /// let post: FlagPost = serde_json::from_value(serde_json::json!(
    ///     {"key": "f", "name": "F", "maintainerTeamKey": "ops", "maintainerId": "5f0c0e0c0e0c0e0c0e0c0e0c"})).unwrap();
    /// let err = post.validate().unwrap_err();
    /// assert_eq!(err.errors[0].attribute, "maintainerTeamKey");
    /// ```
    ///
    /// # Errors
    /// [`ValidationError`] naming each refused field.
    pub fn validate(self) -> Result<NewFlag, ValidationError> {
        let mut errors = Vec::new();
        let key = FlagKey::parse(&self.key)
            .map_err(|e| errors.push(FieldError::new("key", e.reason)))
            .ok();
        if self.purpose.as_ref().is_some_and(|v| !v.is_null()) {
            errors.push(FieldError::new(
                "purpose",
                "migration and holdout flags are not supported; leave purpose out",
            ));
        }
        if self
            .migration_settings
            .as_ref()
            .is_some_and(|v| !v.is_null())
        {
            errors.push(FieldError::new(
                "migrationSettings",
                "migration flags are not supported; leave migrationSettings out",
            ));
        }
        super::validate::validate_maintainer(
            self.maintainer_id.as_deref(),
            self.maintainer_team_key.as_deref(),
            &mut errors,
        );
        let initial = self.initial_prerequisites.as_deref().unwrap_or_default();
        if initial.len() > MAX_PREREQUISITES {
            errors.push(FieldError::new(
                "initialPrerequisites",
                format!(
                    "an environment has at most {MAX_PREREQUISITES} prerequisites, not {}",
                    initial.len()
                ),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, prerequisite) in initial.iter().enumerate() {
            if prerequisite.key == self.key {
                errors.push(FieldError::new(
                    format!("initialPrerequisites[{i}].key"),
                    "a flag cannot be its own prerequisite",
                ));
            } else if !seen.insert(prerequisite.key.as_str()) {
                errors.push(FieldError::new(
                    format!("initialPrerequisites[{i}].key"),
                    format!("flag '{}' is named more than once", prerequisite.key),
                ));
            }
        }
        ValidationError::check(errors)?;
        let key = key.ok_or_else(|| ValidationError::single("key", "invalid"))?;
        Ok(NewFlag { key, post: self })
    }
}

impl Flag {
    /// Adds `initial` (the `initialPrerequisites` of a create request) to every environment of
    /// this new flag, each variation `_id` stored as its index in the prerequisite flag.
    ///
    /// ```
    /// use domain::flag::{Flag, FlagFacts, InitialPrerequisite, NewFlag, ProjectFlags};
    /// use domain::key::FlagKey;
    /// let mut ids = domain::SequentialIds::default();
    /// let mut flag = Flag::create(NewFlag::boolean(FlagKey::parse("b").unwrap(), "B"), 1, &mut ids).unwrap();
    /// let config = flag.new_config("Test", 1, &mut ids);
    /// flag.environments.insert("test".into(), config);
    /// let project = ProjectFlags::new([FlagFacts {
    ///     key: "a".into(), variation_ids: vec!["x".into(), "y".into()], archived: false, prerequisites: vec![],
    /// }]);
    /// let wanted = [InitialPrerequisite { key: "a".into(), variation_id: "y".into() }];
    /// flag.add_initial_prerequisites(&wanted, &project).unwrap();
    /// assert_eq!(flag.environments["test"].prerequisites[0].variation, 1);
    /// let unknown = [InitialPrerequisite { key: "a".into(), variation_id: "z".into() }];
    /// let err = flag.add_initial_prerequisites(&unknown, &project).unwrap_err();
    /// assert_eq!(err.errors[0].attribute, "initialPrerequisites[0].variationId");
    /// ```
    ///
    /// # Errors
    /// [`ValidationError`] naming `initialPrerequisites[i].key` for a flag that does not exist
    /// or is archived, `initialPrerequisites[i].variationId` for an `_id` that is not one of its
    /// variations'; nothing is added then.
    pub fn add_initial_prerequisites(
        &mut self,
        initial: &[InitialPrerequisite],
        project: &ProjectFlags,
    ) -> Result<(), ValidationError> {
        let mut errors = Vec::new();
        let mut prerequisites = Vec::with_capacity(initial.len());
        for (i, wanted) in initial.iter().enumerate() {
            let Some(facts) = project.get(&wanted.key) else {
                errors.push(FieldError::new(
                    format!("initialPrerequisites[{i}].key"),
                    format!("no flag '{}' in this project", wanted.key),
                ));
                continue;
            };
            if facts.archived {
                errors.push(FieldError::new(
                    format!("initialPrerequisites[{i}].key"),
                    format!(
                        "flag '{}' is archived and cannot be a prerequisite",
                        wanted.key
                    ),
                ));
            }
            match facts
                .variation_ids
                .iter()
                .position(|id| *id == wanted.variation_id)
            {
                Some(variation) => prerequisites.push(Prerequisite {
                    key: wanted.key.clone(),
                    variation,
                }),
                None => errors.push(FieldError::new(
                    format!("initialPrerequisites[{i}].variationId"),
                    format!(
                        "'{}' is not the _id of a variation of flag '{}'",
                        wanted.variation_id, wanted.key
                    ),
                )),
            }
        }
        ValidationError::check(errors)?;
        for config in self.environments.values_mut() {
            config.prerequisites.clone_from(&prerequisites);
        }
        Ok(())
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
            key: new.key,
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
            maintainer_team_key: post.maintainer_team_key,
            environments: BTreeMap::new(),
        };
        flag.validate()?;
        Ok(flag)
    }
}
