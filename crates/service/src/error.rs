use domain::instruction::InstructionError;
use domain::patch::PatchError;
use domain::query::QueryError;
use domain::{FieldError, ValidationError};
use ports::StoreError;

/// Why a use case failed; each variant has one HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceError {
    /// 400: the request is invalid.
    #[error("{message}")]
    Invalid {
        /// What is wrong.
        message: String,
        /// Per-field details.
        errors: Vec<FieldError>,
    },
    /// 400 with a specific code (e.g. `email_already_exists_in_account`).
    #[error("{message}")]
    Rejected {
        /// The error code.
        code: &'static str,
        /// What is wrong.
        message: String,
    },
    /// 401: no valid access token.
    #[error("{0}")]
    Unauthorized(String),
    /// 403: the caller may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// 404: something named in the path does not exist.
    #[error("{0}")]
    NotFound(String),
    /// 409: the key is taken.
    #[error("{0}")]
    KeyExists(String),
    /// 409: a precondition on the current version failed, a concurrent change won, or the change
    /// would break other flags that depend on this one.
    #[error("{0}")]
    VersionConflict(String),
    /// 422: a well-formed patch that cannot be applied.
    #[error("{0}")]
    PatchFailed(String),
    /// 503: the store cannot be reached.
    #[error("{0}")]
    Unavailable(String),
    /// 500: a bug or corrupt data.
    #[error("{0}")]
    Internal(String),
}

impl ServiceError {
    /// A 400 without field details.
    pub fn invalid(message: impl Into<String>) -> Self {
        ServiceError::Invalid {
            message: message.into(),
            errors: vec![],
        }
    }

    /// Gives a "key taken" conflict a message that names the key; other errors pass through.
    pub(crate) fn key_taken(self, message: impl FnOnce() -> String) -> Self {
        match self {
            ServiceError::KeyExists(_) => ServiceError::KeyExists(message()),
            other => other,
        }
    }
}

/// Storage errors reach clients without the engine's own text (constraint names, hosts, ports,
/// driver messages): that goes to the log, once, here.
impl From<StoreError> for ServiceError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Duplicate(detail) => {
                log::debug!("unique constraint: {detail}");
                ServiceError::KeyExists("already exists".into())
            }
            StoreError::Conflict(detail) => {
                log::info!("concurrent transaction conflict: {detail}");
                ServiceError::VersionConflict("a concurrent change got in the way; retry".into())
            }
            StoreError::Unavailable(detail) => {
                log::error!("storage unavailable: {detail}");
                ServiceError::Unavailable(
                    "the database cannot be reached; try again shortly".into(),
                )
            }
            StoreError::Aborted | StoreError::Other(_) => ServiceError::Internal(err.to_string()),
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
            PatchError::TestFailed { .. } => ServiceError::VersionConflict(err.to_string()),
            PatchError::ReadOnly { .. }
            | PatchError::Failed { .. }
            | PatchError::TooLarge { .. }
            | PatchError::InvalidResult(_) => ServiceError::PatchFailed(err.to_string()),
            PatchError::Invalid(validation) => {
                ServiceError::PatchFailed(format!("the patched resource is invalid: {validation}"))
            }
        }
    }
}

impl From<InstructionError> for ServiceError {
    fn from(err: InstructionError) -> Self {
        match err {
            InstructionError::Conflict { .. } => ServiceError::VersionConflict(err.to_string()),
            InstructionError::Invalid(validation) => ServiceError::Invalid {
                message: format!("the result is invalid: {validation}"),
                errors: validation.errors,
            },
            other => ServiceError::invalid(other.to_string()),
        }
    }
}
