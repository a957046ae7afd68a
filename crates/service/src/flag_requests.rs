//! What the flag use cases take and give: a flag as they return it, a change in one of its
//! three forms, and the changes and creations that wait in the write lanes.

use domain::flag::Flag;
use domain::instruction::SemanticPatch;
use domain::patch::JsonPatchBody;
use ports::Maintainers;
use serde_json::Value;

use crate::{use_case, Caller, Detail, Permit, ServiceError, ServiceResult};

/// A flag as the use cases return it: the aggregate, and who maintains it.
#[derive(Debug, Clone, PartialEq)]
pub struct FlagView {
    /// The flag.
    pub flag: Flag,
    /// Its maintaining member or team.
    pub maintainers: Maintainers,
}

/// A change to a flag, in one of the three patch forms.
#[derive(Debug, Clone, PartialEq)]
pub enum FlagChange {
    /// RFC 6902 operations.
    JsonPatch(JsonPatchBody),
    /// RFC 7386 merge document.
    MergePatch {
        /// Audit comment.
        comment: Option<String>,
        /// The merge document.
        merge: Value,
    },
    /// Named instructions.
    Semantic(SemanticPatch),
}

/// The write queue of flag `key` of project `project_key`.
pub(crate) type FlagWriteLane = (String, u64);

/// A change to a flag (`key`, as the request names it), by a caller whose permit was checked.
#[derive(Debug)]
pub(crate) struct FlagWrite {
    pub(crate) caller: Caller,
    pub(crate) key: String,
    pub(crate) change: FlagChange,
    /// The version the flag (or one environment's configuration) must still have.
    pub(crate) expected: Option<ExpectedVersion>,
}

impl FlagWrite {
    pub(crate) fn new(permit: &Permit<use_case::PatchFlag>, key: &str, change: FlagChange) -> Self {
        Self {
            caller: permit.caller().clone(),
            key: key.to_owned(),
            change,
            expected: None,
        }
    }
}

/// The version a change was made against, as a client saw it: the change applies only if the
/// flag still has it (else [`ServiceError::VersionConflict`]), checked with the flag locked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpectedVersion {
    /// The flag's `_version`: nothing about the flag changed since, in any environment (for a
    /// change of its settings, made from a form that showed them all).
    Flag(i64),
    /// One environment's configuration's `version`: nothing changed there since (changes in
    /// other environments do not matter to it).
    Environment {
        /// The environment's key.
        key: String,
        /// The configuration's `version`.
        version: i64,
    },
}

impl ExpectedVersion {
    /// Refuses `flag` unless it (or its configuration in the environment) has the version
    /// expected.
    pub(crate) fn check(&self, flag: &Flag) -> ServiceResult<()> {
        match self {
            Self::Flag(expected) if flag.version == *expected => Ok(()),
            Self::Flag(expected) => Err(ServiceError::VersionConflict(Detail::from(format!(
                "the flag is at version {}, not {expected}: it was changed meanwhile",
                flag.version
            )))),
            Self::Environment { key, version } => {
                match flag.environments.get(key).map(|config| config.version) {
                    Some(found) if found == *version => Ok(()),
                    Some(found) => Err(ServiceError::VersionConflict(Detail::from(format!(
                        "the flag in environment '{key}' is at version {found}, not {version}: it was changed meanwhile"
                    )))),
                    None => Err(ServiceError::NotFound(format!(
                        "the flag has no environment '{key}'"
                    ))),
                }
            }
        }
    }
}

/// A flag to create (without prerequisites), by a caller whose permit was checked.
#[derive(Debug)]
pub(crate) struct FlagCreate {
    pub(crate) caller: Caller,
    /// Its creation (`createFlag`), decided for the caller before it joins a batch.
    pub(crate) authorized: crate::authorize::Authorized,
    /// The new flag, without configurations yet.
    pub(crate) flag: Flag,
    /// `isFlagOn`: targeting on in every environment.
    pub(crate) turn_on: bool,
}
