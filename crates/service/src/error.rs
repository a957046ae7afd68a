//! Why a use case failed, in the domain's terms. How each outcome is told to a client (status,
//! code) is the business of the adapter that serves it (`adapter-http`'s error table).

use domain::flag::{CopyError, ProjectRuleError};
use domain::instruction::InstructionError;
use domain::member::InviteError;
use domain::patch::PatchError;
use domain::query::QueryError;
use domain::{FieldError, ValidationError};
use ports::StoreError;

/// The domain or storage error underneath a [`ServiceError`], kept as its `source` so that logs
/// show the cause; clients see only the service error's own message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Cause {
    /// A storage failure.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A JSON Patch or merge patch that could not be applied.
    #[error(transparent)]
    Patch(#[from] PatchError),
    /// A semantic patch that could not be applied.
    #[error(transparent)]
    Instruction(#[from] InstructionError),
    /// A rule involving other flags of the project.
    #[error(transparent)]
    ProjectRule(#[from] ProjectRuleError),
    /// A copy between environments that was refused.
    #[error(transparent)]
    Copy(#[from] CopyError),
    /// Invitations that were refused.
    #[error(transparent)]
    Invite(#[from] InviteError),
    /// A value that could not be serialized or read back.
    #[error("{0}")]
    Serialization(String),
}

/// What went wrong, for people, and (when there is one) the error underneath, for the logs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Detail {
    /// What went wrong, as the client is told.
    pub message: String,
    /// The domain or storage error that led to it.
    #[source]
    pub cause: Option<Cause>,
}

impl Detail {
    /// A message with the error underneath it.
    pub fn caused_by(message: impl Into<String>, cause: impl Into<Cause>) -> Self {
        Self {
            message: message.into(),
            cause: Some(cause.into()),
        }
    }
}

impl From<String> for Detail {
    fn from(message: String) -> Self {
        Self {
            message,
            cause: None,
        }
    }
}

impl From<&str> for Detail {
    fn from(message: &str) -> Self {
        message.to_owned().into()
    }
}

/// Why a use case failed, in the domain's terms.
///
/// The variants name situations, not protocol outcomes: where a client protocol has a specific
/// code for a situation (an email that is taken), the situation has its own variant and the
/// adapter picks the code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceError {
    /// The input breaks a rule: what is wrong, and per field (by path) what is wrong with it.
    #[error("{message}")]
    Invalid {
        /// What is wrong.
        message: String,
        /// Per-field details.
        errors: Vec<FieldError>,
    },
    /// An invitation names the same email more than once.
    #[error(transparent)]
    DuplicateEmail(Detail),
    /// An invitation names the email of an existing member of the account.
    #[error(transparent)]
    EmailTaken(Detail),
    /// The caller is not who they claim: no such access token, or its member is gone.
    #[error("{0}")]
    Unauthenticated(String),
    /// The secret presented as an access token is one of an environment's credentials (an SDK
    /// key, a mobile key, a client-side ID), which never authenticate a caller.
    #[error("this is {}, which cannot be used as an API access token", .0.describe())]
    NotAnAccessToken(domain::token::EnvironmentCredential),
    /// The caller is known but may not do this; the message says why.
    #[error("{0}")]
    NotPermitted(String),
    /// Something the request names does not exist; the message says what.
    #[error("{0}")]
    NotFound(String),
    /// The key (or another unique name) is taken by an existing resource.
    #[error(transparent)]
    KeyTaken(Detail),
    /// The change was made against a version that is no longer current: a version check in the
    /// request failed, or a concurrent change got in first. Retrying on the current version may
    /// succeed.
    #[error(transparent)]
    VersionConflict(Detail),
    /// The resource is still used by others (a flag that is a prerequisite, a segment used in
    /// rules), and the change would break them.
    #[error(transparent)]
    StillReferenced(Detail),
    /// The resource's current state does not allow the change (the owner cannot be deleted).
    #[error("{0}")]
    WrongState(String),
    /// A well-formed patch that cannot be applied to the resource as it is, or whose result is
    /// invalid.
    #[error(transparent)]
    PatchFailed(Detail),
    /// The store cannot be reached.
    #[error(transparent)]
    Unavailable(Detail),
    /// A bug or corrupt data.
    #[error(transparent)]
    Internal(Detail),
}

impl ServiceError {
    /// Invalid input without field details.
    pub fn invalid(message: impl Into<String>) -> Self {
        ServiceError::Invalid {
            message: message.into(),
            errors: vec![],
        }
    }

    /// Whether a storage statement failed: the store's own conflicts and duplicates too (a
    /// deadlock, a row a concurrent change deleted, a unique key taken meanwhile), not only an
    /// unreachable store or a bug. The transaction it ran in cannot go on (PostgreSQL aborts it).
    pub(crate) fn is_storage_failure(&self) -> bool {
        match self {
            ServiceError::Unavailable(_) | ServiceError::Internal(_) => true,
            ServiceError::DuplicateEmail(detail)
            | ServiceError::EmailTaken(detail)
            | ServiceError::KeyTaken(detail)
            | ServiceError::VersionConflict(detail)
            | ServiceError::StillReferenced(detail)
            | ServiceError::PatchFailed(detail) => matches!(detail.cause, Some(Cause::Store(_))),
            ServiceError::Invalid { .. }
            | ServiceError::Unauthenticated(_)
            | ServiceError::NotAnAccessToken(_)
            | ServiceError::NotPermitted(_)
            | ServiceError::NotFound(_)
            | ServiceError::WrongState(_) => false,
        }
    }

    /// Gives a "key taken" error a message that names the key; other errors pass through.
    pub(crate) fn key_taken(self, message: impl FnOnce() -> String) -> Self {
        match self {
            ServiceError::KeyTaken(detail) => ServiceError::KeyTaken(Detail {
                message: message(),
                ..detail
            }),
            other => other,
        }
    }

    /// A rule involving other flags, broken by the result of a patch (JSON Patch or merge
    /// patch). An invalid result here is [`ServiceError::PatchFailed`], as for any patch whose
    /// result is invalid ([`PatchError::Invalid`]); the same rule broken by a flag that is
    /// created, cloned or copied is invalid input ([`ServiceError::Invalid`], through
    /// `From<ProjectRuleError>`): there the client sent the flag itself, here it sent
    /// operations that produced it. The API tests pin the 422 of a patch (a prerequisite cycle
    /// made by JSON Patch, `api_flag_model`); creation and copy keep the 400 of invalid input
    /// they always had.
    pub(crate) fn patched_flag(err: ProjectRuleError) -> Self {
        match err {
            ProjectRuleError::Invalid(ref validation) => ServiceError::PatchFailed(
                Detail::caused_by(format!("the patched flag is invalid: {validation}"), err),
            ),
            conflict @ ProjectRuleError::Conflict(_) => conflict.into(),
        }
    }
}

/// Storage errors reach clients without the engine's own text (constraint names, hosts, ports,
/// driver messages): that stays in the source, for the logs.
impl From<StoreError> for ServiceError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Duplicate(_) => {
                log::debug!("{err}");
                ServiceError::KeyTaken(Detail::caused_by("already exists", err))
            }
            StoreError::Conflict(_) => {
                log::info!("{err}");
                ServiceError::VersionConflict(Detail::caused_by(
                    "a concurrent change got in the way; retry",
                    err,
                ))
            }
            StoreError::Unavailable(_) => {
                log::error!("{err}");
                ServiceError::Unavailable(Detail::caused_by(
                    "the database cannot be reached; try again shortly",
                    err,
                ))
            }
            StoreError::Aborted | StoreError::Other(_) => {
                ServiceError::Internal(Detail::caused_by(err.to_string(), err))
            }
        }
    }
}

