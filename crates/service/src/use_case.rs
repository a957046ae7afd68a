//! Every use case, and the [`Permit`] that proves its caller was *admitted* (the first of the
//! two phases in which permission is decided; the second, *authorize*, is in `authorize.rs`):
//! a caller who may not do one learns that before anything about its input is read.
//!
//! Each kind of [`Principal`](crate::Principal) has its own admission rules: an access token
//! (through the API or a console session) is admitted as its role allows; a background job only
//! to the use cases marked `+ Jobs` below (the reads and changes that scheduled work is made of),
//! and then as its member's role allows.
//!
//! [`Caller::may`] decides, once, whether the caller's role allows a use case and hands out a
//! `Permit` for it. The use case takes that permit instead of the bare caller and does not ask
//! the role again (what it then asks of the resources it touches is authorization); a permit for
//! another use case does not compile. (The member and token use cases re-read
//! the caller under lock in their transaction and ask the same rule of it once more: a demotion
//! committed since authentication counts there.)

use std::marker::PhantomData;

use domain::role::Action;

use crate::{Caller, ServiceError, ServiceResult};

mod sealed {
    use domain::role::Action;

    /// Only this crate names use cases, and says what each needs.
    pub trait Sealed {
        /// What the caller's role must allow (the table of roles is in `domain::role`), if
        /// anything: `None` for a use case any authenticated caller may attempt (its
        /// authorization decides the rest).
        const ACTION: Option<Action>;
        /// Whether a background job ([`crate::Principal::Job`]) may be admitted to it.
        const JOBS: bool;
    }
}

/// What the caller's role must allow for use case `U` (the table of roles is in
/// `domain::role`), if anything.
pub(crate) fn action_of<U: UseCase>() -> Option<Action> {
    U::ACTION
}

/// A use case: one of the marker types in this module. Every use case takes a [`Permit`] for
/// its marker.
pub trait UseCase: sealed::Sealed + Copy + std::fmt::Debug {}

/// The role action of a use case, or `None` for `Anyone`.
macro_rules! admission {
    (Anyone) => {
        None
    };
    ($action:ident) => {
        Some(Action::$action)
    };
}

/// `+ Jobs` after a use case's action: background jobs may be admitted to it.
macro_rules! jobs {
    (Jobs) => {
        true
    };
}

