//! A flag's status in one environment (`new`, `launched`, `inactive`, `active`), derived from its
//! configuration and dates alone: flagsvc receives no evaluation data from SDKs.

use serde::{Deserialize, Serialize};

use super::{Flag, FlagConfig, VariationOrRollout};

/// Seven days in milliseconds: how long a flag stays `new`, and how long a configuration must
/// stay unchanged before it counts as `launched` or `inactive`.
pub const STATUS_WINDOW_MS: i64 = 7 * 24 * 60 * 60 * 1000;

/// A rollout weight that serves a variation to everyone (100%, in thousandths of a percent).
const EVERYONE: i64 = 100_000;

/// The status of a flag in one environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum FlagStatusName {
    /// Created less than seven days ago, and its configuration in the environment never changed.
    New,
    /// Archived, or targeting off with the configuration unchanged for seven days or more.
    Inactive,
    /// Anything else: recently changed, or serving more than one variation.
    Active,
    /// On and serving one variation to everyone, unchanged for seven days or more.
    Launched,
}

impl FlagStatusName {
    /// The name as it appears on the wire.
    ///
    /// ```
    /// assert_eq!(domain::flag::FlagStatusName::Launched.as_str(), "launched");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::New => "new",
            Self::Inactive => "inactive",
            Self::Active => "active",
            Self::Launched => "launched",
        }
    }
}

/// What a flag's status in one environment is derived from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusFacts {
    /// The flag's creation time (epoch ms).
    pub creation_date: i64,
    /// Whether the flag is archived (flag-wide, or in this environment).
    pub archived: bool,
    /// Whether targeting is on in the environment.
    pub on: bool,
    /// The configuration's `version`: 1 until it first changes.
    pub version: i64,
    /// The configuration's last change (epoch ms).
    pub last_modified: i64,
    /// Individual target values, of every context kind.
    pub target_values: usize,
    /// Targeting rules.
    pub rules: usize,
    /// Prerequisites.
    pub prerequisites: usize,
    /// The default rule.
    pub fallthrough: VariationOrRollout,
}

impl StatusFacts {
    /// The facts of `flag` in the environment configured by `config`.
    pub fn of(flag: &Flag, config: &FlagConfig) -> Self {
        Self {
            creation_date: flag.creation_date,
            archived: flag.archived || config.archived,
            on: config.on,
            version: config.version,
            last_modified: config.last_modified,
            target_values: config
                .targets
                .iter()
                .chain(&config.context_targets)
                .map(|t| t.values.len())
                .sum(),
            rules: config.rules.len(),
            prerequisites: config.prerequisites.len(),
            fallthrough: config.fallthrough.clone(),
        }
    }

    /// Whether the environment serves one variation to every context: no individual targets,
    /// no rules, no prerequisites, and a default rule that is one variation, or a rollout that
    /// gives one variation 100%.
    pub fn serves_one_variation(&self) -> bool {
        if self.target_values > 0 || self.rules > 0 || self.prerequisites > 0 {
            return false;
        }
        match (&self.fallthrough.variation, &self.fallthrough.rollout) {
            (Some(_), None) => true,
            (None, Some(rollout)) => rollout.variations.iter().any(|w| w.weight >= EVERYONE),
            _ => false,
        }
    }
}

