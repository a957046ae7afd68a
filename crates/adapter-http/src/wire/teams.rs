//! Teams as the API shows them: `Team` with its `_links` and member count, and the collection.

use super::hrefs::team_href;
use super::hrefs::TEAMS_HREF;
use crate::wire::link::{Link, Links};
use serde::Serialize;

/// How many members a team has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct TeamMembers {
    /// The number of the team's members.
    #[serde(rename = "totalCount")]
    pub total_count: u64,
}

/// A team: a group of members sharing custom roles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Team {
    /// `self`, `parent`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
    /// Unique in the account; never changes.
    pub key: String,
    /// Display name.
    pub name: String,
    /// Free text (empty when none was given).
    pub description: String,
    /// The custom roles the team's members hold through it.
    pub custom_role_keys: Vec<String>,
    /// How many members it has (absent in audit-log versions: membership is recorded by the
    /// change's instructions).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub members: Option<TeamMembers>,
    /// Creation time (epoch ms).
    #[serde(rename = "_creationDate")]
    pub creation_date: i64,
    /// Time of the last change, its members' included (epoch ms).
    #[serde(rename = "_lastModified")]
    pub last_modified: i64,
    /// Starts at 1; every change adds one.
    #[serde(rename = "_version")]
    pub version: u64,
}

impl Team {
    /// How the API shows `team`, with its member count when known.
    pub fn of(team: &domain::team::Team, member_count: Option<u64>) -> Self {
        Self {
            links: Links::from([
                ("self".to_owned(), Link::api(team_href(&team.key))),
                ("parent".to_owned(), Link::api(TEAMS_HREF)),
            ]),
            key: team.key.to_string(),
            name: team.name.clone(),
            description: team.description.clone(),
            custom_role_keys: team.custom_role_keys.clone(),
            members: member_count.map(|total_count| TeamMembers { total_count }),
            creation_date: team.creation_date,
            last_modified: team.last_modified,
            version: team.version,
        }
    }
}

impl From<&service::TeamView> for Team {
    fn from(view: &service::TeamView) -> Self {
        Self::of(&view.team, Some(view.member_count))
    }
}

/// A page of teams.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Teams {
    /// The page's teams.
    pub items: Vec<Team>,
    /// All matches.
    #[serde(rename = "totalCount")]
    pub total_count: u64,
    /// Paging links.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}

crate::wire::page::collection_of!(Teams, Team);

/// A team as a member's representation names it: its key and name (its custom roles are the
/// team's, `GET /teams/{teamKey}`; a member's representation stays small whatever its teams
/// give).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemberTeam {
    /// `self`: the team.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
    /// The team's key.
    pub key: String,
    /// The team's name.
    pub name: String,
    /// The custom roles the member holds through the team, by key.
    #[serde(rename = "customRoleKeys")]
    pub custom_role_keys: Vec<String>,
}

impl From<&domain::team::MemberTeam> for MemberTeam {
    fn from(team: &domain::team::MemberTeam) -> Self {
        Self {
            links: Links::from([("self".to_owned(), Link::api(team_href(&team.key)))]),
            key: team.key.clone(),
            name: team.name.clone(),
            custom_role_keys: team.custom_role_keys.clone(),
        }
    }
}
