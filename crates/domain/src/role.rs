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
/// use domain::role::{Capability, Role};
/// assert!(Role::Writer.can(Capability::WriteResources));
/// assert!(!Role::Writer.can(Capability::ManageTokens));
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

/// Something a caller may or may not be allowed to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// Read projects, environments, flags, tokens visible to the caller.
    ReadResources,
    /// Create, change and delete projects, environments and flags.
    WriteResources,
    /// Create, list and delete access tokens.
    ManageTokens,
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

    /// The permission table.
    pub fn can(self, capability: Capability) -> bool {
        use Capability::*;
        use Role::*;
        match (self, capability) {
            (NoAccess, _) => false,
            (Reader, ReadResources) => true,
            (Reader, _) => false,
            (Writer, ReadResources | WriteResources) => true,
            (Writer, ManageTokens) => false,
            (Admin | Owner, _) => true,
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
        use Capability::*;
        let expected = [
            (Role::NoAccess, [false, false, false]),
            (Role::Reader, [true, false, false]),
            (Role::Writer, [true, true, false]),
            (Role::Admin, [true, true, true]),
            (Role::Owner, [true, true, true]),
        ];
        for (role, row) in expected {
            let got = [
                role.can(ReadResources),
                role.can(WriteResources),
                role.can(ManageTokens),
            ];
            assert_eq!(got, row, "{role}");
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
