//! A flag's settings (`flags.settings`) and its configuration in each environment
//! (`flag_configs.config`).
//!
//! Not stored: the flag's `environments` (rows of their own) and a configuration's
//! `_environmentName` (the environment's name, joined in). The API's presentation (`_links`,
//! `_maintainer`, `_site`, `_summary`) is not part of the flag at all; rows of earlier releases
//! that carry it are still read.

use std::collections::BTreeMap;

use domain::flag::{
    CustomProperty, Defaults, Experiments, Flag, FlagConfig, FlagKind, Prerequisite, Rule,
    StatusFacts, Target, Variation, VariationOrRollout,
};
use domain::key::FlagKey;
use domain::project::ClientSideAvailability;
use ports::StoreResult;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{read, versioned, write, Versioned, FORMAT_VERSION};

/// The flag-wide settings of a flag, as `flags.settings` holds them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredFlag {
    /// Format version (absent, so 0, in rows of earlier releases).
    #[serde(rename = "v", default)]
    pub format: u32,
    /// The flag's key.
    #[serde(rename = "key")]
    pub key: String,
    /// Display name.
    #[serde(rename = "name")]
    pub name: String,
    /// Free text.
    #[serde(rename = "description", default)]
    pub description: String,
    /// Boolean or multivariate.
    #[serde(rename = "kind")]
    pub kind: StoredFlagKind,
    /// The flag's version.
    #[serde(rename = "_version")]
    pub version: i64,
    /// Creation time (epoch ms).
    #[serde(rename = "creationDate")]
    pub creation_date: i64,
    /// The values the flag serves.
    #[serde(rename = "variations")]
    pub variations: Vec<StoredVariation>,
    /// Temporary or permanent.
    #[serde(rename = "temporary")]
    pub temporary: bool,
    /// Tags.
    #[serde(rename = "tags")]
    pub tags: Vec<String>,
    /// Archived.
    #[serde(rename = "archived")]
    pub archived: bool,
    /// When it was archived (epoch ms).
    #[serde(
        rename = "archivedDate",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub archived_date: Option<i64>,
    /// Deprecated.
    #[serde(rename = "deprecated")]
    pub deprecated: bool,
    /// When it was deprecated (epoch ms).
    #[serde(
        rename = "deprecatedDate",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub deprecated_date: Option<i64>,
    /// Custom properties by key.
    #[serde(rename = "customProperties")]
    pub custom_properties: BTreeMap<String, StoredCustomProperty>,
    /// Experiments.
    #[serde(rename = "experiments")]
    pub experiments: StoredExperiments,
    /// Which client-side SDKs may see the flag.
    #[serde(rename = "clientSideAvailability")]
    pub client_side_availability: StoredClientSideAvailability,
    /// The deprecated mirror of `using_environment_id`.
    #[serde(rename = "includeInSnippet")]
    pub include_in_snippet: bool,
    /// Variations of new environments.
    #[serde(rename = "defaults")]
    pub defaults: StoredDefaults,
    /// The maintaining member's id.
    #[serde(
        rename = "maintainerId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub maintainer_id: Option<String>,
    /// The maintaining team's key.
    #[serde(
        rename = "maintainerTeamKey",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub maintainer_team_key: Option<String>,
}
versioned!(StoredFlag, StoredFlagConfig, ConfigFacts, VariationIds);

/// A flag's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StoredFlagKind {
    /// Two variations, `true` and `false`.
    #[serde(rename = "boolean")]
    Boolean,
    /// Two or more variations.
    #[serde(rename = "multivariate")]
    Multivariate,
}

/// One variation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredVariation {
    /// Its id.
    #[serde(rename = "_id", default)]
    pub id: String,
    /// The served value.
    #[serde(rename = "value")]
    pub value: Value,
    /// Display name.
    #[serde(rename = "name", default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Free text.
    #[serde(
        rename = "description",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub description: Option<String>,
}

