//! Copying one environment's configuration onto another, and cloning a flag.

use serde::{Deserialize, Serialize};

use super::{Flag, NewFlag};
use crate::{IdSource, ValidationError};

/// A part of a configuration that a copy can carry over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum CopyAction {
    /// Targeting on/off.
    UpdateOn,
    /// Rules.
    UpdateRules,
    /// The default rule.
    UpdateFallthrough,
    /// The off variation.
    UpdateOffVariation,
    /// Prerequisites.
    UpdatePrerequisites,
    /// Individual targets (all context kinds).
    UpdateTargets,
    /// Migration settings: flags here have none (migration flags are not supported), so this
    /// copies nothing.
    UpdateFlagConfigMigrationSettings,
}

impl CopyAction {
    /// Every action.
    pub const ALL: [CopyAction; 7] = [
        CopyAction::UpdateOn,
        CopyAction::UpdateRules,
        CopyAction::UpdateFallthrough,
        CopyAction::UpdateOffVariation,
        CopyAction::UpdatePrerequisites,
        CopyAction::UpdateTargets,
        CopyAction::UpdateFlagConfigMigrationSettings,
    ];
}

/// One side of a copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CopyEnvironment {
    /// Environment key.
    pub key: String,
    /// When given, the copy happens only if the environment's configuration `version` is this.
    #[serde(default)]
    pub current_version: Option<i64>,
}

/// `POST /flags/{projectKey}/{flagKey}/copy` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlagCopyPost {
    /// Where to copy from.
    pub source: CopyEnvironment,
    /// Where to copy to.
    pub target: CopyEnvironment,
    /// A comment for the audit log.
    #[serde(default)]
    pub comment: Option<String>,
    /// Copy only these parts (not with `excludedActions`).
    #[serde(default)]
    pub included_actions: Option<Vec<CopyAction>>,
    /// Copy everything but these parts (not with `includedActions`).
    #[serde(default)]
    pub excluded_actions: Option<Vec<CopyAction>>,
}

/// Why a copy was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CopyError {
    /// The request is invalid.
    #[error("{0}")]
    Invalid(String),
    /// A `currentVersion` does not match.
    #[error("{0}")]
    VersionMismatch(String),
}

impl Flag {
    /// Copies the parts of `post.source`'s configuration chosen by its actions onto
    /// `post.target`'s.
    ///
    /// ```
    /// # use domain::flag::{Flag, NewFlag};
    /// # use domain::key::FlagKey;
    /// use domain::flag::{CopyEnvironment, FlagCopyPost};
    /// # let mut ids = domain::SequentialIds::default();
    /// # let mut flag = Flag::create(NewFlag::boolean(FlagKey::parse("f").unwrap(), "F"), 1, &mut ids).unwrap();
    /// # for env in ["test", "production"] { let c = flag.new_config(env, 1, &mut ids); flag.environments.insert(env.into(), c); }
    /// flag.environments.get_mut("test").unwrap().on = true;
    /// let post = FlagCopyPost {
    ///     source: CopyEnvironment { key: "test".into(), current_version: None },
    ///     target: CopyEnvironment { key: "production".into(), current_version: Some(1) },
    ///     comment: None, included_actions: None, excluded_actions: None,
    /// };
    /// let next = flag.copy_config(&post, 2).unwrap();
    /// assert!(next.environments["production"].on);
    /// ```
    ///
    /// # Errors
    /// [`CopyError::Invalid`] for an unknown or identical environment or both action lists, or
    /// when the copy would make the flag grow past [`crate::patch::MAX_DOCUMENT_BYTES`];
    /// [`CopyError::VersionMismatch`] when a `currentVersion` does not match.
    pub fn copy_config(&self, post: &FlagCopyPost, now: i64) -> Result<Flag, CopyError> {
        let actions: Vec<CopyAction> = match (&post.included_actions, &post.excluded_actions) {
            (Some(_), Some(_)) => {
                return Err(CopyError::Invalid(
                    "send includedActions or excludedActions, not both".into(),
                ))
            }
            (Some(included), None) => included.clone(),
            (None, Some(excluded)) => CopyAction::ALL
                .into_iter()
                .filter(|a| !excluded.contains(a))
                .collect(),
            (None, None) => CopyAction::ALL.to_vec(),
        };
        if post.source.key == post.target.key {
            return Err(CopyError::Invalid(
                "source and target must be different environments".into(),
            ));
        }
        let config = |side: &CopyEnvironment| {
            let config = self.environments.get(&side.key).ok_or_else(|| {
                CopyError::Invalid(format!(
                    "environment '{}' does not exist in this project",
                    side.key
                ))
            })?;
            match side.current_version {
                Some(expected) if expected != config.version => {
                    Err(CopyError::VersionMismatch(format!(
                        "environment '{}' is at version {}, not {expected}",
                        side.key, config.version
                    )))
                }
                _ => Ok(config),
            }
        };
        let source = config(&post.source)?.clone();
        config(&post.target)?;
        let mut next = self.clone();
        if let Some(target) = next.environments.get_mut(&post.target.key) {
            for action in actions {
                match action {
                    CopyAction::UpdateOn => target.on = source.on,
                    CopyAction::UpdateRules => target.rules.clone_from(&source.rules),
                    CopyAction::UpdateFallthrough => {
                        target.fallthrough.clone_from(&source.fallthrough)
                    }
                    CopyAction::UpdateOffVariation => target.off_variation = source.off_variation,
                    CopyAction::UpdatePrerequisites => {
                        target.prerequisites.clone_from(&source.prerequisites)
                    }
                    CopyAction::UpdateTargets => {
                        target.targets.clone_from(&source.targets);
                        target.context_targets.clone_from(&source.context_targets);
                    }
                    // No configuration holds migration settings: nothing to copy.
                    CopyAction::UpdateFlagConfigMigrationSettings => {}
                }
            }
        }
        next.settle_change(self, now);
        crate::patch::check_size("the copy", Some(self), &next)
            .map_err(|e| CopyError::Invalid(e.to_string()))?;
        Ok(next)
    }

