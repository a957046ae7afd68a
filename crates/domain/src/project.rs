//! Projects: the top-level containers of environments and flags.

use serde::{Deserialize, Serialize};

use crate::environment::EnvironmentPost;
use crate::key::ProjectKey;
use crate::link::{Link, Links};
use crate::patch::{self, PatchError};
use crate::{normalize_tags, validate_name, validate_tags, FieldError, ValidationError};

/// Which client-side SDKs may see new flags by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClientSideAvailability {
    /// Available to mobile SDKs (mobile key).
    pub using_mobile_key: bool,
    /// Available to browser SDKs (client-side ID).
    pub using_environment_id: bool,
}

/// A project.
///
/// ```
/// use domain::key::ProjectKey;
/// use domain::project::{Project, ProjectPost};
/// let post: ProjectPost = serde_json::from_value(serde_json::json!({"key": "web", "name": "Web"})).unwrap();
/// let new = post.validate().unwrap();
/// let project = Project::create(new.project, "0123456789abcdef01234567".into(), 1);
/// assert_eq!(project.links["self"].href, "/api/v2/projects/web");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(
    feature = "openapi",
    schema(description = "A project: the container of environments and flags.")
)]
pub struct Project {
    /// 24 lowercase hex characters.
    #[serde(rename = "_id")]
    pub id: String,
    /// `self` and `environments`.
    #[cfg_attr(feature = "openapi", schema(value_type = crate::link::LinksSchema))]
    #[serde(rename = "_links")]
    pub links: Links,
    /// Unique in the account; never changes.
    pub key: String,
    /// Display name.
    pub name: String,
    /// Sorted, unique tags.
    #[cfg_attr(feature = "openapi", schema(max_items = 100))]
    pub tags: Vec<String>,
    /// Legacy mirror of `defaultClientSideAvailability.usingEnvironmentId`.
    pub include_in_snippet_by_default: bool,
    /// Client-side availability of new flags.
    pub default_client_side_availability: ClientSideAvailability,
    /// Creation time (epoch ms); used for sorting.
    #[serde(skip)]
    pub creation_date: i64,
}

/// The validated fields of a new project (without server-assigned ones).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewProject {
    /// The key.
    pub key: ProjectKey,
    /// Display name.
    pub name: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Client-side availability of new flags.
    pub default_client_side_availability: ClientSideAvailability,
}

/// A validated project request, with the environments to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewProjectWithEnvironments {
    /// The project itself.
    pub project: NewProject,
    /// Environments to create with it (`test` and `production` when the request named none).
    pub environments: Vec<crate::environment::NewEnvironment>,
}

/// The most environments a project holds, and so the most `POST /projects` creates with it.
/// Each environment adds a configuration to every flag, so this bounds a flag's size.
pub const MAX_ENVIRONMENTS: usize = 100;

/// `POST /projects` body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProjectPost {
    /// Project key.
    pub key: String,
    /// Display name.
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 256, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$")
    )]
    pub name: String,
    /// Tags.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_items = 100))]
    pub tags: Vec<String>,
    /// Legacy: same as `defaultClientSideAvailability.usingEnvironmentId`.
    pub include_in_snippet_by_default: Option<bool>,
    /// Client-side availability of new flags (default: mobile yes, browser no).
    pub default_client_side_availability: Option<ClientSideAvailability>,
    /// Environments to create; without it `test` and `production` are created.
    #[cfg_attr(feature = "openapi", schema(max_items = 100))]
    pub environments: Option<Vec<EnvironmentPost>>,
}

