//! Built-in roles and the permission table: which kinds of work ([`Action`]) each role may do.
//! Each action of the table is a part of the policy action catalogue ([`Action::grants`]), and a
//! built-in role's policy is made from the table ([`crate::policy::base_role_policy`]): one
//! vocabulary for the table, the policies, the use cases' admission (`service::use_case`), the
//! route catalogue and `docs/roles.md`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::id::MemberId;
use crate::policy::actions::ActionInfo;

/// A built-in role of a member or an access token.
///
/// Ordered by power: `NoAccess < Reader < Writer < Admin < Owner`.
///
/// ```
/// use domain::role::{Action, Role};
/// assert!(Role::Writer.can(Action::ManageFlags));
/// assert!(!Role::Writer.can(Action::ManageTokens));
/// assert!(Role::Reader < Role::Admin);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Nothing until other roles are added.
    NoAccess,
    /// Views everything, changes nothing.
    Reader,
    /// Also changes projects, environments and flags.
    Writer,
    /// Also manages members and access tokens.
    Admin,
    /// Exactly one per account: everything an admin can, and ownership.
    Owner,
}

/// Something a caller may or may not be allowed to do: one per kind of operation of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    /// Read projects, environments, flags, segments and the audit log.
    ViewResources,
    /// Create, change and delete projects.
    ManageProjects,
    /// Create, change and delete environments, and reset their SDK and mobile keys.
    ManageEnvironments,
    /// Create, change, copy, clone and delete flags.
    ManageFlags,
    /// Create, change and delete segments.
    ManageSegments,
    /// Create, list, change, reset and delete access tokens.
    ManageTokens,
    /// Create, change and delete webhooks, and see their deliveries.
    ManageWebhooks,
    /// List and read account members and custom roles.
    ViewMembers,
    /// Invite, change and delete members; create, change and delete custom roles.
    ManageMembers,
    /// Transfer the account's ownership to another member.
    TransferOwnership,
}

impl Action {
    /// Every action, in the order of the permission table.
    pub const ALL: [Action; 10] = [
        Action::ViewResources,
        Action::ManageProjects,
        Action::ManageEnvironments,
        Action::ManageFlags,
        Action::ManageSegments,
        Action::ManageTokens,
        Action::ManageWebhooks,
        Action::ViewMembers,
        Action::ManageMembers,
        Action::TransferOwnership,
    ];

    /// What the action consists of in the policy action catalogue
    /// ([`crate::policy::actions`]): the one vocabulary from which a built-in role's policy
    /// ([`crate::policy::base_role_policy`]) is made, so that the permission table and the
    /// policies decided for every request cannot disagree.
    ///
    /// ```
    /// use domain::policy::actions::ResourceKind;
    /// use domain::role::{Action, Grant};
    /// assert_eq!(Action::ManageFlags.grants(), Grant::Every(&[ResourceKind::Flag]));
    /// assert!(matches!(Action::ViewResources.grants(), Grant::Only(list) if list.contains(&("viewProject", ResourceKind::Project))));
    /// ```
    pub fn grants(self) -> Grant {
        use crate::policy::actions::ResourceKind as K;
        match self {
            Action::ViewResources => {
                Grant::Only(&[("viewProject", K::Project), ("viewAuditLog", K::Account)])
            }
            Action::ManageProjects => Grant::Every(&[K::Project]),
            Action::ManageEnvironments => Grant::Every(&[K::Environment]),
            Action::ManageFlags => Grant::Every(&[K::Flag]),
            Action::ManageSegments => Grant::Every(&[K::Segment]),
            Action::ManageTokens => Grant::Every(&[K::Token]),
            Action::ManageWebhooks => Grant::Every(&[K::Webhook]),
            Action::ViewMembers => Grant::Only(&[
                ("viewMembers", K::Member),
                ("viewRoles", K::Role),
                ("viewTeams", K::Team),
            ]),
            Action::ManageMembers => Grant::Every(&[K::Member, K::Role, K::Team]),
            Action::TransferOwnership => Grant::Every(&[K::Account]),
        }
    }