/// A custom property.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredCustomProperty {
    /// Display name.
    #[serde(rename = "name")]
    pub name: String,
    /// Values.
    #[serde(rename = "value")]
    pub values: Vec<String>,
}

/// A flag's experiments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredExperiments {
    /// Index of the baseline.
    #[serde(rename = "baselineIdx")]
    pub baseline_idx: i64,
    /// Experiments.
    #[serde(rename = "items")]
    pub items: Vec<Value>,
}

/// Which client-side SDKs may see a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredClientSideAvailability {
    /// Mobile SDKs.
    #[serde(rename = "usingMobileKey")]
    pub using_mobile_key: bool,
    /// Browser SDKs.
    #[serde(rename = "usingEnvironmentId")]
    pub using_environment_id: bool,
}

/// The variations of a new environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredDefaults {
    /// Served by the fallthrough.
    #[serde(rename = "onVariation")]
    pub on_variation: usize,
    /// Served when targeting is off.
    #[serde(rename = "offVariation")]
    pub off_variation: usize,
}

/// A flag's configuration in one environment, as `flag_configs.config` holds it. Its parts
/// (targets, rules, fallthrough, prerequisites) are written with the domain's serde.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredFlagConfig {
    /// Format version (absent, so 0, in rows of earlier releases).
    #[serde(rename = "v", default)]
    pub format: u32,
    /// Targeting on.
    #[serde(rename = "on")]
    pub on: bool,
    /// Archived in this environment.
    #[serde(rename = "archived")]
    pub archived: bool,
    /// Bucketing salt.
    #[serde(rename = "salt")]
    pub salt: String,
    /// Opaque hex.
    #[serde(rename = "sel")]
    pub sel: String,
    /// Last change (epoch ms).
    #[serde(rename = "lastModified")]
    pub last_modified: i64,
    /// The configuration's version.
    #[serde(rename = "version")]
    pub version: i64,
    /// User targets.
    #[serde(rename = "targets", default)]
    pub targets: Vec<Target>,
    /// Targets of other context kinds.
    #[serde(rename = "contextTargets", default)]
    pub context_targets: Vec<Target>,
    /// Rules.
    #[serde(rename = "rules", default)]
    pub rules: Vec<Rule>,
    /// The default rule.
    #[serde(rename = "fallthrough")]
    pub fallthrough: VariationOrRollout,
    /// Served when targeting is off.
    #[serde(
        rename = "offVariation",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub off_variation: Option<usize>,
    /// Prerequisites.
    #[serde(rename = "prerequisites", default)]
    pub prerequisites: Vec<Prerequisite>,
    /// Full events for every evaluation.
    #[serde(rename = "trackEvents", default)]
    pub track_events: bool,
    /// Full events for fallthrough evaluations.
    #[serde(rename = "trackEventsFallthrough", default)]
    pub track_events_fallthrough: bool,
}

impl From<&Flag> for StoredFlag {
    fn from(flag: &Flag) -> Self {
        Self {
            format: FORMAT_VERSION,
            key: flag.key.to_string(),
            name: flag.name.clone(),
            description: flag.description.clone(),
            kind: match flag.kind {
                FlagKind::Boolean => StoredFlagKind::Boolean,
                FlagKind::Multivariate => StoredFlagKind::Multivariate,
            },
            version: flag.version,
            creation_date: flag.creation_date,
            variations: flag
                .variations
                .iter()
                .map(|v| StoredVariation {
                    id: v.id.clone(),
                    value: v.value.clone(),
                    name: v.name.clone(),
                    description: v.description.clone(),
                })
                .collect(),
            temporary: flag.temporary,
            tags: flag.tags.clone(),
            archived: flag.archived,
            archived_date: flag.archived_date,
            deprecated: flag.deprecated,
            deprecated_date: flag.deprecated_date,
            custom_properties: flag
                .custom_properties
                .iter()
                .map(|(key, p)| {
                    let property = StoredCustomProperty {
                        name: p.name.clone(),
                        values: p.value.clone(),
                    };
                    (key.clone(), property)
                })
                .collect(),
            experiments: StoredExperiments {
                baseline_idx: flag.experiments.baseline_idx,
                items: flag.experiments.items.clone(),
            },
            client_side_availability: StoredClientSideAvailability {
                using_mobile_key: flag.client_side_availability.using_mobile_key,
                using_environment_id: flag.client_side_availability.using_environment_id,
            },
            include_in_snippet: flag.include_in_snippet,
            defaults: StoredDefaults {
                on_variation: flag.defaults.on_variation,
                off_variation: flag.defaults.off_variation,
            },
            maintainer_id: flag.maintainer_id.clone(),
            maintainer_team_key: flag.maintainer_team_key.clone(),
        }
    }
}

