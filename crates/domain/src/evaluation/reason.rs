//! What an evaluation gives: a value, its variation index, and the reason, as the SDKs report
//! them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why an evaluation failed (`ERROR` reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorKind {
    /// No flag has the key.
    FlagNotFound,
    /// The flag's data is inconsistent (a variation index out of range, a rollout without
    /// variations, an invalid attribute reference, a prerequisite or segment cycle).
    MalformedFlag,
    /// The context is missing or invalid.
    UserNotSpecified,
    /// The value is not of the type asked for.
    WrongType,
    /// The data is not available yet.
    ClientNotReady,
    /// Something unexpected.
    Exception,
}

/// Why an evaluation served what it did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Reason {
    /// Targeting is off.
    Off,
    /// No target or rule matched.
    #[serde(rename_all = "camelCase")]
    Fallthrough {
        /// The context was bucketed into an experiment.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        in_experiment: bool,
    },
    /// The context is an individual target.
    TargetMatch,
    /// A rule matched.
    #[serde(rename_all = "camelCase")]
    RuleMatch {
        /// Its index.
        rule_index: usize,
        /// Its id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule_id: Option<String>,
        /// The context was bucketed into an experiment.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        in_experiment: bool,
    },
    /// A prerequisite was not met.
    #[serde(rename_all = "camelCase")]
    PrerequisiteFailed {
        /// Its key.
        prerequisite_key: String,
    },
    /// The evaluation failed.
    #[serde(rename_all = "camelCase")]
    Error {
        /// Why.
        error_kind: ErrorKind,
    },
}

impl Reason {
    /// Whether the context is in an experiment.
    pub fn in_experiment(&self) -> bool {
        matches!(
            self,
            Reason::Fallthrough {
                in_experiment: true
            } | Reason::RuleMatch {
                in_experiment: true,
                ..
            }
        )
    }
}

/// An evaluation's result: the value served (none: the caller's default applies), its index
/// among the flag's variations, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Detail {
    /// The value served, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// Its variation index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variation_index: Option<usize>,
    /// Why.
    pub reason: Reason,
}

impl Detail {
    /// A failed evaluation: no value.
    pub fn error(error_kind: ErrorKind) -> Self {
        Self {
            value: None,
            variation_index: None,
            reason: Reason::Error { error_kind },
        }
    }
}
