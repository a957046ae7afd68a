//! The per-environment configuration of a flag and its parts.

use serde::{Deserialize, Serialize};

use crate::targeting::{user_kind, Clause};
use crate::IdSource;

/// A flag's configuration in one environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlagConfig {
    /// Targeting on or off.
    pub on: bool,
    /// Archived in this environment.
    pub archived: bool,
    /// Bucketing salt.
    pub salt: String,
    /// Opaque hex.
    pub sel: String,
    /// Last change of this configuration (epoch ms).
    pub last_modified: i64,
    /// Grows by one with every change of this configuration.
    pub version: i64,
    /// Individual targets of context kind `user` (with `contextTargets`: at most 15,000 values).
    #[serde(default)]
    pub targets: Vec<Target>,
    /// Individual targets of other context kinds.
    #[serde(default)]
    pub context_targets: Vec<Target>,
    /// Rules, evaluated in order.
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// The default rule: served when targeting is on and nothing else matched.
    pub fallthrough: VariationOrRollout,
    /// Index served when targeting is off; without it SDKs serve their fallback value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_variation: Option<usize>,
    /// Flags that must serve a given variation before this one is evaluated (at most 100).
    #[serde(default)]
    pub prerequisites: Vec<Prerequisite>,
    /// Send full events for every evaluation.
    #[serde(default)]
    pub track_events: bool,
    /// Send full events for fallthrough evaluations.
    #[serde(default)]
    pub track_events_fallthrough: bool,
    /// The environment's display name.
    #[serde(rename = "_environmentName", default)]
    pub environment_name: String,
}

/// How one configuration uses its flag's variations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigSummary {
    /// Per variation index (as a string key).
    pub variations: std::collections::BTreeMap<String, VariationSummary>,
    /// Number of prerequisites.
    pub prerequisites: usize,
}

/// How one configuration uses one variation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VariationSummary {
    /// Rules serving it.
    pub rules: usize,
    /// Rules without clauses serving it.
    pub null_rules: usize,
    /// User keys targeted with it.
    pub targets: usize,
    /// Keys of other context kinds targeted with it.
    pub context_targets: usize,
    /// Whether the default rule serves it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_fallthrough: bool,
    /// Whether it is served when targeting is off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_off: bool,
    /// Its weight in the default rule's rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub rollout: Option<i64>,
    /// The default rule rollout's bucketing attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub bucket_by: Option<String>,
}

impl FlagConfig {
    /// How this configuration uses each of its flag's `variations` variations (the API shows it
    /// as `_summary`).
    ///
    /// ```
    /// # use domain::flag::{Defaults, FlagConfig};
    /// let mut ids = domain::SequentialIds::default();
    /// let config = FlagConfig::new(Defaults { on_variation: 0, off_variation: 1 }, "Test", 1, &mut ids);
    /// let summary = config.summary(2);
    /// assert!(summary.variations["0"].is_fallthrough);
    /// assert!(summary.variations["1"].is_off);
    /// ```
    pub fn summary(&self, variations: usize) -> ConfigSummary {
        let mut summary = ConfigSummary {
            variations: Default::default(),
            prerequisites: self.prerequisites.len(),
        };
        for index in 0..variations {
            let serves = |variation: Option<usize>| variation == Some(index);
            let rollout = self.fallthrough.rollout.as_ref();
            let entry = VariationSummary {
                rules: self.rules.iter().filter(|r| serves(r.variation)).count(),
                null_rules: self
                    .rules
                    .iter()
                    .filter(|r| serves(r.variation) && r.clauses.is_empty())
                    .count(),
                targets: self
                    .targets
                    .iter()
                    .filter(|t| t.variation == index)
                    .map(|t| t.values.len())
                    .sum(),
                context_targets: self
                    .context_targets
                    .iter()
                    .filter(|t| t.variation == index)
                    .map(|t| t.values.len())
                    .sum(),
                is_fallthrough: serves(self.fallthrough.variation),
                is_off: serves(self.off_variation),
                rollout: rollout.and_then(|r| {
                    r.variations
                        .iter()
                        .find(|w| w.variation == index)
                        .map(|w| w.weight)
                }),
                bucket_by: rollout.and_then(|r| r.bucket_by.clone()),
            };
            summary.variations.insert(index.to_string(), entry);
        }
        summary
    }
}

