//! The domain's types that the routes name as request bodies and schemas, by one short path
//! (`model::FlagPost`, ...).
//!
//! Their OpenAPI schemas are derived on the domain's own types, behind `domain`'s `openapi`
//! feature: the doc comments there are the schemas' descriptions, the serde attributes their
//! shape, and `#[schema(...)]` their constraints. The domain parses these bodies itself, so a
//! field added to a domain type is in the document at once. `tests` holds the schemas to the
//! domain's serde: an example of each parses as the domain type and is kept whole.

pub use domain::custom_role::CustomRolePost;
pub use domain::environment::EnvironmentPost;
pub use domain::flag::{FlagCopyPost, FlagPost, FlagStatusName};
pub use domain::member::NewMemberForm;
pub use domain::project::ProjectPost;
pub use domain::segment::{SegmentInstruction, SegmentPost};
pub use domain::team::{TeamInstruction, TeamPost};
pub use domain::token::TokenPost;
pub use domain::webhook::{DeliveryAttempt, WebhookPost};

// Not a domain type: the route reads this body itself (`routes::members`); this is its schema.
/// `POST /members/{id}/teams` body.
#[derive(Debug, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemberTeamsPost {
    /// Keys of the teams the member joins (1 to 20, each naming an existing team; a member
    /// belongs to at most 20 teams).
    pub team_keys: Vec<String>,
}

#[cfg(test)]
mod tests;