/// The flag without configurations (rows of their own).
impl From<StoredFlag> for Flag {
    fn from(stored: StoredFlag) -> Self {
        Flag {
            key: FlagKey::from_stored(stored.key),
            name: stored.name,
            description: stored.description,
            kind: match stored.kind {
                StoredFlagKind::Boolean => FlagKind::Boolean,
                StoredFlagKind::Multivariate => FlagKind::Multivariate,
            },
            version: stored.version,
            creation_date: stored.creation_date,
            variations: stored
                .variations
                .into_iter()
                .map(|v| Variation {
                    id: v.id,
                    value: v.value,
                    name: v.name,
                    description: v.description,
                })
                .collect(),
            temporary: stored.temporary,
            tags: stored.tags,
            archived: stored.archived,
            archived_date: stored.archived_date,
            deprecated: stored.deprecated,
            deprecated_date: stored.deprecated_date,
            custom_properties: stored
                .custom_properties
                .into_iter()
                .map(|(key, p)| {
                    let property = CustomProperty {
                        name: p.name,
                        value: p.values,
                    };
                    (key, property)
                })
                .collect(),
            experiments: Experiments {
                baseline_idx: stored.experiments.baseline_idx,
                items: stored.experiments.items,
            },
            client_side_availability: ClientSideAvailability {
                using_mobile_key: stored.client_side_availability.using_mobile_key,
                using_environment_id: stored.client_side_availability.using_environment_id,
            },
            include_in_snippet: stored.include_in_snippet,
            defaults: Defaults {
                on_variation: stored.defaults.on_variation,
                off_variation: stored.defaults.off_variation,
            },
            maintainer_id: stored.maintainer_id,
            maintainer_team_key: stored.maintainer_team_key,
            environments: BTreeMap::new(),
        }
    }
}

impl From<&FlagConfig> for StoredFlagConfig {
    fn from(config: &FlagConfig) -> Self {
        Self {
            format: FORMAT_VERSION,
            on: config.on,
            archived: config.archived,
            salt: config.salt.clone(),
            sel: config.sel.clone(),
            last_modified: config.last_modified,
            version: config.version,
            targets: config.targets.clone(),
            context_targets: config.context_targets.clone(),
            rules: config.rules.clone(),
            fallthrough: config.fallthrough.clone(),
            off_variation: config.off_variation,
            prerequisites: config.prerequisites.clone(),
            track_events: config.track_events,
            track_events_fallthrough: config.track_events_fallthrough,
        }
    }
}

impl StoredFlagConfig {
    /// The configuration in the environment named `environment_name`.
    pub fn into_config(self, environment_name: String) -> FlagConfig {
        FlagConfig {
            on: self.on,
            archived: self.archived,
            salt: self.salt,
            sel: self.sel,
            last_modified: self.last_modified,
            version: self.version,
            targets: self.targets,
            context_targets: self.context_targets,
            rules: self.rules,
            fallthrough: self.fallthrough,
            off_variation: self.off_variation,
            prerequisites: self.prerequisites,
            track_events: self.track_events,
            track_events_fallthrough: self.track_events_fallthrough,
            environment_name,
        }
    }
}