/// The status of a flag in one environment at time `now` (epoch ms), checked in this order:
///
/// 1. `inactive` if the flag is archived (flag-wide or in the environment);
/// 2. `new` if it was created less than 7 days before `now` and its configuration in the
///    environment never changed (`version` 1);
/// 3. `launched` if targeting is on, it serves one variation to everyone
///    ([`StatusFacts::serves_one_variation`]) and the configuration has not changed for 7 days
///    or more;
/// 4. `inactive` if targeting is off and the configuration has not changed for 7 days or more;
/// 5. `active` otherwise.
///
/// ```
/// use domain::flag::{flag_status, FlagStatusName, StatusFacts, VariationOrRollout, STATUS_WINDOW_MS};
/// let facts = StatusFacts {
///     creation_date: 0, archived: false, on: true, version: 2, last_modified: 0,
///     target_values: 0, rules: 0, prerequisites: 0,
///     fallthrough: VariationOrRollout { variation: Some(0), rollout: None },
/// };
/// assert_eq!(flag_status(&facts, STATUS_WINDOW_MS - 1), FlagStatusName::Active);
/// assert_eq!(flag_status(&facts, STATUS_WINDOW_MS), FlagStatusName::Launched);
/// ```
pub fn flag_status(facts: &StatusFacts, now: i64) -> FlagStatusName {
    let unchanged_for_window = now.saturating_sub(facts.last_modified) >= STATUS_WINDOW_MS;
    if facts.archived {
        FlagStatusName::Inactive
    } else if now.saturating_sub(facts.creation_date) < STATUS_WINDOW_MS && facts.version <= 1 {
        FlagStatusName::New
    } else if facts.on && facts.serves_one_variation() && unchanged_for_window {
        FlagStatusName::Launched
    } else if !facts.on && unchanged_for_window {
        FlagStatusName::Inactive
    } else {
        FlagStatusName::Active
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flag::{Rollout, WeightedVariation};

    const DAY: i64 = 24 * 60 * 60 * 1000;

    /// A flag created at 0 and changed once (at `last_modified`).
    fn facts(on: bool, last_modified: i64) -> StatusFacts {
        StatusFacts {
            creation_date: 0,
            archived: false,
            on,
            version: 2,
            last_modified,
            target_values: 0,
            rules: 0,
            prerequisites: 0,
            fallthrough: VariationOrRollout {
                variation: Some(0),
                rollout: None,
            },
        }
    }

    fn rollout(weights: &[i64]) -> VariationOrRollout {
        VariationOrRollout {
            variation: None,
            rollout: Some(Rollout {
                variations: weights
                    .iter()
                    .enumerate()
                    .map(|(variation, &weight)| WeightedVariation {
                        variation,
                        weight,
                        untracked: false,
                    })
                    .collect(),
                bucket_by: None,
                context_kind: None,
                seed: None,
            }),
        }
    }

    #[test]
    fn new_until_seven_days_or_a_change() {
        let mut f = facts(false, 0);
        f.version = 1;
        assert_eq!(flag_status(&f, 0), FlagStatusName::New);
        assert_eq!(flag_status(&f, 7 * DAY - 1), FlagStatusName::New);
        assert_eq!(flag_status(&f, 7 * DAY), FlagStatusName::Inactive);
        // On from the start (a clone of a flag that was on) but never changed: still new.
        f.on = true;
        assert_eq!(flag_status(&f, DAY), FlagStatusName::New);
        // Changed once: no longer new.
        f.version = 2;
        f.last_modified = DAY;
        assert_eq!(flag_status(&f, 2 * DAY), FlagStatusName::Active);
    }

    #[test]
    fn launched_needs_on_one_variation_and_seven_quiet_days() {
        assert_eq!(
            flag_status(&facts(true, DAY), 8 * DAY),
            FlagStatusName::Launched
        );
        assert_eq!(
            flag_status(&facts(true, DAY), 8 * DAY - 1),
            FlagStatusName::Active
        );
        for change in [
            |f: &mut StatusFacts| f.target_values = 1,
            |f: &mut StatusFacts| f.rules = 1,
            |f: &mut StatusFacts| f.prerequisites = 1,
            |f: &mut StatusFacts| f.fallthrough = rollout(&[50_000, 50_000]),
        ] {
            let mut f = facts(true, 0);
            change(&mut f);
            assert_eq!(flag_status(&f, 30 * DAY), FlagStatusName::Active, "{f:?}");
        }
        let mut f = facts(true, 0);
        f.fallthrough = rollout(&[0, 100_000]);
        assert_eq!(flag_status(&f, 30 * DAY), FlagStatusName::Launched);
    }

    #[test]
    fn inactive_when_archived_or_off_for_seven_days() {
        let mut f = facts(true, 0);
        f.archived = true;
        assert_eq!(flag_status(&f, 0), FlagStatusName::Inactive);
        f.version = 1;
        assert_eq!(
            flag_status(&f, 0),
            FlagStatusName::Inactive,
            "archived beats new"
        );
        assert_eq!(
            flag_status(&facts(false, DAY), 8 * DAY),
            FlagStatusName::Inactive
        );
        assert_eq!(
            flag_status(&facts(false, DAY), 8 * DAY - 1),
            FlagStatusName::Active
        );
    }

    #[test]
    fn a_clock_behind_the_dates_does_not_panic() {
        assert_eq!(
            flag_status(&facts(true, 10), i64::MIN),
            FlagStatusName::Active
        );
        let mut f = facts(true, i64::MIN);
        f.creation_date = i64::MIN;
        assert_eq!(flag_status(&f, i64::MAX), FlagStatusName::Launched);
    }

    #[test]
    fn facts_of_a_flag_count_targets_of_every_kind() {
        let mut ids = crate::SequentialIds::default();
        let mut flag = Flag::create(
            crate::flag::NewFlag::boolean(crate::key::FlagKey::parse("f").unwrap(), "F"),
            5,
            &mut ids,
        )
        .unwrap();
        let mut config = flag.new_config("Production", 6, &mut ids);
        config.context_targets.push(crate::flag::Target {
            values: vec!["a".into(), "b".into()],
            variation: 0,
            context_kind: "org".into(),
        });
        flag.archived = true;
        let f = StatusFacts::of(&flag, &config);
        assert_eq!(
            (
                f.creation_date,
                f.archived,
                f.on,
                f.version,
                f.last_modified
            ),
            (5, true, false, 1, 6)
        );
        assert_eq!(f.target_values, 2);
        assert!(!f.serves_one_variation());
    }
}
