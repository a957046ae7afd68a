//! Account members.

use serde::{Deserialize, Serialize};

use crate::role::Role;

/// A member of the account.
///
/// ```
/// use domain::member::Member;
/// use domain::role::Role;
/// let owner = Member::owner("5f0c0e0c0e0c0e0c0e0c0e0c".into(), "owner@example.com".into(), 1);
/// assert_eq!(owner.role, Role::Owner);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    /// 24 lowercase hex characters.
    #[serde(rename = "_id")]
    pub id: String,
    /// Unique within the account.
    pub email: String,
    /// The member's base role.
    pub role: Role,
    /// Given name.
    pub first_name: Option<String>,
    /// Family name.
    pub last_name: Option<String>,
    /// Creation time (epoch ms).
    pub creation_date: i64,
}

impl Member {
    /// The account owner, created on first start.
    pub fn owner(id: String, email: String, now: i64) -> Self {
        Self {
            id,
            email,
            role: Role::Owner,
            first_name: None,
            last_name: None,
            creation_date: now,
        }
    }
}