/// The JSON of `flag`'s settings (without its configurations).
pub fn settings_json(flag: &Flag) -> StoreResult<String> {
    write(&StoredFlag::from(flag))
}

/// A flag from its settings, without configurations.
pub fn read_settings(text: &str) -> StoreResult<Flag> {
    read::<StoredFlag>(text, "flag").map(Flag::from)
}

/// The JSON of one configuration.
pub fn config_json(config: &FlagConfig) -> StoreResult<String> {
    write(&StoredFlagConfig::from(config))
}

/// A configuration from its JSON, in the environment named `environment_name`.
pub fn read_config(text: &str, environment_name: String) -> StoreResult<FlagConfig> {
    read::<StoredFlagConfig>(text, "flag configuration")
        .map(|stored| stored.into_config(environment_name))
}

/// The parts of a stored configuration a flag status needs; target values are counted, not
/// kept.
#[derive(Deserialize)]
struct ConfigFacts {
    #[serde(rename = "v", default)]
    format: u32,
    #[serde(rename = "on")]
    on: bool,
    #[serde(rename = "archived")]
    archived: bool,
    #[serde(rename = "version")]
    version: i64,
    #[serde(rename = "lastModified")]
    last_modified: i64,
    #[serde(rename = "targets", default)]
    targets: Vec<TargetValues>,
    #[serde(rename = "contextTargets", default)]
    context_targets: Vec<TargetValues>,
    #[serde(rename = "rules", default)]
    rules: Vec<serde::de::IgnoredAny>,
    #[serde(rename = "prerequisites", default)]
    prerequisites: Vec<serde::de::IgnoredAny>,
    #[serde(rename = "fallthrough")]
    fallthrough: VariationOrRollout,
}

/// The values of one target, only to be counted.
#[derive(Deserialize)]
struct TargetValues {
    #[serde(rename = "values")]
    values: Vec<serde::de::IgnoredAny>,
}

/// The status facts of a flag created at `creation_date` (archived flag-wide when `archived`)
/// from one stored configuration, without reading its rules and targets in full.
pub fn read_status_facts(
    config: &str,
    creation_date: i64,
    archived: bool,
) -> StoreResult<StatusFacts> {
    let facts: ConfigFacts = read(config, "flag configuration")?;
    Ok(StatusFacts {
        creation_date,
        archived: archived || facts.archived,
        on: facts.on,
        version: facts.version,
        last_modified: facts.last_modified,
        target_values: facts
            .targets
            .iter()
            .chain(&facts.context_targets)
            .map(|t| t.values.len())
            .sum(),
        rules: facts.rules.len(),
        prerequisites: facts.prerequisites.len(),
        fallthrough: facts.fallthrough,
    })
}

/// The variation ids of a flag's settings, without reading the rest.
#[derive(Deserialize)]
struct VariationIds {
    #[serde(rename = "v", default)]
    format: u32,
    #[serde(rename = "variations")]
    variations: Vec<VariationId>,
}

#[derive(Deserialize)]
struct VariationId {
    #[serde(rename = "_id")]
    id: String,
}

/// The ids of the variations in a flag's settings, in order.
pub fn read_variation_ids(settings: &str) -> StoreResult<Vec<String>> {
    let ids: VariationIds = read(settings, "flag")?;
    Ok(ids.variations.into_iter().map(|v| v.id).collect())
}

#[cfg(test)]
mod tests {
    use domain::flag::{Clause, Operator, Rollout, WeightedVariation};
    use serde_json::json;

    use super::*;

