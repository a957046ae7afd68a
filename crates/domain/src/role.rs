//! Built-in roles and what each may do. This table is the only place that answers
//! "may this caller do that?"; every use case asks it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

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
    /// List and read account members.
    ViewMembers,
    /// Invite, change and delete members.
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
            Action::ViewMembers => "list and read members",
            Action::ManageMembers => "invite, change and delete members",
            Action::TransferOwnership => "transfer the account's ownership",
        }
    }
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