macro_rules! use_cases {
    ($($(#[doc = $doc:literal])* $name:ident => $action:ident $(+ $jobs:ident)?,)*) => {$(
        $(#[doc = $doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name;

        impl sealed::Sealed for $name {
            const ACTION: Option<Action> = admission!($action);
            const JOBS: bool = false $(|| jobs!($jobs))?;
        }

        impl UseCase for $name {}
    )*};
}

use_cases! {
    /// [`Projects::list_projects`](crate::Projects::list_projects).
    ListProjects => ViewResources,
    /// [`Projects::get_project`](crate::Projects::get_project).
    GetProject => ViewResources,
    /// [`Projects::create_project`](crate::Projects::create_project).
    CreateProject => ManageProjects,
    /// [`Projects::patch_project`](crate::Projects::patch_project).
    PatchProject => ManageProjects,
    /// [`Projects::delete_project`](crate::Projects::delete_project).
    DeleteProject => ManageProjects,
    /// [`Environments::list_environments`](crate::Environments::list_environments).
    ListEnvironments => ViewResources,
    /// [`Environments::get_environment`](crate::Environments::get_environment).
    GetEnvironment => ViewResources,
    /// [`Environments::create_environment`](crate::Environments::create_environment).
    CreateEnvironment => ManageEnvironments,
    /// [`Environments::patch_environment`](crate::Environments::patch_environment).
    PatchEnvironment => ManageEnvironments,
    /// [`Environments::reset_sdk_key`](crate::Environments::reset_sdk_key) and
    /// [`Environments::reset_mobile_key`](crate::Environments::reset_mobile_key).
    ResetEnvironmentKey => ManageEnvironments,
    /// [`Environments::delete_environment`](crate::Environments::delete_environment).
    DeleteEnvironment => ManageEnvironments,
    /// [`Flags::list_flags`](crate::Flags::list_flags).
    ListFlags => ViewResources,
    /// [`Flags::get_flag`](crate::Flags::get_flag).
    GetFlag => ViewResources + Jobs,
    /// [`Flags::dependent_flags`](crate::Flags::dependent_flags).
    DependentFlags => ViewResources,
    /// [`Flags::create_flag`](crate::Flags::create_flag).
    CreateFlag => ManageFlags,
    /// [`Flags::clone_flag`](crate::Flags::clone_flag).
    CloneFlag => ManageFlags,
    /// [`Flags::copy_flag_config`](crate::Flags::copy_flag_config).
    CopyFlagConfig => ManageFlags,
    /// [`Flags::patch_flag`](crate::Flags::patch_flag) and its dry run.
    PatchFlag => ManageFlags + Jobs,
    /// [`Flags::delete_flag`](crate::Flags::delete_flag).
    DeleteFlag => ManageFlags,
    /// The use cases of [`FlagStatuses`](crate::FlagStatuses).
    ReadFlagStatuses => ViewResources,
    /// The use cases of [`Evaluations`](crate::Evaluations): what flags serve a context.
    EvaluateFlags => ViewResources,
    /// [`Segments::list_segments`](crate::Segments::list_segments).
    ListSegments => ViewResources,
    /// [`Segments::get_segment`](crate::Segments::get_segment).
    GetSegment => ViewResources + Jobs,
    /// [`Segments::create_segment`](crate::Segments::create_segment).
    CreateSegment => ManageSegments,
    /// [`Segments::patch_segment`](crate::Segments::patch_segment) and its dry run.
    PatchSegment => ManageSegments + Jobs,
    /// [`Segments::delete_segment`](crate::Segments::delete_segment).
    DeleteSegment => ManageSegments,
    /// [`Tokens::list_tokens`](crate::Tokens::list_tokens).
    ListTokens => ManageTokens,
    /// [`Tokens::get_token`](crate::Tokens::get_token).
    GetToken => ManageTokens,
    /// [`Tokens::create_token`](crate::Tokens::create_token).
    CreateToken => ManageTokens,
    /// [`Tokens::patch_token`](crate::Tokens::patch_token).
    PatchToken => ManageTokens,
    /// [`Tokens::reset_token`](crate::Tokens::reset_token).
    ResetToken => ManageTokens,
    /// [`Tokens::delete_token`](crate::Tokens::delete_token).
    DeleteToken => ManageTokens,
    /// [`Webhooks::list_webhooks`](crate::Webhooks::list_webhooks).
    ListWebhooks => ManageWebhooks,
    /// [`Webhooks::get_webhook`](crate::Webhooks::get_webhook) and
    /// [`Webhooks::webhook_deliveries`](crate::Webhooks::webhook_deliveries).
    GetWebhook => ManageWebhooks,
    /// [`Webhooks::create_webhook`](crate::Webhooks::create_webhook).
    CreateWebhook => ManageWebhooks,
    /// [`Webhooks::patch_webhook`](crate::Webhooks::patch_webhook).
    PatchWebhook => ManageWebhooks,
    /// [`Webhooks::delete_webhook`](crate::Webhooks::delete_webhook).
    DeleteWebhook => ManageWebhooks,
    /// [`Members::list_members`](crate::Members::list_members).
    ListMembers => ViewMembers,
    /// [`Members::get_member`](crate::Members::get_member): a caller reads itself (`me`) with
    /// any role; another member needs `viewMembers`, decided in the use case.
    GetMember => Anyone,
    /// [`Members::invite_members`](crate::Members::invite_members).
    InviteMembers => ManageMembers,
    /// [`Members::patch_member`](crate::Members::patch_member) and
    /// [`Teams::add_member_to_teams`](crate::Teams::add_member_to_teams).
    PatchMember => ManageMembers,
    /// [`Members::delete_member`](crate::Members::delete_member).
    DeleteMember => ManageMembers,
    /// [`CustomRoles::list_custom_roles`](crate::CustomRoles::list_custom_roles).
    ListCustomRoles => ViewMembers,
    /// [`CustomRoles::get_custom_role`](crate::CustomRoles::get_custom_role).
    GetCustomRole => ViewMembers,
    /// [`CustomRoles::create_custom_role`](crate::CustomRoles::create_custom_role).
    CreateCustomRole => ManageMembers,
    /// [`CustomRoles::patch_custom_role`](crate::CustomRoles::patch_custom_role).
    PatchCustomRole => ManageMembers,
    /// [`CustomRoles::delete_custom_role`](crate::CustomRoles::delete_custom_role).
    DeleteCustomRole => ManageMembers,
    /// [`Teams::list_teams`](crate::Teams::list_teams).
    ListTeams => ViewMembers,
    /// [`Teams::get_team`](crate::Teams::get_team).
    GetTeam => ViewMembers,
    /// [`Teams::create_team`](crate::Teams::create_team).
    CreateTeam => ManageMembers,
    /// [`Teams::patch_team`](crate::Teams::patch_team).
    PatchTeam => ManageMembers,
    /// [`Teams::delete_team`](crate::Teams::delete_team).
    DeleteTeam => ManageMembers,
    /// The use cases of [`AuditLog`](crate::AuditLog).
    ReadAuditLog => ViewResources,
}

/// Proof that the caller's role allows use case `U`: only [`Caller::may`] makes one, after
/// asking. The use case takes it in place of the caller (who acted, for the audit entry, is
/// [`Permit::caller`]).
///
/// ```no_run
/// # fn create(
/// #     service: &service::Service,
/// #     caller: &service::Caller,
/// #     post: domain::flag::FlagPost,
/// # ) -> service::ServiceResult<()> {
/// let permit = caller.may(service::use_case::CreateFlag)?;
/// service.flags().create_flag(&permit, "shop", post)?;
/// # Ok(())
/// # }
/// ```
///
/// A permit for another use case does not compile:
///
/// ```compile_fail
/// # fn create(
/// #     service: &service::Service,
/// #     caller: &service::Caller,
/// #     post: domain::flag::FlagPost,
/// # ) -> service::ServiceResult<()> {
/// let permit = caller.may(service::use_case::PatchFlag)?;
/// service.flags().create_flag(&permit, "shop", post)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
#[must_use = "a permit is asked for in order to call its use case"]
pub struct Permit<U: UseCase> {
    caller: Caller,
    use_case: PhantomData<U>,
}

impl<U: UseCase> Permit<U> {
    /// Asks whether `caller` may do `U`; the only way to a permit.
    pub(crate) fn ask(caller: &Caller) -> crate::ServiceResult<Self> {
        if let crate::Principal::Job { name, .. } = caller.principal() {
            if !U::JOBS {
                return Err(ServiceError::NotPermitted(format!(
                    "a {name} may only read and change flags and segments"
                )));
            }
        }
        if let Some(action) = U::ACTION {
            caller.require(action)?;
        }
        Ok(Self {
            caller: caller.clone(),
            use_case: PhantomData,
        })
    }

    /// The caller the permit was given to.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// Asks again for `current`, the caller as re-read under lock inside the use case's
    /// transaction (`auth::hold_members`): a demotion committed since the permit was given counts.
    pub(crate) fn recheck(&self, current: &Caller) -> crate::ServiceResult<()> {
        match U::ACTION {
            Some(action) => current.require(action),
            None => Ok(()),
        }
    }
}

/// Admission: whether the caller may attempt a use case at all, asked before its input is read.
impl Caller {
    /// A permit for use case `U` (one of the markers in [`crate::use_case`]), if the caller's role
    /// allows it. This is where the rule is decided: the use case takes the permit and does not
    /// ask the role again.
    ///
    /// # Errors
    /// [`ServiceError::NotPermitted`] naming the role and what it cannot do.
    pub fn may<U: UseCase>(&self, _: U) -> ServiceResult<Permit<U>> {
        Permit::ask(self)
    }

    /// [`Caller::may`] for a use case inside project `project_key`: a caller whose policies
    /// allow none of its actions in that project learns so before anything about its input.
    ///
    /// # Errors
    /// [`ServiceError::NotPermitted`].
    pub fn may_in<U: UseCase>(&self, use_case: U, project_key: &str) -> ServiceResult<Permit<U>> {
        let permit = self.may(use_case)?;
        if let Some(action) = action_of::<U>() {
            if !self.permissions.built_in_only()
                && !self.permissions.may_do_some_in(action, project_key)
            {
                return Err(ServiceError::NotPermitted(format!(
                    "no role of the caller may {} in project '{project_key}'",
                    action.describe()
                )));
            }
        }
        Ok(permit)
    }
}