    /// A configuration with every part.
    fn full_config() -> FlagConfig {
        FlagConfig {
            on: true,
            archived: false,
            salt: "5a17".into(),
            sel: "5e1".into(),
            last_modified: 20,
            version: 3,
            targets: vec![Target {
                values: vec!["alice".into()],
                variation: 1,
                context_kind: "user".into(),
            }],
            context_targets: vec![Target {
                values: vec!["acme".into()],
                variation: 0,
                context_kind: "org".into(),
            }],
            rules: vec![Rule {
                id: "r1".into(),
                clauses: vec![Clause {
                    id: "c1".into(),
                    attribute: "country".into(),
                    op: Operator::In,
                    values: vec![json!("NL")],
                    negate: true,
                    context_kind: "user".into(),
                }],
                track_events: true,
                variation: None,
                rollout: Some(Rollout {
                    variations: vec![
                        WeightedVariation {
                            variation: 0,
                            weight: 40000,
                            untracked: true,
                        },
                        WeightedVariation {
                            variation: 1,
                            weight: 60000,
                            untracked: false,
                        },
                    ],
                    bucket_by: Some("email".into()),
                    context_kind: Some("user".into()),
                    seed: Some(7),
                }),
                description: Some("Dutch".into()),
                disabled: true,
            }],
            fallthrough: VariationOrRollout {
                variation: Some(1),
                rollout: None,
            },
            off_variation: Some(0),
            prerequisites: vec![Prerequisite {
                key: "beta".into(),
                variation: 1,
            }],
            track_events: true,
            track_events_fallthrough: true,
            environment_name: "Production".into(),
        }
    }

    /// A flag with every field set, and a configuration with every part.
    fn full_flag() -> Flag {
        let config = full_config();
        Flag {
            key: FlagKey::parse("f").unwrap(),
            name: "F".into(),
            description: "d".into(),
            kind: FlagKind::Multivariate,
            version: 4,
            creation_date: 10,
            variations: vec![
                Variation {
                    id: "v0".into(),
                    value: json!("a"),
                    name: Some("A".into()),
                    description: Some("first".into()),
                },
                Variation {
                    id: "v1".into(),
                    value: json!("b"),
                    name: None,
                    description: None,
                },
            ],
            temporary: true,
            tags: vec!["t".into()],
            archived: true,
            archived_date: Some(11),
            deprecated: true,
            deprecated_date: Some(12),
            custom_properties: BTreeMap::from([(
                "jira".into(),
                CustomProperty {
                    name: "Jira".into(),
                    value: vec!["J-1".into()],
                },
            )]),
            experiments: Experiments::default(),
            client_side_availability: ClientSideAvailability {
                using_mobile_key: true,
                using_environment_id: false,
            },
            include_in_snippet: false,
            defaults: Defaults {
                on_variation: 1,
                off_variation: 0,
            },
            maintainer_id: Some("m1".into()),
            maintainer_team_key: Some("ops".into()),
            environments: BTreeMap::from([("production".into(), config)]),
        }
    }

    /// The stored format of [`full_flag`]: a change here is a change of the stored format, which
    /// needs a new format version and a reader for the old one.
    const SETTINGS: &str = r#"{"v":1,"key":"f","name":"F","description":"d","kind":"multivariate","_version":4,"creationDate":10,"variations":[{"_id":"v0","value":"a","name":"A","description":"first"},{"_id":"v1","value":"b"}],"temporary":true,"tags":["t"],"archived":true,"archivedDate":11,"deprecated":true,"deprecatedDate":12,"customProperties":{"jira":{"name":"Jira","value":["J-1"]}},"experiments":{"baselineIdx":0,"items":[]},"clientSideAvailability":{"usingMobileKey":true,"usingEnvironmentId":false},"includeInSnippet":false,"defaults":{"onVariation":1,"offVariation":0},"maintainerId":"m1","maintainerTeamKey":"ops"}"#;
    const CONFIG: &str = r#"{"v":1,"on":true,"archived":false,"salt":"5a17","sel":"5e1","lastModified":20,"version":3,"targets":[{"values":["alice"],"variation":1,"contextKind":"user"}],"contextTargets":[{"values":["acme"],"variation":0,"contextKind":"org"}],"rules":[{"_id":"r1","clauses":[{"_id":"c1","attribute":"country","op":"in","values":["NL"],"negate":true,"contextKind":"user"}],"trackEvents":true,"rollout":{"variations":[{"variation":0,"weight":40000,"_untracked":true},{"variation":1,"weight":60000}],"bucketBy":"email","contextKind":"user","seed":7},"description":"Dutch","disabled":true}],"fallthrough":{"variation":1},"offVariation":0,"prerequisites":[{"key":"beta","variation":1}],"trackEvents":true,"trackEventsFallthrough":true}"#;

