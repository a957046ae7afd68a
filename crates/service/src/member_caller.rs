//! What a member may do and how its audit entries name it, and callers that act as a member
//! with no token: background jobs ([`Principal::Job`]), work a member asked for earlier, done as
//! that member is when it runs. No token is involved, so a job keeps working after the token it
//! was asked with is deleted, and stops when its member is deleted or demoted.

use std::sync::Arc;

use domain::audit::AuditMember;
use domain::custom_role::CustomRole;
use domain::member::Member;
use domain::policy::Policy;
use domain::role::Role;
use domain::version::ApiVersion;
use ports::Repository;

use crate::access::Permissions;
use crate::caller::Principal;
use crate::{Caller, ServiceResult};

/// The caller job `name` is when acting as `member` now: the member's role, and the custom
/// roles it holds itself or through its teams (the owner acts with its built-in role alone).
pub(crate) fn job_caller_as(
    repo: &mut dyn Repository,
    member: &Member,
    name: &'static str,
) -> ServiceResult<Caller> {
    let held = member.all_custom_roles();
    let roles = if held.is_empty() {
        Vec::new()
    } else {
        repo.get_custom_roles(&held)?
    };
    let permissions = if roles.is_empty() || member.role == Role::Owner {
        Permissions::of_role(member.role)
    } else {
        Permissions::of_sets(vec![Arc::from(policy_set(member.role, &roles))])
    };
    Ok(Caller {
        principal: Principal::Job { name, token: None },
        member_id: member.id.clone(),
        role: member.role,
        permissions,
        default_api_version: ApiVersion::CURRENT,
        audited_as: Arc::new((audit_member(member), None)),
        request_id: None,
    })
}

/// The policies of built-in role `role` and of custom roles `roles` (each with its base
/// permissions), one of which allowing suffices. The owner acts with its built-in role alone: no
/// custom role (one an admin may edit) locks it out of the account.
pub(crate) fn policy_set(role: Role, roles: &[CustomRole]) -> Vec<Policy> {
    let mut policies = vec![domain::policy::base_role_policy(role)];
    if role != Role::Owner {
        for custom in roles {
            policies.extend(custom.policies());
        }
    }
    policies
}

/// `member` as its audit entries name it.
pub(crate) fn audit_member(member: &Member) -> AuditMember {
    AuditMember {
        id: member.id.to_string(),
        email: member.email.clone(),
        first_name: member.first_name.clone(),
        last_name: member.last_name.clone(),
    }
}
