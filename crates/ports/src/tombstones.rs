//! Where deleted flags and segments left off for the SDKs.
//!
//! An SDK keeps a deleted flag's or segment's key with the version its deletion carried, and
//! applies a later change of that key only at a higher version. So an item created again with
//! a deleted one's key must start above it: a deletion records its tombstone version, and a
//! creation reads it ([`TombstoneRepository`]).

use std::collections::BTreeMap;

use domain::id::ProjectId;
use domain::key::EnvironmentKey;

use crate::StoreResult;

/// Which kind of item a tombstone is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TombstoneOf<'a> {
    /// A flag (of every environment of its project).
    Flag,
    /// A segment of one environment.
    Segment(&'a EnvironmentKey),
}

impl<'a> TombstoneOf<'a> {
    /// The stored kind (`flag`, `segment`) and environment key (`""` for a flag) of its
    /// tombstones.
    ///
    /// ```
    /// use ports::TombstoneOf;
    /// let production = domain::key::EnvironmentKey::lookup("production");
    /// assert_eq!(TombstoneOf::Flag.columns(), ("flag", ""));
    /// assert_eq!(TombstoneOf::Segment(&production).columns(), ("segment", "production"));
    /// ```
    pub fn columns(self) -> (&'static str, &'a str) {
        match self {
            TombstoneOf::Flag => ("flag", ""),
            TombstoneOf::Segment(environment) => ("segment", environment.as_str()),
        }
    }
}

/// The versions deleted flags and segments were last sent at.
pub trait TombstoneRepository {
    /// Records that item `key` of `of` in project `project_id` was deleted, and that SDKs were
    /// (or may be) told so at `version`: replaces an earlier tombstone of the key. Deleting the
    /// project deletes its tombstones.
    fn keep_tombstone(
        &mut self,
        project_id: &ProjectId,
        of: TombstoneOf<'_>,
        key: &str,
        version: i64,
    ) -> StoreResult<()>;

    /// The tombstone versions of those of `keys` (items of `of` in project `project_id`) that
    /// have one.
    fn tombstones(
        &mut self,
        project_id: &ProjectId,
        of: TombstoneOf<'_>,
        keys: &[&str],
    ) -> StoreResult<BTreeMap<String, i64>>;
}