    /// The actions of the catalogue that a use case of this action may consist of: what a
    /// caller whose policies allow none of them is refused before its input is read. Those of
    /// its [`Grant`], less the view actions that another action of the table lists by name
    /// (reading a project is [`Action::ViewResources`], not [`Action::ManageProjects`]).
    ///
    /// ```
    /// use domain::role::Action;
    /// let names = |action: Action| action.catalogue_actions().map(|a| a.name).collect::<Vec<_>>();
    /// assert!(names(Action::ManageFlags).contains(&"updateOn"));
    /// assert!(!names(Action::ManageProjects).contains(&"viewProject"));
    /// assert!(names(Action::ViewResources).contains(&"viewProject"));
    /// assert!(names(Action::ManageTokens).contains(&"viewAccessTokens"));
    /// ```
    pub fn catalogue_actions(self) -> impl Iterator<Item = &'static ActionInfo> {
        let grant = self.grants();
        let named_by_another = move |info: &ActionInfo| {
            Action::ALL.iter().any(|other| {
                *other != self
                    && matches!(other.grants(), Grant::Only(list) if list.contains(&(info.name, info.kind)))
            })
        };
        crate::policy::actions::ALL
            .iter()
            .filter(move |info| match grant {
                Grant::Only(list) => list.contains(&(info.name, info.kind)),
                Grant::Every(kinds) => kinds.contains(&info.kind) && !named_by_another(info),
            })
    }

    /// What the action covers, for people.
    pub fn describe(self) -> &'static str {
        match self {
            Action::ViewResources => {
                "read projects, environments, flags, segments and the audit log"
            }
            Action::ManageProjects => "create, change and delete projects",
            Action::ManageEnvironments => {
                "create, change and delete environments and reset their keys"
            }
            Action::ManageFlags => "create, change, copy, clone and delete flags",
            Action::ManageSegments => "create, change and delete segments",
            Action::ManageTokens => "create, list, change, reset and delete access tokens",
            Action::ManageWebhooks => "create, change and delete webhooks and see their deliveries",
            Action::ViewMembers => "list and read members and custom roles",
            Action::ManageMembers => {
                "invite, change and delete members, and create, change and delete custom roles"
            }
            Action::TransferOwnership => "transfer the account's ownership",
        }
    }
}

/// What an [`Action`] of the permission table is in the policy action catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// Every action of the catalogue on resources of these kinds.
    Every(&'static [crate::policy::actions::ResourceKind]),
    /// These actions, each on every resource of its kind.
    Only(&'static [(&'static str, crate::policy::actions::ResourceKind)]),
}

/// The permission table as Markdown (rendered into `docs/roles.md`).
///
/// ```
/// let table = domain::role::permission_table_markdown();
/// assert!(table.starts_with("| Action |"));
/// ```
pub fn permission_table_markdown() -> String {
    let mut out = String::from("| Action |");
    for role in Role::ALL {
        out.push_str(&format!(" `{role}` |"));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(Role::ALL.len()));
    out.push('\n');
    for action in Action::ALL {
        out.push_str(&format!("| {} |", action.describe()));
        for role in Role::ALL {
            out.push_str(if role.can(action) { " yes |" } else { " no |" });
        }
        out.push('\n');
    }
    out
}

/// Who is acting, for the rules about *whom* a caller may act on (the permission table says
/// *what* a role may do).
///
/// ```
/// use domain::id::MemberId;
/// use domain::role::{Actor, Role};
/// let [a, b, o, w] = ["a", "b", "0", "f"].map(|c| MemberId::parse(&c.repeat(24)).unwrap());
/// let admin = Actor { role: Role::Admin, member_id: &a, service_token: false };
/// // An admin manages its own tokens and those of members it outranks...
/// assert!(admin.may_manage_token(&a, Role::Admin, false, Role::Admin));
/// assert!(admin.may_manage_token(&w, Role::Writer, false, Role::Writer));
/// // ...but not another admin's, nor the owner's.
/// assert!(!admin.may_manage_token(&b, Role::Admin, false, Role::Admin));
/// // An admin demoted to reader a moment ago still holds an admin token: not another's to reset.
/// assert!(!admin.may_manage_token(&b, Role::Reader, false, Role::Admin));
/// assert!(admin.may_manage_token(&b, Role::Reader, false, Role::Reader));
/// assert!(!admin.may_manage_token(&o, Role::Owner, false, Role::Admin));
/// // A service token acts for the account, never as the member who created it.
/// let service = Actor { role: Role::Admin, member_id: &o, service_token: true };
/// assert!(!service.may_manage_token(&o, Role::Owner, false, Role::Admin));
/// assert!(service.may_manage_token(&o, Role::Owner, true, Role::Reader));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Actor<'a> {
    /// The role in effect.
    pub role: Role,
    /// The member the access token belongs to (its creator, for a service token).
    pub member_id: &'a MemberId,
    /// Whether the access token is a service token.
    pub service_token: bool,
}

