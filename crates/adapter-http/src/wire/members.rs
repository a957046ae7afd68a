//! Account members as the API shows them: `Member` with its `_links`, and the collection.

use crate::wire::link::{Link, Links};
use domain::role::Role;
use serde::Serialize;

use super::hrefs::member_href;

/// A member of the account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Member {
    /// 24 lowercase hex characters.
    #[serde(rename = "_id")]
    pub id: String,
    /// `self`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
    /// Unique within the account (compared case-insensitively).
    pub email: String,
    /// The member's base role.
    pub role: Role,
    /// Given name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub first_name: Option<String>,
    /// Family name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub last_name: Option<String>,
    /// The keys of the member's own custom roles.
    pub custom_roles: Vec<String>,
    /// The teams the member belongs to (at most 20): it holds their custom roles.
    pub teams: Vec<super::teams::MemberTeam>,
    /// Invited but not yet signed in.
    #[serde(rename = "_pendingInvite")]
    pub pending_invite: bool,
    /// Email address verified.
    #[serde(rename = "_verified")]
    pub verified: bool,
    /// Last use of one of the member's tokens (epoch ms; 0 = never).
    #[serde(rename = "_lastSeen")]
    pub last_seen: i64,
    /// Creation time (epoch ms).
    pub creation_date: i64,
    /// Multi-factor authentication (`disabled` here).
    pub mfa: String,
}

impl From<&domain::member::Member> for Member {
    fn from(member: &domain::member::Member) -> Self {
        Self {
            id: member.id.to_string(),
            links: Links::from([("self".to_owned(), Link::api(member_href(&member.id)))]),
            email: member.email.clone(),
            role: member.role,
            first_name: member.first_name.clone(),
            last_name: member.last_name.clone(),
            custom_roles: member.custom_roles.clone(),
            teams: member.teams.iter().map(Into::into).collect(),
            pending_invite: member.pending_invite,
            verified: member.verified,
            last_seen: member.last_seen,
            creation_date: member.creation_date,
            mfa: member.mfa.clone(),
        }
    }
}

impl Member {
    /// How the API shows `members`.
    pub fn all_of(members: &[domain::member::Member]) -> Vec<Self> {
        members.iter().map(Self::from).collect()
    }
}

/// A page of members.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Members {
    /// The members.
    pub items: Vec<Member>,
    /// All matches.
    #[serde(rename = "totalCount")]
    pub total_count: u64,
    /// Paging links.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}

crate::wire::page::collection_of!(Members, Member);