impl FlagConfig {
    /// A configuration with targeting off that serves `defaults`.
    pub fn new(
        defaults: Defaults,
        environment_name: &str,
        now: i64,
        ids: &mut dyn IdSource,
    ) -> Self {
        Self {
            on: false,
            archived: false,
            salt: ids.hex(32),
            sel: ids.hex(32),
            last_modified: now,
            version: 1,
            targets: Vec::new(),
            context_targets: Vec::new(),
            rules: Vec::new(),
            fallthrough: VariationOrRollout {
                variation: Some(defaults.on_variation),
                rollout: None,
            },
            off_variation: Some(defaults.off_variation),
            prerequisites: Vec::new(),
            track_events: false,
            track_events_fallthrough: false,
            environment_name: environment_name.to_owned(),
        }
    }

    /// This configuration as the first configuration of another environment (a clone of an
    /// environment): the same targeting (on/off, targets, rules with their `_id`s, fallthrough,
    /// off variation, prerequisites, event tracking, archived), with version 1, `lastModified`
    /// `now` and a salt and `sel` of its own, like every new configuration.
    ///
    /// ```
    /// # use domain::flag::{Defaults, FlagConfig};
    /// let mut ids = domain::SequentialIds::default();
    /// let defaults = Defaults { on_variation: 0, off_variation: 1 };
    /// let mut source = FlagConfig::new(defaults, "Production", 1, &mut ids);
    /// source.on = true;
    /// source.version = 7;
    /// let copy = source.clone_for_environment("Staging", 9, &mut ids);
    /// assert!(copy.on);
    /// assert_eq!((copy.version, copy.last_modified), (1, 9));
    /// assert_eq!(copy.environment_name, "Staging");
    /// assert_ne!(copy.salt, source.salt);
    /// ```
    pub fn clone_for_environment(
        &self,
        environment_name: &str,
        now: i64,
        ids: &mut dyn IdSource,
    ) -> Self {
        Self {
            salt: ids.hex(32),
            sel: ids.hex(32),
            last_modified: now,
            version: 1,
            environment_name: environment_name.to_owned(),
            ..self.clone()
        }
    }
}

/// Individual targets: context keys served one variation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Target {
    /// Context keys.
    pub values: Vec<String>,
    /// Variation index.
    pub variation: usize,
    /// Context kind (default `user`).
    #[serde(default = "user_kind")]
    pub context_kind: String,
}

/// Either a fixed variation or a percentage rollout (exactly one is set).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct VariationOrRollout {
    /// Variation index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub variation: Option<usize>,
    /// Percentage rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub rollout: Option<Rollout>,
}

/// A percentage rollout over variations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rollout {
    /// Weights per variation, in thousandths of a percent, summing to 100000.
    pub variations: Vec<WeightedVariation>,
    /// The attribute used for bucketing (default `key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub bucket_by: Option<String>,
    /// Context kind bucketed by (default `user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub context_kind: Option<String>,
    /// Bucketing seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub seed: Option<i64>,
}

/// One variation's share of a rollout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct WeightedVariation {
    /// Variation index.
    pub variation: usize,
    /// 0..=100000.
    pub weight: i64,
    /// Excluded from experiment analysis.
    #[serde(
        rename = "_untracked",
        default,
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub untracked: bool,
}

/// A targeting rule: when all clauses match, serve a variation or rollout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    /// UUID, assigned by the server.
    #[serde(rename = "_id", default)]
    pub id: String,
    /// All must match.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub clauses: Vec<Clause>,
    /// Send full events for matches.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub track_events: bool,
    /// Variation index served (or `rollout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub variation: Option<usize>,
    /// Rollout served (or `variation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub rollout: Option<Rollout>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub description: Option<String>,
    /// A disabled rule is skipped.
    #[serde(default)]
    pub disabled: bool,
}

/// A flag that must serve `variation` before this flag is evaluated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Prerequisite {
    /// The prerequisite flag's key.
    pub key: String,
    /// Its variation index.
    pub variation: usize,
}

/// Variation indexes used for new environments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Defaults {
    /// Index served by the fallthrough of a new environment.
    pub on_variation: usize,
    /// Index served when targeting is off in a new environment.
    pub off_variation: usize,
}
