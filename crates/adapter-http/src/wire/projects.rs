//! Projects as the API shows them: `Project` with its `_links`, and the collections and
//! representations around it.

use crate::wire::link::{Link, Links};
use domain::project::{ClientSideAvailability, NamingConvention};
use serde::Serialize;

use super::environments::{Environment, Environments};
use super::hrefs::{environments_href, project_href};

/// A project as the API shows it (`GET /projects/{projectKey}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(description = "A project: the container of environments and flags.")]
pub struct Project {
    /// 24 lowercase hex characters.
    #[serde(rename = "_id")]
    pub id: String,
    /// `self` and `environments`.
    #[schema(value_type = crate::wire::link::LinksSchema)]
    #[serde(rename = "_links")]
    pub links: Links,
    /// Unique in the account; never changes.
    pub key: String,
    /// Display name.
    pub name: String,
    /// Sorted, unique tags.
    #[schema(max_items = 100)]
    pub tags: Vec<String>,
    /// Legacy mirror of `defaultClientSideAvailability.usingEnvironmentId`.
    pub include_in_snippet_by_default: bool,
    /// Client-side availability of new flags.
    pub default_client_side_availability: ClientSideAvailability,
    /// The rule new flag keys must follow (created or cloned); absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub naming_convention: Option<NamingConvention>,
}

impl From<&domain::project::Project> for Project {
    fn from(project: &domain::project::Project) -> Self {
        Self {
            id: project.id.to_string(),
            links: Links::from([
                ("self".to_owned(), Link::api(project_href(&project.key))),
                (
                    "environments".to_owned(),
                    Link::api(environments_href(&project.key)),
                ),
            ]),
            key: project.key.to_string(),
            name: project.name.clone(),
            tags: project.tags.clone(),
            include_in_snippet_by_default: project.include_in_snippet_by_default,
            default_client_side_availability: project.default_client_side_availability,
            naming_convention: project.naming_convention.clone(),
        }
    }
}

/// A page of projects.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Projects {
    /// The projects.
    pub items: Vec<ProjectExpanded>,
    /// All matches.
    #[serde(rename = "totalCount")]
    pub total_count: u64,
    /// Paging links.
    #[schema(value_type = crate::wire::link::LinksSchema)]
    #[serde(rename = "_links")]
    pub links: Links,
}

crate::wire::page::collection_of!(Projects, ProjectExpanded);

/// A project, with its environments as a collection when `expand=environments` was asked.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProjectExpanded {
    /// The project.
    #[serde(flatten)]
    pub project: Project,
    /// Its environments (only with `expand=environments`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub environments: Option<Environments>,
}

impl From<service::ProjectWithEnvironments> for ProjectExpanded {
    fn from(item: service::ProjectWithEnvironments) -> Self {
        let environments = item.environments.map(|items| Environments {
            total_count: items.len() as u64,
            items: Environment::all_of(&item.project.key, &items),
            links: Links::from([(
                "self".to_owned(),
                Link::api(environments_href(&item.project.key)),
            )]),
        });
        Self {
            project: Project::from(&item.project),
            environments,
        }
    }
}

/// A project with its environments as a plain array (create and patch responses).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProjectRep {
    /// The project.
    #[serde(flatten)]
    pub project: Project,
    /// All its environments.
    pub environments: Vec<Environment>,
}

impl From<service::ProjectWithEnvironments> for ProjectRep {
    fn from(item: service::ProjectWithEnvironments) -> Self {
        Self {
            environments: Environment::all_of(
                &item.project.key,
                item.environments.as_deref().unwrap_or_default(),
            ),
            project: Project::from(&item.project),
        }
    }
}
