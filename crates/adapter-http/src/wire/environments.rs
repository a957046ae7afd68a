//! Environments as the API shows them: `Environment` with its `_links`, and the collection.

use crate::wire::link::{Link, Links};
use serde::Serialize;

use super::hrefs::{environment_href, project_href};

/// An environment as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(description = "An environment of a project, where its flags are configured.")]
pub struct Environment {
    /// 24 lowercase hex characters; also the environment's client-side ID.
    #[serde(rename = "_id")]
    pub id: String,
    /// `self`, `project`.
    #[schema(value_type = crate::wire::link::LinksSchema)]
    #[serde(rename = "_links")]
    pub links: Links,
    /// Unique within the project; never changes.
    pub key: String,
    /// Display name.
    pub name: String,
    /// Server-side SDK key (`sdk-...`).
    pub api_key: String,
    /// Mobile key (`mob-...`).
    pub mobile_key: String,
    /// Hex RGB colour without `#`.
    pub color: String,
    /// PHP SDK cache TTL in minutes.
    pub default_ttl: i32,
    /// Secure mode for client-side SDKs.
    pub secure_mode: bool,
    /// `trackEvents` for new flags.
    pub default_track_events: bool,
    /// UI hint: require comments on changes.
    pub require_comments: bool,
    /// UI hint: confirm changes.
    pub confirm_changes: bool,
    /// Marks an environment as critical.
    pub critical: bool,
    /// Sorted, unique tags.
    #[schema(max_items = 100)]
    pub tags: Vec<String>,
}

impl Environment {
    /// How the API shows `env`, an environment of project `project_key`.
    pub fn of(project_key: &str, env: &domain::environment::Environment) -> Self {
        Self {
            id: env.id.to_string(),
            links: Links::from([
                (
                    "self".to_owned(),
                    Link::api(environment_href(project_key, &env.key)),
                ),
                ("project".to_owned(), Link::api(project_href(project_key))),
            ]),
            key: env.key.to_string(),
            name: env.name.clone(),
            api_key: env.api_key.clone(),
            mobile_key: env.mobile_key.clone(),
            color: env.color.clone(),
            default_ttl: env.default_ttl,
            secure_mode: env.secure_mode,
            default_track_events: env.default_track_events,
            require_comments: env.require_comments,
            confirm_changes: env.confirm_changes,
            critical: env.critical,
            tags: env.tags.clone(),
        }
    }

    /// How the API shows the environments `envs` of project `project_key`.
    pub fn all_of(project_key: &str, envs: &[domain::environment::Environment]) -> Vec<Self> {
        envs.iter().map(|env| Self::of(project_key, env)).collect()
    }
}

/// A page of environments.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Environments {
    /// The environments.
    pub items: Vec<Environment>,
    /// All matches.
    #[serde(rename = "totalCount")]
    pub total_count: u64,
    /// Paging links.
    #[schema(value_type = crate::wire::link::LinksSchema)]
    #[serde(rename = "_links")]
    pub links: Links,
}

crate::wire::page::collection_of!(Environments, Environment);
