//! Projects: the top-level containers of environments and flags.

use serde::{Deserialize, Serialize};

use crate::environment::EnvironmentPost;
use crate::id::ProjectId;
use crate::key::ProjectKey;
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
/// let id = domain::id::ProjectId::parse("0123456789abcdef01234567").unwrap();
/// let project = Project::create(new.project, id, 1);
/// assert_eq!(project.key, "web");
/// ```
///
/// Its JSON (serde) is the document JSON Patches apply to: the fields a client reads, without
/// what the HTTP adapter adds to show it (`_links`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    /// 24 lowercase hex characters.
    #[serde(rename = "_id")]
    pub id: ProjectId,
    /// Unique in the account; never changes.
    pub key: ProjectKey,
    /// Display name.
    pub name: String,
    /// Sorted, unique tags.
    pub tags: Vec<String>,
    /// Legacy mirror of `defaultClientSideAvailability.usingEnvironmentId`.
    pub include_in_snippet_by_default: bool,
    /// Client-side availability of new flags.
    pub default_client_side_availability: ClientSideAvailability,
    /// The rule new flag keys must follow (created or cloned); absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub naming_convention: Option<NamingConvention>,
    /// Creation time (epoch ms); used for sorting.
    #[serde(skip)]
    pub creation_date: i64,
}

/// A letter case that new flag keys must be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum NamingCase {
    /// `myFlagKey`: a lowercase letter, then letters and digits.
    CamelCase,
    /// `MyFlagKey`: an uppercase letter, then letters and digits.
    UpperCamelCase,
    /// `my_flag_key`: lowercase letters and digits, words joined by single `_`.
    SnakeCase,
    /// `my-flag-key`: lowercase letters and digits, words joined by single `-`.
    KebabCase,
    /// `MY_FLAG_KEY`: uppercase letters and digits, words joined by single `_`.
    ConstantCase,
}

impl NamingCase {
    /// Every case.
    pub const ALL: [NamingCase; 5] = [
        NamingCase::CamelCase,
        NamingCase::UpperCamelCase,
        NamingCase::SnakeCase,
        NamingCase::KebabCase,
        NamingCase::ConstantCase,
    ];

    /// The name used in the API (`camelCase`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            NamingCase::CamelCase => "camelCase",
            NamingCase::UpperCamelCase => "upperCamelCase",
            NamingCase::SnakeCase => "snakeCase",
            NamingCase::KebabCase => "kebabCase",
            NamingCase::ConstantCase => "constantCase",
        }
    }

    /// The case named `name` in the API.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|case| case.as_str() == name)
    }

    /// What the case asks, for error messages.
    fn describe(self) -> &'static str {
        match self {
            NamingCase::CamelCase => "camelCase (a lowercase letter, then letters and digits)",
            NamingCase::UpperCamelCase => {
                "upperCamelCase (an uppercase letter, then letters and digits)"
            }
            NamingCase::SnakeCase => {
                "snakeCase (lowercase letters and digits, words joined by single '_')"
            }
            NamingCase::KebabCase => {
                "kebabCase (lowercase letters and digits, words joined by single '-')"
            }
            NamingCase::ConstantCase => {
                "constantCase (uppercase letters and digits, words joined by single '_')"
            }
        }
    }

    /// Whether `text` is written in this case.
    fn matches(self, text: &str) -> bool {
        let words = |separator: char, letter: fn(&u8) -> bool| {
            text.split(separator).all(|word| {
                !word.is_empty()
                    && word
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b.is_ascii_alphabetic() && letter(&b)))
            })
        };
        let camel = |first: fn(&u8) -> bool| {
            text.as_bytes().first().is_some_and(first)
                && text.bytes().all(|b| b.is_ascii_alphanumeric())
        };
        match self {
            NamingCase::CamelCase => camel(u8::is_ascii_lowercase),
            NamingCase::UpperCamelCase => camel(u8::is_ascii_uppercase),
            NamingCase::SnakeCase => words('_', u8::is_ascii_lowercase),
            NamingCase::KebabCase => words('-', u8::is_ascii_lowercase),
            NamingCase::ConstantCase => words('_', u8::is_ascii_uppercase),
        }
    }
}

/// The rule new flag keys of a project follow: a prefix, then a case (either may be absent).
///
/// ```
/// use domain::project::{NamingCase, NamingConvention};
/// let convention = NamingConvention { case: Some(NamingCase::KebabCase), prefix: Some("web-".into()) };
/// assert!(convention.check("web-new-checkout").is_ok());
/// assert!(convention.check("web-NewCheckout").is_err());
/// assert!(convention.check("new-checkout").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NamingConvention {
    /// The case of the key after the prefix: `camelCase`, `upperCamelCase`, `snakeCase`,
    /// `kebabCase` or `constantCase`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<NamingCase>,
    /// What every new key starts with: 1 to 100 of `A-Z a-z 0-9 . _ -`, starting with a letter
    /// or digit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 100, pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    )]
    pub prefix: Option<String>,
}

/// The longest prefix a naming convention may ask for.
pub const MAX_PREFIX_CHARS: usize = 100;

