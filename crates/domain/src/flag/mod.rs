//! Feature flags: the flag-wide settings and one [`FlagConfig`] per environment.

mod config;
mod copy;
mod create;
mod document;
mod in_environment;
mod instructions;
mod model;
mod project;
mod serve;
mod status;
mod validate;

pub use config::{
    ConfigSummary, Defaults, FlagConfig, Prerequisite, Rollout, Rule, Target, VariationOrRollout,
    VariationSummary, WeightedVariation,
};
pub use copy::{CopyAction, CopyEnvironment, CopyError, FlagCopyPost};
pub use create::{FlagPost, InitialPrerequisite, NewFlag, VariationPost};
pub use instructions::PatchOutcome;
pub use model::{CustomProperty, Experiments, Flag, FlagKind, Variation};
pub use project::{FlagFacts, PrerequisiteEdge, ProjectFlags, ProjectRuleError};
pub use status::{flag_status, FlagStatusName, StatusFacts, STATUS_WINDOW_MS};
pub use validate::MAX_VARIATIONS;

pub use crate::rules::{MAX_CLAUSE_VALUES, MAX_REGEXES, MAX_REGEX_BYTES};
pub use crate::targeting::{Clause, Operator};

#[cfg(test)]
mod instruction_tests;
#[cfg(test)]
mod tests;