impl From<ValidationError> for ServiceError {
    fn from(err: ValidationError) -> Self {
        ServiceError::Invalid {
            message: err.to_string(),
            errors: err.errors,
        }
    }
}

impl From<QueryError> for ServiceError {
    fn from(err: QueryError) -> Self {
        ServiceError::invalid(err.0)
    }
}

impl From<PatchError> for ServiceError {
    fn from(err: PatchError) -> Self {
        match err {
            PatchError::Malformed(message) => ServiceError::invalid(message),
            PatchError::TestFailed { .. } => {
                ServiceError::VersionConflict(Detail::caused_by(err.to_string(), err))
            }
            PatchError::ReadOnly { .. }
            | PatchError::Failed { .. }
            | PatchError::TooLarge { .. }
            | PatchError::InvalidResult(_) => {
                ServiceError::PatchFailed(Detail::caused_by(err.to_string(), err))
            }
            PatchError::Invalid(ref validation) => ServiceError::PatchFailed(Detail::caused_by(
                format!("the patched resource is invalid: {validation}"),
                err,
            )),
        }
    }
}

impl From<InstructionError> for ServiceError {
    fn from(err: InstructionError) -> Self {
        match err {
            InstructionError::Conflict { .. } => {
                ServiceError::StillReferenced(Detail::caused_by(err.to_string(), err))
            }
            InstructionError::Invalid(validation) => ServiceError::Invalid {
                message: format!("the result is invalid: {validation}"),
                errors: validation.errors,
            },
            other => ServiceError::invalid(other.to_string()),
        }
    }
}

