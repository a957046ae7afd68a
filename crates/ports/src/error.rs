//! [`StoreError`]: how storage fails, in terms the use cases can act on.

/// A storage failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// A unique constraint refused the write (e.g. a key that is taken).
    #[error("already exists: {0}")]
    Duplicate(String),
    /// A concurrent transaction got in the way; the whole unit of work may be retried.
    #[error("concurrent modification: {0}")]
    Conflict(String),
    /// The store cannot be reached or is overloaded.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The unit of work asked for a rollback (its own error is reported by the caller).
    #[error("transaction rolled back")]
    Aborted,
    /// Anything else: a bug or corrupt data.
    #[error("storage error: {0}")]
    Other(String),
}

/// Result of storage operations.
pub type StoreResult<T> = Result<T, StoreError>;