    #[test]
    fn the_stored_json_of_a_full_flag_is_pinned() {
        let flag = full_flag();
        assert_eq!(settings_json(&flag).unwrap(), SETTINGS);
        assert_eq!(
            config_json(&flag.environments["production"]).unwrap(),
            CONFIG
        );
    }

    #[test]
    fn a_flag_reads_back_as_it_was_written() {
        let flag = full_flag();
        let mut read = read_settings(&settings_json(&flag).unwrap()).unwrap();
        let config = read_config(CONFIG, "Production".into()).unwrap();
        read.environments.insert("production".into(), config);
        assert_eq!(read, flag);
    }

    #[test]
    fn the_format_of_earlier_releases_reads() {
        // Written by the release before the stored types: the API's JSON, links included.
        let settings = r#"{"_links":{"parent":{"href":"/api/v2/flags/p","type":"application/json"},"self":{"href":"/api/v2/flags/p/f","type":"application/json"}},"_version":4,"archived":true,"archivedDate":11,"clientSideAvailability":{"usingEnvironmentId":false,"usingMobileKey":true},"creationDate":10,"customProperties":{"jira":{"name":"Jira","value":["J-1"]}},"defaults":{"offVariation":0,"onVariation":1},"deprecated":true,"deprecatedDate":12,"description":"d","experiments":{"baselineIdx":0,"items":[]},"includeInSnippet":false,"key":"f","kind":"multivariate","maintainerId":"m1","name":"F","tags":["t"],"temporary":true,"variations":[{"_id":"v0","description":"first","name":"A","value":"a"},{"_id":"v1","value":"b"}]}"#;
        let config = r#"{"_environmentName":"Old name","_site":{"href":"/p/production/features/f","type":"text/html"},"_summary":{"prerequisites":1,"variations":{}},"archived":false,"contextTargets":[{"contextKind":"org","values":["acme"],"variation":0}],"fallthrough":{"variation":1},"lastModified":20,"offVariation":0,"on":true,"prerequisites":[{"key":"beta","variation":1}],"rules":[{"_id":"r1","clauses":[{"_id":"c1","attribute":"country","contextKind":"user","negate":true,"op":"in","values":["NL"]}],"description":"Dutch","disabled":true,"rollout":{"bucketBy":"email","contextKind":"user","seed":7,"variations":[{"_untracked":true,"variation":0,"weight":40000},{"variation":1,"weight":60000}]},"trackEvents":true}],"salt":"5a17","sel":"5e1","targets":[{"contextKind":"user","values":["alice"],"variation":1}],"trackEvents":true,"trackEventsFallthrough":true,"version":3}"#;
        let mut read = read_settings(settings).unwrap();
        read.environments.insert(
            "production".into(),
            read_config(config, "Production".into()).unwrap(),
        );
        // Teams came later: no release before the stored types wrote a maintaining team.
        let earlier = Flag {
            maintainer_team_key: None,
            ..full_flag()
        };
        assert_eq!(read, earlier);
        assert_eq!(read_variation_ids(settings).unwrap(), ["v0", "v1"]);
        let facts = read_status_facts(config, 10, false).unwrap();
        assert_eq!(
            (facts.target_values, facts.rules, facts.prerequisites),
            (2, 1, 1)
        );
    }
}
