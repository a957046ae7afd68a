//! Environments: where a project's flags are configured (test, production, ...).

use serde::{Deserialize, Serialize};

use crate::id::EnvironmentId;
use crate::key::EnvironmentKey;
use crate::patch::{self, PatchError};
use crate::{normalize_tags, validate_name, validate_tags, FieldError, ValidationError};

/// An environment of a project.
///
/// ```
/// use domain::environment::{Environment, EnvironmentCredentials, EnvironmentPost};
/// let post: EnvironmentPost = serde_json::from_value(serde_json::json!(
///     {"key": "staging", "name": "Staging", "color": "00FF00"})).unwrap();
/// let creds = EnvironmentCredentials {
///     id: domain::id::EnvironmentId::parse("0123456789abcdef01234567").unwrap(),
///     api_key: "sdk-1".into(),
///     mobile_key: "mob-1".into(),
/// };
/// let env = Environment::create(post.validate().unwrap(), creds, 1);
/// assert_eq!(env.color, "00FF00");
/// ```
///
/// Its JSON (serde) is the document JSON Patches apply to: the fields a client reads, without
/// what the HTTP adapter adds to show it (`_links`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Environment {
    /// 24 lowercase hex characters; also the environment's client-side ID.
    #[serde(rename = "_id")]
    pub id: EnvironmentId,
    /// Unique within the project; never changes.
    pub key: EnvironmentKey,
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
    pub tags: Vec<String>,
    /// Creation time (epoch ms); used for sorting.
    #[serde(skip)]
    pub creation_date: i64,
}

/// Server-generated identifiers and keys of a new environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvironmentCredentials {
    /// `_id` (24 hex), also the client-side ID.
    pub id: EnvironmentId,
    /// SDK key.
    pub api_key: String,
    /// Mobile key.
    pub mobile_key: String,
}

/// `POST /projects/{projectKey}/environments` body (and items of a project's `environments`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EnvironmentPost {
    /// Environment key.
    pub key: String,
    /// Display name.
    pub name: String,
    /// Hex RGB colour without `#` (e.g. `F5A623`).
    pub color: String,
    /// Minutes (default 0).
    pub default_ttl: Option<i32>,
    /// Default false.
    pub secure_mode: Option<bool>,
    /// Default false.
    pub default_track_events: Option<bool>,
    /// Default false.
    pub confirm_changes: Option<bool>,
    /// Default false.
    pub require_comments: Option<bool>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Default false.
    pub critical: Option<bool>,
    /// Clone an existing environment of the project: every flag's configuration there, and its
    /// segments, are copied into the new environment.
    pub source: Option<EnvironmentSource>,
}

/// The environment a new environment is cloned from (`source` of an environment request).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EnvironmentSource {
    /// Key of an environment of the same project.
    pub key: String,
    /// Not supported: environments carry no version here, so there is nothing to compare it
    /// with. A request that sets it is a 400 naming `source.version`.
    pub version: Option<i64>,
}

/// A validated environment request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEnvironment {
    /// The key.
    pub key: EnvironmentKey,
    post: EnvironmentPost,
}

impl NewEnvironment {
    /// The environment's key as text.
    pub fn key(&self) -> &str {
        self.key.as_str()
    }

    /// The key of the environment to clone, if the request asked for a clone.
    pub fn source(&self) -> Option<&str> {
        self.post.source.as_ref().map(|source| source.key.as_str())
    }
}

pub(crate) fn default_environments() -> Vec<EnvironmentPost> {
    vec![
        EnvironmentPost {
            key: "test".into(),
            name: "Test".into(),
            color: "F5A623".into(),
            ..Default::default()
        },
        EnvironmentPost {
            key: "production".into(),
            name: "Production".into(),
            color: "417505".into(),
            critical: Some(true),
            ..Default::default()
        },
    ]
}

fn validate_color(color: &str, errors: &mut Vec<FieldError>) {
    if color.len() != 6 || !color.bytes().all(|b| b.is_ascii_hexdigit()) {
        errors.push(FieldError::new(
            "color",
            "must be six hex digits without '#', e.g. F5A623",
        ));
    }
}

/// The longest `defaultTtl`: a year, in minutes.
///
/// ```
/// assert_eq!(domain::environment::MAX_TTL_MINUTES, 525_600);
/// ```
pub const MAX_TTL_MINUTES: i32 = 60 * 24 * 365;

fn validate_ttl(ttl: i32, errors: &mut Vec<FieldError>) {
    if !(0..=MAX_TTL_MINUTES).contains(&ttl) {
        errors.push(FieldError::new(
            "defaultTtl",
            format!("must be between 0 and {MAX_TTL_MINUTES} minutes"),
        ));
    }
}