impl Actor<'_> {
    /// Whether this actor may change, reset or delete an access token of member `member_id`
    /// (whose role is `member_role`), given whether it is a service token and the token's role.
    ///
    /// - A personal token: its own member's (through that member's personal tokens), or one of
    ///   a member this actor outranks, whose own role the actor outranks too (a member demoted
    ///   for a moment still holds tokens of its former role: demoting, resetting and promoting
    ///   again takes over no token). Nobody outranks the owner, so only the owner touches the
    ///   owner's tokens, and an admin never touches another admin's.
    /// - A service token belongs to the account: any token manager whose role is at least the
    ///   token's.
    pub fn may_manage_token(
        &self,
        member_id: &MemberId,
        member_role: Role,
        service_token: bool,
        token_role: Role,
    ) -> bool {
        if service_token {
            return self.role >= token_role;
        }
        self.is(member_id) || (self.role > member_role && self.role > token_role)
    }

    /// Whether this actor may change or delete member `member_id` (whose role is
    /// `member_role`): itself, or a member whose role is not above the actor's. An admin never
    /// edits the owner; a service token is no member, so it is never "itself".
    ///
    /// ```
    /// use domain::id::MemberId;
    /// use domain::role::{Actor, Role};
    /// let [a, b, o] = ["a", "b", "0"].map(|c| MemberId::parse(&c.repeat(24)).unwrap());
    /// let admin = Actor { role: Role::Admin, member_id: &a, service_token: false };
    /// assert!(admin.may_change_member(&b, Role::Admin));
    /// assert!(!admin.may_change_member(&o, Role::Owner));
    /// ```
    pub fn may_change_member(&self, member_id: &MemberId, member_role: Role) -> bool {
        self.is(member_id) || self.role >= member_role
    }

    /// Whether this actor acts as member `member_id`: through one of that member's personal
    /// tokens (a service token acts for the account, never as the member who created it).
    ///
    /// ```
    /// use domain::id::MemberId;
    /// use domain::role::{Actor, Role};
    /// let a = MemberId::parse(&"a".repeat(24)).unwrap();
    /// assert!(Actor { role: Role::Admin, member_id: &a, service_token: false }.is(&a));
    /// assert!(!Actor { role: Role::Admin, member_id: &a, service_token: true }.is(&a));
    /// ```
    pub fn is(&self, member_id: &MemberId) -> bool {
        !self.service_token && self.member_id == member_id
    }
}

