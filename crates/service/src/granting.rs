//! Nobody is given, by a change to members, teams or custom roles, a power the caller lacks:
//! the rule that holds for access tokens (`tokens::require_no_wider`) by the other paths to the
//! same end. A member's power is its base role and every custom role it holds (its own and its
//! teams'), as its personal tokens act with at most that.
//!
//! - A change to one member (its role, its custom roles, its teams; an invitation) must leave
//!   it able to do only what the caller may, or only what it could before.
//! - A change to what a team or a custom role grants reaches every holder at once: it needs a
//!   caller whose statements take nothing from its base role (no deny it is under, no allow
//!   narrower than its role), unless it only narrows (a role's new policy shown included in
//!   its old one, with no wider base permissions).

use std::sync::Arc;

use domain::custom_role::CustomRole;
use domain::member::Member;
use domain::policy;
use domain::role::Role;
use ports::Repository;

use crate::access::Permissions;
use crate::member_caller::policy_set;
use crate::{Caller, ServiceError, ServiceResult};

/// What `member` may do at most, with the custom roles it holds as the store has them.
pub(crate) fn member_power(
    repo: &mut dyn Repository,
    member: &Member,
) -> ServiceResult<Permissions> {
    let keys = member.all_custom_roles();
    if member.role == Role::Owner || keys.is_empty() {
        return Ok(Permissions::of_role(member.role));
    }
    let roles = repo.get_custom_roles(&keys)?;
    Ok(Permissions::of_sets(vec![Arc::from(policy_set(
        member.role,
        &roles,
    ))]))
}

/// Refuses unless `after` (a member as a change leaves it; `before`, as it was, if it existed)
/// may do only what `caller` may, or only what it could before.
///
/// # Errors
/// `NotPermitted` saying so.
pub(crate) fn require_grant_within(
    repo: &mut dyn Repository,
    caller: &Caller,
    before: Option<&Member>,
    after: &Member,
) -> ServiceResult<()> {
    let power = member_power(repo, after)?;
    if after.role <= caller.role() && caller.permissions.include(&power) {
        return Ok(());
    }
    if let Some(before) = before {
        if after.role <= before.role && member_power(repo, before)?.include(&power) {
            return Ok(());
        }
    }
    Err(ServiceError::NotPermitted(format!(
        "this would let {} do what you may not (by its role or the custom roles it would hold): \
         nobody is given a power the caller lacks (see docs/roles.md)",
        after.email
    )))
}

impl Caller {
    /// Whether the caller's statements take nothing from its base role: every set of its
    /// policies includes the built-in role's.
    pub(crate) fn unrestricted(&self) -> bool {
        self.permissions.include(&Permissions::of_role(self.role()))
    }
}

/// Refuses a change to what a team or a custom role grants its holders (`what`, for the
/// message) to a caller whose statements restrict its base role.
///
/// # Errors
/// `NotPermitted` saying so.
pub(crate) fn require_unrestricted(caller: &Caller, what: &str) -> ServiceResult<()> {
    if caller.unrestricted() {
        return Ok(());
    }
    Err(ServiceError::NotPermitted(format!(
        "{what} changes what its holders may do; it needs a caller whose custom roles or inline \
         role take nothing from its base role (yours deny or narrow some of it), so that nobody \
         is given a power the caller lacks (see docs/roles.md)"
    )))
}

/// Whether `next` grants at most what `role` grants, whatever roles it is held with: its policy
/// and base permissions shown to be no wider, and every deny statement of `role` kept (a deny
/// takes from the other roles of its holder too).
pub(crate) fn narrows(role: &CustomRole, next: &CustomRole) -> bool {
    let denies = |r: &CustomRole| {
        r.policy
            .iter()
            .filter(|s| s.effect == policy::Effect::Deny)
            .cloned()
            .collect::<Vec<_>>()
    };
    let kept = denies(next);
    policy::includes(&role.policies(), &next.policies())
        && denies(role).iter().all(|deny| kept.contains(deny))
}

/// Page `page` of what `read` lists (read again page by page, at most
/// [`domain::query::MAX_LIMIT`] items at a time, in one transaction) that `visible` keeps: for a
/// caller whose statements may hide some items of a list, so that its pages and its total
/// count only what it may see, as a lookup by key would show it. It reads every matching item:
/// lists of roles, teams and tokens, which administrators keep to hundreds.
///
/// # Errors
/// The first error of `read`.
pub(crate) fn visible_page<T>(
    page: domain::query::Page,
    mut read: impl FnMut(domain::query::Page) -> ServiceResult<ports::Listed<T>>,
    visible: impl Fn(&T) -> bool,
) -> ServiceResult<ports::Listed<T>> {
    use domain::query::{Page, MAX_LIMIT};
    let mut kept = Vec::new();
    let mut offset = 0u64;
    loop {
        let batch = read(Page {
            limit: MAX_LIMIT,
            offset,
        })?;
        let read_now = batch.items.len();
        kept.extend(batch.items.into_iter().filter(|item| visible(item)));
        offset += u64::try_from(read_now).unwrap_or(u64::MAX);
        if read_now < MAX_LIMIT as usize || offset >= batch.total {
            break;
        }
    }
    let total = u64::try_from(kept.len()).unwrap_or(u64::MAX);
    let items = kept
        .into_iter()
        .skip(usize::try_from(page.offset).unwrap_or(usize::MAX))
        .take(page.limit as usize)
        .collect();
    Ok(ports::Listed::new(items, total))
}

/// Refuses to give custom roles `keys` the caller may not see (`viewRoles` on `role/{key}`),
/// before the store says whether they exist: 403 alike for a missing one.
///
/// # Errors
/// `NotPermitted` for the first such key.
pub(crate) fn require_view_roles<'k>(
    caller: &Caller,
    keys: impl IntoIterator<Item = &'k String>,
) -> ServiceResult<()> {
    for key in keys {
        caller.require_on("viewRoles", &domain::policy::Resource::role(key))?;
    }
    Ok(())
}
