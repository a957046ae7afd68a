//! Diesel errors in the storage port's terms.

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use ports::StoreError;

/// Maps a diesel error to the port's error.
pub fn map_error(err: DieselError) -> StoreError {
    match err {
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info) => {
            StoreError::Duplicate(info.message().to_owned())
        }
        DieselError::DatabaseError(DatabaseErrorKind::SerializationFailure, info) => {
            StoreError::Conflict(info.message().to_owned())
        }
        // A row this transaction refers to was deleted by a concurrent one (an environment under
        // a new segment, say): run the whole unit of work again, which then finds it gone (404).
        DieselError::DatabaseError(DatabaseErrorKind::ForeignKeyViolation, info) => {
            StoreError::Conflict(info.message().to_owned())
        }
        DieselError::DatabaseError(DatabaseErrorKind::ClosedConnection, info) => {
            StoreError::Unavailable(info.message().to_owned())
        }
        // PostgreSQL's statement_timeout (SQLSTATE 57014): the database did not answer in time.
        DieselError::DatabaseError(_, info)
            if info
                .message()
                .contains("canceling statement due to statement timeout") =>
        {
            StoreError::Unavailable(info.message().to_owned())
        }
        DieselError::DatabaseError(_, info)
            if info.message().contains("database is locked")
                || info.message().contains("deadlock detected") =>
        {
            StoreError::Conflict(info.message().to_owned())
        }
        other => StoreError::Other(other.to_string()),
    }
}