/// A rule involving other flags, broken by a flag that is created, cloned or copied (for a
/// patched flag see `ServiceError::patched_flag`).
impl From<ProjectRuleError> for ServiceError {
    fn from(err: ProjectRuleError) -> Self {
        match err {
            ProjectRuleError::Invalid(validation) => validation.into(),
            ProjectRuleError::Conflict(ref message) => {
                ServiceError::StillReferenced(Detail::caused_by(message.clone(), err))
            }
        }
    }
}

impl From<CopyError> for ServiceError {
    fn from(err: CopyError) -> Self {
        match err {
            CopyError::Invalid(message) => ServiceError::invalid(message),
            CopyError::VersionMismatch(ref message) => {
                ServiceError::VersionConflict(Detail::caused_by(message.clone(), err))
            }
        }
    }
}

impl From<InviteError> for ServiceError {
    fn from(err: InviteError) -> Self {
        match err {
            InviteError::Invalid(validation) => validation.into(),
            InviteError::DuplicateEmail(_) => {
                ServiceError::DuplicateEmail(Detail::caused_by(err.to_string(), err))
            }
        }
    }
}

/// The result of a use case.
pub type ServiceResult<T> = Result<T, ServiceError>;

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    /// A refusal of the request leaves the transaction usable; a failed statement does not,
    /// whatever the variant the store's error became.
    #[test]
    fn storage_failures_are_told_apart_from_refusals() {
        let store = |err: StoreError| ServiceError::from(err).is_storage_failure();
        assert!(store(StoreError::Conflict("deadlock detected".into())));
        assert!(store(StoreError::Duplicate("flags_pkey".into())));
        assert!(store(StoreError::Unavailable("gone".into())));
        assert!(store(StoreError::Other("broken".into())));
        let failed_test = ServiceError::from(PatchError::TestFailed {
            index: 0,
            path: "/_version".into(),
        });
        assert!(matches!(failed_test, ServiceError::VersionConflict(_)));
        assert!(!failed_test.is_storage_failure());
        assert!(!ServiceError::NotFound("no flag".into()).is_storage_failure());
        assert!(!ServiceError::invalid("bad").is_storage_failure());
    }

    fn cause_of(err: &ServiceError) -> Option<String> {
        err.source().map(ToString::to_string)
    }

    #[test]
    fn a_taken_key_keeps_the_store_error_as_its_source() {
        let err = ServiceError::from(StoreError::Duplicate("flags_key_uq".into()))
            .key_taken(|| "a flag with key 'f' already exists".into());
        assert!(matches!(err, ServiceError::KeyTaken(_)), "{err:?}");
        assert_eq!(err.to_string(), "a flag with key 'f' already exists");
        assert_eq!(
            cause_of(&err).as_deref(),
            Some("already exists: flags_key_uq")
        );
    }

    #[test]
    fn store_errors_name_their_situation_without_the_engine_text() {
        let conflict = ServiceError::from(StoreError::Conflict("serialization failure".into()));
        assert!(matches!(conflict, ServiceError::VersionConflict(_)));
        assert!(!conflict.to_string().contains("serialization"));
        assert!(cause_of(&conflict).is_some_and(|c| c.contains("serialization failure")));

        let down = ServiceError::from(StoreError::Unavailable("host 10.0.0.1:5432".into()));
        assert!(matches!(down, ServiceError::Unavailable(_)));
        assert!(!down.to_string().contains("10.0.0.1"));

        let other = ServiceError::from(StoreError::Other("corrupt row".into()));
        assert!(matches!(other, ServiceError::Internal(_)));
    }

    #[test]
    fn a_flag_still_used_by_others_is_still_referenced() {
        let rule = ProjectRuleError::Conflict("flag 'a' is a prerequisite of b".into());
        let created = ServiceError::from(rule.clone());
        assert!(matches!(created, ServiceError::StillReferenced(_)));
        assert_eq!(created.to_string(), "flag 'a' is a prerequisite of b");
        assert_eq!(ServiceError::patched_flag(rule), created);

        let instruction = ServiceError::from(InstructionError::Conflict {
            index: 2,
            message: "variation in use".into(),
        });
        assert!(matches!(instruction, ServiceError::StillReferenced(_)));
        assert_eq!(instruction.to_string(), "instruction 2: variation in use");
    }

    #[test]
    fn an_invalid_flag_is_invalid_input_when_sent_and_a_failed_patch_when_patched() {
        let invalid = ValidationError::single("name", "must not be empty");
        let sent = ServiceError::from(ProjectRuleError::Invalid(invalid.clone()));
        assert!(
            matches!(&sent, ServiceError::Invalid { errors, .. } if errors[0].attribute == "name"),
            "{sent:?}"
        );
        let patched = ServiceError::patched_flag(ProjectRuleError::Invalid(invalid));
        assert!(
            matches!(patched, ServiceError::PatchFailed(_)),
            "{patched:?}"
        );
        assert!(patched
            .to_string()
            .starts_with("the patched flag is invalid: name"));
        assert!(cause_of(&patched).is_some());
    }

    #[test]
    fn copies_with_a_stale_version_are_version_conflicts() {
        let err = ServiceError::from(CopyError::VersionMismatch("version 3 is not 4".into()));
        assert!(matches!(err, ServiceError::VersionConflict(_)));
        assert_eq!(err.to_string(), "version 3 is not 4");
        let err = ServiceError::from(CopyError::Invalid("no such action".into()));
        assert_eq!(err, ServiceError::invalid("no such action"));
    }

    #[test]
    fn a_repeated_email_in_one_invitation_is_a_duplicate_email() {
        let err = ServiceError::from(InviteError::DuplicateEmail("a@example.com".into()));
        assert!(matches!(err, ServiceError::DuplicateEmail(_)), "{err:?}");
        assert_eq!(
            err.to_string(),
            "the email 'a@example.com' appears more than once in the request"
        );
    }

    #[test]
    fn a_failed_patch_test_is_a_version_conflict_and_other_patch_errors_fail_the_patch() {
        let failed = ServiceError::from(PatchError::Malformed("not an array".into()));
        assert_eq!(failed, ServiceError::invalid("not an array"));
        let invalid =
            ServiceError::from(PatchError::Invalid(ValidationError::single("key", "bad")));
        assert!(matches!(invalid, ServiceError::PatchFailed(_)));
        assert!(invalid
            .to_string()
            .starts_with("the patched resource is invalid: key"));
    }
}
