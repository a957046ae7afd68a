//! The size limit of a new resource, in the use cases' error.

use crate::{ServiceError, ServiceResult};

/// `Invalid` when a new flag or segment (created or cloned) would be larger than the resource size
/// limit ([`domain::patch::MAX_DOCUMENT_BYTES`]); `what` names it in the message.
pub(crate) fn check_new_size<T: serde::Serialize>(what: &str, resource: &T) -> ServiceResult<()> {
    domain::patch::check_size(what, None, resource)
        .map_err(|e| ServiceError::invalid(e.to_string()))
}