impl NamingConvention {
    /// Checks the convention itself; `attribute` names it in errors. A convention with neither
    /// case nor prefix asks nothing: it is `None`.
    ///
    /// # Errors
    /// [`ValidationError`] for a prefix that no key could start with.
    pub fn validated(self, attribute: &str) -> Result<Option<Self>, ValidationError> {
        if let Some(prefix) = &self.prefix {
            let valid = prefix.len() <= MAX_PREFIX_CHARS
                && prefix
                    .as_bytes()
                    .first()
                    .is_some_and(u8::is_ascii_alphanumeric)
                && prefix
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
            if !valid {
                return Err(ValidationError::single(
                    format!("{attribute}.prefix"),
                    format!("must be 1 to {MAX_PREFIX_CHARS} of A-Z a-z 0-9 . _ -, starting with a letter or digit"),
                ));
            }
        }
        Ok((self.case.is_some() || self.prefix.is_some()).then_some(self))
    }

    /// Checks a new flag key against the convention.
    ///
    /// # Errors
    /// A message naming the convention and how `key` breaks it.
    pub fn check(&self, key: &str) -> Result<(), String> {
        let rest = match &self.prefix {
            Some(prefix) => key.strip_prefix(prefix.as_str()).ok_or_else(|| {
                format!(
                    "flag key '{key}' does not follow the project's naming convention: keys start with '{prefix}'"
                )
            })?,
            None => key,
        };
        match self.case {
            Some(case) if !case.matches(rest) => {
                let after = match &self.prefix {
                    Some(prefix) => format!(" after the prefix '{prefix}'"),
                    None => String::new(),
                };
                Err(format!(
                    "flag key '{key}' does not follow the project's naming convention: keys are written in {}{after}",
                    case.describe()
                ))
            }
            _ => Ok(()),
        }
    }
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
    /// The rule new flag keys follow.
    pub naming_convention: Option<NamingConvention>,
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
    pub name: String,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Legacy: same as `defaultClientSideAvailability.usingEnvironmentId`.
    pub include_in_snippet_by_default: Option<bool>,
    /// Client-side availability of new flags (default: mobile yes, browser no).
    pub default_client_side_availability: Option<ClientSideAvailability>,
    /// Environments to create; without it `test` and `production` are created. They cannot
    /// have a `source` (there is nothing to clone yet).
    #[cfg_attr(feature = "openapi", schema(max_items = 100))]
    pub environments: Option<Vec<EnvironmentPost>>,
    /// The rule new flag keys must follow (on create and clone): a prefix, a case, or both.
    pub naming_convention: Option<NamingConvention>,
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
            if post.source.is_some() {
                errors.push(FieldError::new(
                    format!("environments[{i}].source"),
                    "an environment created with its project has nothing to clone; create the project, then POST /projects/{projectKey}/environments with source",
                ));
            }
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
        let naming_convention = match self.naming_convention {
            Some(convention) => convention
                .validated("namingConvention")
                .map_err(|e| errors.extend(e.errors))
                .ok()
                .flatten(),
            None => None,
        };
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
                naming_convention,
            },
            environments,
        })
    }
}

impl Project {
    /// A new project with the given `_id` and creation time.
    pub fn create(new: NewProject, id: ProjectId, now: i64) -> Self {
        let key = new.key;
        Self {
            id,
            include_in_snippet_by_default: new
                .default_client_side_availability
                .using_environment_id,
            key,
            name: new.name,
            tags: new.tags,
            default_client_side_availability: new.default_client_side_availability,
            naming_convention: new.naming_convention,
            creation_date: now,
        }
    }

    /// Checks a new flag key against the project's naming convention, if it has one.
    ///
    /// # Errors
    /// [`ValidationError`] on `key`, naming the convention.
    pub fn check_flag_key(&self, key: &str) -> Result<(), ValidationError> {
        match &self.naming_convention {
            Some(convention) => convention
                .check(key)
                .map_err(|reason| ValidationError::single("key", reason)),
            None => Ok(()),
        }
    }

    /// Applies a JSON Patch. Patchable: `/name`, `/tags`, `/defaultClientSideAvailability`,
    /// `/includeInSnippetByDefault`, `/namingConvention` (which governs flags created
    /// afterwards; existing keys are left as they are).
    ///
    /// ```
    /// # use domain::project::{Project, ProjectPost};
    /// # let post: ProjectPost = serde_json::from_value(serde_json::json!({"key": "web", "name": "Web"})).unwrap();
    /// # let project = Project::create(post.validate().unwrap().project, domain::id::ProjectId::parse("0123456789abcdef01234567").unwrap(), 1);
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
        self.apply_patch_as_shown(&serde_json::Value::Null, ops)
    }

    /// [`Project::apply_patch`] on this project as the API shows it: with the `_links` of `shown` (its
    /// representation; nothing else is taken from it), which the operations may `test` and
    /// `copy` from but not write.
    ///
    /// # Errors
    /// As [`Project::apply_patch`].
    pub fn apply_patch_as_shown(
        &self,
        shown: &serde_json::Value,
        ops: &[patch::Operation],
    ) -> Result<Project, PatchError> {
        const WRITABLE: [&str; 5] = [
            "name",
            "tags",
            "defaultClientSideAvailability",
            "includeInSnippetByDefault",
            "namingConvention",
        ];
        let mut next =
            patch::apply_to_fields_as_shown(self, shown, &patch::LINKS_ONLY, ops, &WRITABLE)?;
        let mut errors = Vec::new();
        validate_name("name", &next.name, &mut errors);
        validate_tags("tags", &next.tags, &mut errors);
        if let Some(convention) = next.naming_convention.take() {
            match convention.validated("namingConvention") {
                Ok(convention) => next.naming_convention = convention,
                Err(e) => errors.extend(e.errors),
            }
        }
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
