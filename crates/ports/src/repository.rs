//! [`Repository`]: every aggregate's repository in one trait.

use crate::{
    AccountRepository, AuditRepository, ConsoleSessionRepository, CustomRoleRepository,
    EnvironmentRepository, FlagRepository, MemberRepository, ProjectRepository, SegmentRepository,
    TeamRepository, TokenRepository, TombstoneRepository, WebhookRepository,
};

/// Reads and writes inside one transaction: every aggregate's repository. Implementations map
/// unique-constraint violations to [`crate::StoreError::Duplicate`]. Methods that take a `project_id`
/// act within that project only.
///
/// Implemented for every type that implements all the aggregate repositories; a use case gets
/// one as `&mut dyn Repository` from [`crate::StoreExt`], and passes it on where one aggregate's trait
/// is expected.
pub trait Repository:
    AccountRepository
    + MemberRepository
    + TokenRepository
    + ProjectRepository
    + EnvironmentRepository
    + FlagRepository
    + SegmentRepository
    + AuditRepository
    + WebhookRepository
    + CustomRoleRepository
    + TeamRepository
    + ConsoleSessionRepository
    + TombstoneRepository
{
}

impl<T> Repository for T where
    T: AccountRepository
        + MemberRepository
        + TokenRepository
        + ProjectRepository
        + EnvironmentRepository
        + FlagRepository
        + SegmentRepository
        + AuditRepository
        + WebhookRepository
        + CustomRoleRepository
        + TeamRepository
        + ConsoleSessionRepository
        + TombstoneRepository
        + ?Sized
{
}
