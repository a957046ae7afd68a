//! *Authorize*, the second of the two phases in which a caller's permission is decided (the
//! first, *admit*, is [`Caller::may`] in `use_case.rs`): once a use case knows the resources it
//! touches, every action on every resource is decided, once, and the answer is kept as an
//! [`Authorized`] set. The audit step takes a [`Decided`] change, which only a decision makes,
//! so it records what was decided instead of deciding again.
//!
//! Both phases ask the caller's permissions (`access.rs`), the one place that decides.

use std::collections::HashSet;

use domain::policy::Request;

use crate::change::Change;
use crate::{Caller, ServiceError, ServiceResult};

/// Requests decided allowed for one caller: only [`Caller::authorize`] makes one.
#[derive(Debug, Clone, Default)]
pub(crate) struct Authorized {
    requests: Vec<Request>,
}

impl Authorized {
    /// These and `more`, deciding for `caller` (the one these were decided for) those of
    /// `more` that were not decided yet.
    ///
    /// # Errors
    /// [`ServiceError::NotPermitted`] naming the first action refused.
    pub(crate) fn and(mut self, caller: &Caller, more: &[Request]) -> ServiceResult<Authorized> {
        let decided: HashSet<&Request> = self.requests.iter().collect();
        let undecided: Vec<Request> = more
            .iter()
            .filter(|request| !decided.contains(request))
            .cloned()
            .collect();
        caller.require_all(&undecided)?;
        self.requests.extend(undecided);
        Ok(self)
    }

    /// `change`, whose every access was decided here, ready for its audit entry. A change with
    /// an access that was not decided is refused as an internal error (a use case that forgot
    /// to decide something): never recorded as allowed without a decision.
    ///
    /// # Errors
    /// [`ServiceError::Internal`] naming the undecided access.
    pub(crate) fn record(&self, change: Change) -> ServiceResult<Decided> {
        let decided: HashSet<&Request> = self.requests.iter().collect();
        if let Some(undecided) = change
            .accesses
            .iter()
            .find(|access| !decided.contains(access))
        {
            return Err(ServiceError::Internal(
                format!(
                    "'{}' on '{}' was recorded without being decided",
                    undecided.action, undecided.resource
                )
                .into(),
            ));
        }
        Ok(Decided(change))
    }
}

/// A change whose every access was decided allowed for the caller making it: what the audit
/// step records ([`Change::authorize`], [`Authorized::record`]).
#[derive(Debug)]
pub(crate) struct Decided(Change);

impl Decided {
    /// The change.
    pub(crate) fn into_change(self) -> Change {
        self.0
    }
}

impl Change {
    /// Decides every access of this change for `caller`, now: for use cases whose audit entry
    /// lists exactly what they decide.
    ///
    /// # Errors
    /// [`ServiceError::NotPermitted`] naming the first action refused.
    pub(crate) fn authorize(self, caller: &Caller) -> ServiceResult<Decided> {
        caller.require_all(&self.accesses)?;
        Ok(Decided(self))
    }
}

impl Caller {
    /// Decides every one of `requests` for this caller, once, and keeps them as decided.
    ///
    /// # Errors
    /// [`ServiceError::NotPermitted`] naming the first action refused, its resource and why.
    pub(crate) fn authorize(&self, requests: Vec<Request>) -> ServiceResult<Authorized> {
        self.require_all(&requests)?;
        Ok(Authorized { requests })
    }
}