impl ProjectPost {
    /// Checks the request and fills in defaults.
    ///
    /// # Errors
    /// [`ValidationError`] naming every invalid field, including those of `environments`.
    pub fn validate(self) -> Result<NewProjectWithEnvironments, ValidationError> {
        let mut errors = Vec::new();
        let key = ProjectKey::parse(&self.key)
            .map_err(|e| errors.push(FieldError::new("key", e.reason)))
            .ok();
        validate_name("name", &self.name, &mut errors);
        validate_tags("tags", &self.tags, &mut errors);
        let mut availability =
            self.default_client_side_availability
                .unwrap_or(ClientSideAvailability {
                    using_mobile_key: true,
                    using_environment_id: false,
                });
        if let Some(snippet) = self.include_in_snippet_by_default {
            if self.default_client_side_availability.is_none() {
                availability.using_environment_id = snippet;
            }
        }
        let posts = self
            .environments
            .unwrap_or_else(crate::environment::default_environments);
        if posts.len() > MAX_ENVIRONMENTS {
            return Err(ValidationError::single(
                "environments",
                format!(
                    "a project is created with at most {MAX_ENVIRONMENTS} environments, not {}",
                    posts.len()
                ),
            ));
        }
        let mut environments = Vec::with_capacity(posts.len());
        let mut seen = std::collections::HashSet::new();
        for (i, post) in posts.into_iter().enumerate() {
            if !seen.insert(post.key.clone()) {
                errors.push(FieldError::new(
                    format!("environments[{i}].key"),
                    "is repeated",
                ));
            }
            match post.validate() {
                Ok(env) => environments.push(env),
                Err(e) => errors.extend(e.errors.into_iter().map(|f| {
                    FieldError::new(format!("environments[{i}].{}", f.attribute), f.reason)
                })),
            }
        }
        ValidationError::check(errors)?;
        let mut tags = self.tags;
        normalize_tags(&mut tags);
        let key = key.ok_or_else(|| ValidationError::single("key", "invalid"))?;
        Ok(NewProjectWithEnvironments {
            project: NewProject {
                key,
                name: self.name,
                tags,
                default_client_side_availability: availability,
            },
            environments,
        })
    }
}

impl Project {
    /// A new project with the given `_id` and creation time.
    pub fn create(new: NewProject, id: String, now: i64) -> Self {
        let key = new.key.into_string();
        Self {
            id,
            links: project_links(&key),
            include_in_snippet_by_default: new
                .default_client_side_availability
                .using_environment_id,
            key,
            name: new.name,
            tags: new.tags,
            default_client_side_availability: new.default_client_side_availability,
            creation_date: now,
        }
    }

    /// Recomputes `_links` from the key (after loading from storage).
    pub fn refresh_links(&mut self) {
        self.links = project_links(&self.key);
    }

    /// Applies a JSON Patch. Patchable: `/name`, `/tags`, `/defaultClientSideAvailability`,
    /// `/includeInSnippetByDefault`.
    ///
    /// ```
    /// # use domain::project::{Project, ProjectPost};
    /// # let post: ProjectPost = serde_json::from_value(serde_json::json!({"key": "web", "name": "Web"})).unwrap();
    /// # let project = Project::create(post.validate().unwrap().project, "0123456789abcdef01234567".into(), 1);
    /// let ops: Vec<domain::patch::Operation> = serde_json::from_value(serde_json::json!([{"op": "replace", "path": "/name", "value": "Website"}])).unwrap();
    /// let patched = project.apply_patch(&ops).unwrap();
    /// assert_eq!(patched.name, "Website");
    /// let bad: Vec<domain::patch::Operation> = serde_json::from_value(serde_json::json!([{"op": "replace", "path": "/key", "value": "x"}])).unwrap();
    /// assert!(project.apply_patch(&bad).is_err());
    /// ```
    ///
    /// # Errors
    /// [`PatchError`] when an op touches another path, a `test` fails, or the result is invalid.
    pub fn apply_patch(&self, ops: &[patch::Operation]) -> Result<Project, PatchError> {
        const WRITABLE: [&str; 4] = [
            "name",
            "tags",
            "defaultClientSideAvailability",
            "includeInSnippetByDefault",
        ];
        let mut next = patch::apply_to_fields(self, ops, &WRITABLE)?;
        let mut errors = Vec::new();
        validate_name("name", &next.name, &mut errors);
        validate_tags("tags", &next.tags, &mut errors);
        ValidationError::check(errors)?;
        normalize_tags(&mut next.tags);
        if next.include_in_snippet_by_default != self.include_in_snippet_by_default {
            next.default_client_side_availability.using_environment_id =
                next.include_in_snippet_by_default;
        }
        next.include_in_snippet_by_default =
            next.default_client_side_availability.using_environment_id;
        next.creation_date = self.creation_date;
        Ok(next)
    }
}

fn project_links(key: &str) -> Links {
    Links::from([
        (
            "self".to_owned(),
            Link::api(format!("/api/v2/projects/{key}")),
        ),
        (
            "environments".to_owned(),
            Link::api(format!("/api/v2/projects/{key}/environments")),
        ),
    ])
}
