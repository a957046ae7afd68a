//! The use cases whose permission is asked before their input is read, and the [`Permit`] that
//! proves it was: a caller who may not do one learns that before anything about the input.
//!
//! [`Caller::may`] decides, once, whether the caller's role allows a use case and hands out a
//! `Permit` for it. The use case takes that permit instead of the bare caller and does not ask
//! again; a permit for another use case does not compile. (The member and token use cases re-read
//! the caller under lock in their transaction and ask the same rule of it once more: a demotion
//! committed since authentication counts there.)

use std::marker::PhantomData;

use domain::role::Action;

use crate::{Caller, ServiceError, ServiceResult};

mod sealed {
    use domain::role::Action;

    /// Only this crate names use cases, and says what each needs.
    pub trait Sealed {
        /// What the caller's role must allow (the table of roles is in `domain::role`).
        const ACTION: Action;
    }
}

/// What the caller's role must allow for use case `U` (the table of roles is in
/// `domain::role`).
pub(crate) fn action_of<U: UseCase>() -> Action {
    U::ACTION
}

/// A use case that takes a [`Permit`]: one of the marker types in this module.
pub trait UseCase: sealed::Sealed + Copy + std::fmt::Debug {}

macro_rules! use_cases {
    ($($(#[doc = $doc:literal])* $name:ident => $action:ident,)*) => {$(
        $(#[doc = $doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name;

        impl sealed::Sealed for $name {
            const ACTION: Action = Action::$action;
        }

        impl UseCase for $name {}
    )*};
}

use_cases! {
    /// [`Projects::create_project`](crate::Projects::create_project).
    CreateProject => ManageProjects,
    /// [`Projects::patch_project`](crate::Projects::patch_project).
    PatchProject => ManageProjects,
    /// [`Environments::create_environment`](crate::Environments::create_environment).
    CreateEnvironment => ManageEnvironments,
    /// [`Environments::patch_environment`](crate::Environments::patch_environment).
    PatchEnvironment => ManageEnvironments,
    /// [`Flags::create_flag`](crate::Flags::create_flag).
    CreateFlag => ManageFlags,
    /// [`Flags::clone_flag`](crate::Flags::clone_flag).
    CloneFlag => ManageFlags,
    /// [`Flags::copy_flag_config`](crate::Flags::copy_flag_config).
    CopyFlagConfig => ManageFlags,
    /// [`Flags::patch_flag`](crate::Flags::patch_flag) and its dry run.
    PatchFlag => ManageFlags,
    /// [`Segments::create_segment`](crate::Segments::create_segment).
    CreateSegment => ManageSegments,
    /// [`Segments::patch_segment`](crate::Segments::patch_segment) and its dry run.
    PatchSegment => ManageSegments,
    /// [`Tokens::create_token`](crate::Tokens::create_token).
    CreateToken => ManageTokens,
    /// [`Tokens::patch_token`](crate::Tokens::patch_token).
    PatchToken => ManageTokens,
    /// [`Webhooks::create_webhook`](crate::Webhooks::create_webhook).
    CreateWebhook => ManageWebhooks,
    /// [`Webhooks::patch_webhook`](crate::Webhooks::patch_webhook).
    PatchWebhook => ManageWebhooks,
    /// [`Members::invite_members`](crate::Members::invite_members).
    InviteMembers => ManageMembers,
    /// [`Members::patch_member`](crate::Members::patch_member).
    PatchMember => ManageMembers,
    /// [`CustomRoles::create_custom_role`](crate::CustomRoles::create_custom_role).
    CreateCustomRole => ManageMembers,
    /// [`CustomRoles::patch_custom_role`](crate::CustomRoles::patch_custom_role).
    PatchCustomRole => ManageMembers,
    /// [`Teams::create_team`](crate::Teams::create_team).
    CreateTeam => ManageMembers,
    /// [`Teams::patch_team`](crate::Teams::patch_team).
    PatchTeam => ManageMembers,
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
        caller.require(U::ACTION)?;
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
        current.require(U::ACTION)
    }
}

/// Admission: whether the caller may attempt a use case at all, asked before its input is read.
impl Caller {
    /// A permit for use case `U` (one of the markers in [`crate::use_case`]), if the caller's role
    /// allows it. This is where the rule is decided: the use case takes the permit and does not
    /// ask again.
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
        if !self.permissions.built_in_only()
            && !self
                .permissions
                .may_do_some_in(action_of::<U>(), project_key)
        {
            return Err(ServiceError::NotPermitted(format!(
                "no role of the caller may {} in project '{project_key}'",
                action_of::<U>().describe()
            )));
        }
        Ok(permit)
    }
}