impl EnvironmentPost {
    /// Checks the request.
    ///
    /// # Errors
    /// [`ValidationError`] for an invalid key, empty name, bad colour, TTL or tags.
    pub fn validate(self) -> Result<NewEnvironment, ValidationError> {
        let mut errors = Vec::new();
        let key = EnvironmentKey::parse(&self.key)
            .map_err(|e| errors.push(FieldError::new("key", e.reason)))
            .ok();
        validate_name("name", &self.name, &mut errors);
        validate_color(&self.color, &mut errors);
        validate_ttl(self.default_ttl.unwrap_or(0), &mut errors);
        validate_tags("tags", &self.tags, &mut errors);
        if let Some(source) = &self.source {
            if EnvironmentKey::parse(&source.key).is_err() {
                errors.push(FieldError::new(
                    "source.key",
                    format!("'{}' is not an environment key", source.key),
                ));
            }
            if source.version.is_some() {
                errors.push(FieldError::new(
                    "source.version",
                    "environments have no version here, so none can be checked; leave source.version out",
                ));
            }
        }
        ValidationError::check(errors)?;
        let key = key.ok_or_else(|| ValidationError::single("key", "invalid"))?;
        Ok(NewEnvironment { key, post: self })
    }
}

impl Environment {
    /// A new environment.
    pub fn create(new: NewEnvironment, creds: EnvironmentCredentials, now: i64) -> Self {
        let post = new.post;
        let mut tags = post.tags;
        normalize_tags(&mut tags);
        let key = new.key;
        Self {
            id: creds.id,
            key,
            name: post.name,
            api_key: creds.api_key,
            mobile_key: creds.mobile_key,
            color: post.color.to_ascii_uppercase(),
            default_ttl: post.default_ttl.unwrap_or(0),
            secure_mode: post.secure_mode.unwrap_or(false),
            default_track_events: post.default_track_events.unwrap_or(false),
            require_comments: post.require_comments.unwrap_or(false),
            confirm_changes: post.confirm_changes.unwrap_or(false),
            critical: post.critical.unwrap_or(false),
            tags,
            creation_date: now,
        }
    }

    /// Applies a JSON Patch. Patchable: `/name`, `/color`, `/defaultTtl`, `/secureMode`,
    /// `/defaultTrackEvents`, `/requireComments`, `/confirmChanges`, `/critical`, `/tags`.
    ///
    /// # Errors
    /// [`PatchError`] when an op touches another path, a `test` fails, or the result is invalid.
    pub fn apply_patch(&self, ops: &[patch::Operation]) -> Result<Environment, PatchError> {
        self.apply_patch_as_shown(&serde_json::Value::Null, ops)
    }

    /// [`Environment::apply_patch`] on this environment as the API shows it: with the `_links` of `shown` (its
    /// representation; nothing else is taken from it), which the operations may `test` and
    /// `copy` from but not write.
    ///
    /// # Errors
    /// As [`Environment::apply_patch`].
    pub fn apply_patch_as_shown(
        &self,
        shown: &serde_json::Value,
        ops: &[patch::Operation],
    ) -> Result<Environment, PatchError> {
        // The SDK and mobile keys are credentials: copied into another field, they would be
        // stored and shown (and written to the audit log) unmasked.
        for (index, op) in ops.iter().enumerate() {
            let from = match op {
                patch::Operation::Copy(copy) => &copy.from,
                patch::Operation::Move(moved) => &moved.from,
                _ => continue,
            };
            let first = from.tokens().next().map(|t| t.decoded().into_owned());
            if matches!(first.as_deref(), Some("apiKey" | "mobileKey")) {
                return Err(PatchError::Failed {
                    index,
                    path: from.to_string(),
                    reason: "an environment's SDK and mobile keys cannot be copied or moved; reset them with POST .../apiKey or .../mobileKey".into(),
                });
            }
        }
        const WRITABLE: [&str; 9] = [
            "name",
            "color",
            "defaultTtl",
            "secureMode",
            "defaultTrackEvents",
            "requireComments",
            "confirmChanges",
            "critical",
            "tags",
        ];
        let mut next =
            patch::apply_to_fields_as_shown(self, shown, &patch::LINKS_ONLY, ops, &WRITABLE)?;
        let mut errors = Vec::new();
        validate_name("name", &next.name, &mut errors);
        validate_color(&next.color, &mut errors);
        validate_ttl(next.default_ttl, &mut errors);
        validate_tags("tags", &next.tags, &mut errors);
        ValidationError::check(errors)?;
        normalize_tags(&mut next.tags);
        next.color = next.color.to_ascii_uppercase();
        next.creation_date = self.creation_date;
        Ok(next)
    }
}