/// The rules about whom a caller may act on, as Markdown (rendered into `docs/roles.md`).
///
/// ```
/// assert!(domain::role::actor_rules_markdown().contains("outranks"));
/// ```
pub fn actor_rules_markdown() -> String {
    [
        "## Whom a caller may act on",
        "",
        "- Nobody gives a role above their own: not to a member (invite or change), not to an access token.",
        "- A personal access token acts with at most its member's role, at every request; the owner's `admin` \
         tokens act as the owner.",
        "- Another member's personal tokens may be changed, reset or deleted only by a caller whose role \
         outranks that member's and the token's own role (a member demoted a moment ago still holds tokens \
         of its former role: demoting, resetting and promoting again takes over none). Nobody outranks the owner, so only the owner touches the owner's tokens, and \
         an admin never touches another admin's. A reset secret acts with at most its member's role.",
        "- Service tokens belong to the account: any token manager whose role is at least the token's may \
         change, reset or delete them. A service token never acts as the member who created it: it creates \
         only service tokens, and `members/me` names no member for it.",
        "- **A caller never creates, resets, widens or takes over an access token that may do anything the \
         caller may not**, through the API or the console: decided on the whole policy (base role, custom \
         roles, inline role, and for a personal token its member's roles), not on base roles alone. A new \
         token, a token about to get a new secret, and a token whose `role`, `inlineRole` or `customRoleIds` \
         change must be shown to do only what the caller may: every deny statement the caller is under is \
         also the token's (word for word) or meets none of its allows, and every allow of the token is \
         covered by an allow of the caller (`domain::policy::includes`). When that cannot be shown, the \
         request is refused (403): give the token the same restrictions (the same inline role or custom \
         roles) or fewer powers.",
        "- **Nobody is given, by a change to members, teams or custom roles, a power the caller lacks.** \
         A member's power is its base role and every custom role it holds (its own and its teams'). A change \
         to one member (its role, its custom roles, the teams it joins; an invitation) must leave it able to do \
         only what the caller may, or only what it could before. A change to what a team or a custom role \
         grants reaches every holder at once (a team's custom roles, the members of a team that grants \
         roles, deleting such a team, a custom role's policy or base permissions): it needs a caller whose \
         custom roles and inline role take nothing from its base role, unless it only narrows (a role's new \
         policy shown included in its old one, keeping every deny statement).",
        "- Renaming an access token never gains its caller anything: each token action the caller may do on \
         the new name it must already be allowed on the old one, so no rename steps around a statement \
         naming the token.",
        "- A member whose role is above the caller's cannot be changed or deleted by the caller (an admin \
         never edits the owner); the owner is never deleted or demoted, and only the owner transfers \
         ownership (then becoming an admin).",
        "- Role checks are made on the caller's member as it stands inside the request's transaction, so \
         a demotion or an ownership transfer that commits first counts.",
        "",
    ]
    .join("\n")
}

impl Role {
    /// Every role, weakest first.
    pub const ALL: [Role; 5] = [
        Role::NoAccess,
        Role::Reader,
        Role::Writer,
        Role::Admin,
        Role::Owner,
    ];

    /// The permission table: whether this role may do `action`. The only place that says so.
    pub fn can(self, action: Action) -> bool {
        use Action::*;
        match self {
            Role::NoAccess => false,
            Role::Reader => matches!(action, ViewResources | ViewMembers),
            Role::Writer => matches!(
                action,
                ViewResources
                    | ViewMembers
                    | ManageProjects
                    | ManageEnvironments
                    | ManageFlags
                    | ManageSegments
            ),
            Role::Admin => action != TransferOwnership,
            Role::Owner => true,
        }
    }

    /// The role's name as used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::NoAccess => "no_access",
            Role::Reader => "reader",
            Role::Writer => "writer",
            Role::Admin => "admin",
            Role::Owner => "owner",
        }
    }

    /// Whether an access token may carry this role (`reader`, `writer` or `admin`).
    pub fn is_token_role(self) -> bool {
        matches!(self, Role::Reader | Role::Writer | Role::Admin)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role name that is not one of the built-in roles.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role '{0}': expected one of no_access, reader, writer, admin, owner")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownRole(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_table() {
        use Action::*;
        // Rows: reader, writer, admin, owner; no_access can do nothing.
        let minimum = [
            (ViewResources, Role::Reader),
            (ManageProjects, Role::Writer),
            (ManageEnvironments, Role::Writer),
            (ManageFlags, Role::Writer),
            (ManageSegments, Role::Writer),
            (ManageTokens, Role::Admin),
            (ManageWebhooks, Role::Admin),
            (ViewMembers, Role::Reader),
            (ManageMembers, Role::Admin),
            (TransferOwnership, Role::Owner),
        ];
        assert_eq!(minimum.len(), Action::ALL.len());
        for (action, least) in minimum {
            for role in Role::ALL {
                let expected = role != Role::NoAccess && role >= least;
                assert_eq!(role.can(action), expected, "{role} {action:?}");
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for role in Role::ALL {
            assert_eq!(role.as_str().parse::<Role>(), Ok(role));
        }
        assert!("root".parse::<Role>().is_err());
    }
}