    /// A new flag with `new`'s key and name (and its description, tags and `temporary` when
    /// given) that has this flag's variations and, in every environment, its targeting, on/off
    /// state included. Variations, rules and clauses get new `_id`s; versions start at 1.
    ///
    /// # Errors
    /// [`ValidationError`] when `new` carries variations (a clone has the source's) or is invalid.
    pub fn clone_as(
        &self,
        new: NewFlag,
        now: i64,
        ids: &mut dyn IdSource,
    ) -> Result<Flag, ValidationError> {
        let post = new.post;
        if post.variations.is_some() || post.defaults.is_some() {
            return Err(ValidationError::single(
                "variations",
                "a clone has the variations and defaults of its source",
            ));
        }
        if post.is_flag_on.is_some() {
            return Err(ValidationError::single(
                "isFlagOn",
                "a clone has the on/off state of its source in every environment",
            ));
        }
        if post.initial_prerequisites.is_some() {
            return Err(ValidationError::single(
                "initialPrerequisites",
                "a clone has the prerequisites of its source in every environment",
            ));
        }
        let mut clone = self.clone();
        clone.key = new.key;
        clone.name = post.name;
        if let Some(description) = post.description {
            clone.description = description;
        }
        if !post.tags.is_empty() {
            clone.tags = post.tags;
            crate::normalize_tags(&mut clone.tags);
        }
        if let Some(temporary) = post.temporary {
            clone.temporary = temporary;
        }
        // A maintainer named in the request replaces the source's (member or team: one of them).
        if post.maintainer_id.is_some() || post.maintainer_team_key.is_some() {
            clone.maintainer_id = post.maintainer_id;
            clone.maintainer_team_key = post.maintainer_team_key;
        }
        clone.version = 1;
        clone.creation_date = now;
        clone.archived = false;
        clone.archived_date = None;
        clone.deprecated = false;
        clone.deprecated_date = None;
        for variation in &mut clone.variations {
            variation.id = ids.uuid();
        }
        for config in clone.environments.values_mut() {
            config.version = 1;
            config.last_modified = now;
            config.salt = ids.hex(32);
            config.sel = ids.hex(32);
            config.archived = false;
            for rule in &mut config.rules {
                rule.id = ids.uuid();
                rule.clauses.iter_mut().for_each(|c| c.id = ids.uuid());
            }
        }
        // The clone holds the source's regular expressions, checked when the source was stored.
        clone.validate_since(Some(self))?;
        Ok(clone)
    }
}
