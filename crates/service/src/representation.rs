//! How the API shows resources, for what the service records in that shape: the
//! `previousVersion`/`currentVersion` and target links of audit entries (and so webhook
//! payloads). The HTTP adapter owns the wire shapes and implements [`Representations`]; the
//! service never writes an API path itself.

use domain::audit::{AuditEntry, ShownVersion};
use domain::custom_role::CustomRole;
use domain::environment::Environment;
use domain::flag::Flag;
use domain::member::Member;
use domain::project::Project;
use domain::segment::Segment;
use domain::team::Team;
use domain::webhook::Webhook;
use serde_json::Value;

use crate::Maintainers;

/// A resource the API has an address for (what the audit log links to).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiResource<'a> {
    /// A project, by key.
    Project {
        /// The project's key.
        key: &'a str,
    },
    /// A member, by `_id`.
    Member {
        /// The member's `_id`.
        id: &'a str,
    },
    /// An access token, by `_id`.
    Token {
        /// The token's `_id`.
        id: &'a str,
    },
    /// A webhook, by `_id`.
    Webhook {
        /// The webhook's `_id`.
        id: &'a str,
    },
    /// An environment, by its project's key and its own.
    Environment {
        /// The project's key.
        project_key: &'a str,
        /// The environment's key.
        key: &'a str,
    },
    /// A segment, by its project's and environment's keys and its own.
    Segment {
        /// The project's key.
        project_key: &'a str,
        /// The environment's key.
        environment_key: &'a str,
        /// The segment's key.
        key: &'a str,
    },
    /// A team, by key.
    Team {
        /// The team's key.
        key: &'a str,
    },
    /// A custom role, by key.
    CustomRole {
        /// The role's key.
        key: &'a str,
    },
    /// A flag, by its project's key and its own.
    Flag {
        /// The project's key.
        project_key: &'a str,
        /// The flag's key.
        key: &'a str,
    },
}

/// Renders domain values as the API shows them.
pub trait Representations: Send + Sync {
    /// A project as `GET /projects/{projectKey}` shows it (without expansions).
    fn project(&self, project: &Project) -> Value;

    /// An environment of project `project_key` as
    /// `GET /projects/{projectKey}/environments/{environmentKey}` shows it.
    fn environment(&self, project_key: &str, environment: &Environment) -> Value;

    /// A member as `GET /members/{id}` shows it.
    fn member(&self, member: &Member) -> Value;

    /// A flag of project `project_key` as `GET /flags/{projectKey}/{flagKey}` shows it, with
    /// `maintainers` as its `_maintainer` and `_maintainerTeam`, as JSON text (what an audit
    /// entry records, and what the size of a new flag is measured on: rendered straight to
    /// text, as a flag change renders it twice).
    fn flag(&self, project_key: &str, flag: &Flag, maintainers: &Maintainers) -> ShownVersion;

    /// The same as a JSON tree, to apply a JSON Patch or merge patch to.
    fn flag_document(&self, project_key: &str, flag: &Flag, maintainers: &Maintainers) -> Value;

    /// A webhook as `GET /webhooks/{id}` shows it.
    fn webhook(&self, webhook: &Webhook) -> Value;

    /// A custom role as `GET /roles/{customRoleKey}` shows it.
    fn custom_role(&self, role: &CustomRole) -> Value;

    /// A team as `GET /teams/{teamKey}` shows it (without its member count, which is no part
    /// of the team's document).
    fn team(&self, team: &Team) -> Value;

    /// A segment of environment `environment_key` of project `project_key` as
    /// `GET /segments/{projectKey}/{environmentKey}/{segmentKey}` shows it (without the flags
    /// that use it).
    fn segment(&self, project_key: &str, environment_key: &str, segment: &Segment) -> Value;

    /// The JSON text of an audit entry as `GET /auditlog/{id}` shows it (the listing shows
    /// [`AuditEntry::listing`]; a webhook payload is the listing's), its fields in the order the
    /// API writes them.
    ///
    /// # Errors
    /// When the entry cannot be serialised.
    fn audit_entry_json(&self, entry: &AuditEntry) -> Result<String, serde_json::Error>;

    /// The API path of `resource` (its `self` link).
    fn href(&self, resource: ApiResource<'_>) -> String;
}

/// Domain values as their own JSON, without links: for tests of the use cases that do not
/// look at what the audit log records. A deployment uses the HTTP adapter's representations.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainRepresentations;

impl Representations for PlainRepresentations {
    fn project(&self, project: &Project) -> Value {
        serde_json::to_value(project).unwrap_or(Value::Null)
    }

    fn environment(&self, _project_key: &str, environment: &Environment) -> Value {
        serde_json::to_value(environment).unwrap_or(Value::Null)
    }

    fn member(&self, member: &Member) -> Value {
        serde_json::to_value(member).unwrap_or(Value::Null)
    }

    fn flag(&self, _project_key: &str, flag: &Flag, _maintainers: &Maintainers) -> ShownVersion {
        ShownVersion::of(flag)
    }

    fn flag_document(&self, _project_key: &str, flag: &Flag, _maintainers: &Maintainers) -> Value {
        serde_json::to_value(flag).unwrap_or(Value::Null)
    }

    fn webhook(&self, webhook: &Webhook) -> Value {
        serde_json::to_value(webhook).unwrap_or(Value::Null)
    }

    fn custom_role(&self, role: &CustomRole) -> Value {
        serde_json::to_value(role).unwrap_or(Value::Null)
    }

    fn team(&self, team: &Team) -> Value {
        serde_json::to_value(team).unwrap_or(Value::Null)
    }

    fn segment(&self, _project_key: &str, _environment_key: &str, segment: &Segment) -> Value {
        serde_json::to_value(segment).unwrap_or(Value::Null)
    }

    fn audit_entry_json(&self, entry: &AuditEntry) -> Result<String, serde_json::Error> {
        serde_json::to_string(entry)
    }

    fn href(&self, resource: ApiResource<'_>) -> String {
        match resource {
            ApiResource::Project { key } => format!("project/{key}"),
            ApiResource::Environment { project_key, key } => {
                format!("project/{project_key}/environment/{key}")
            }
            ApiResource::Flag { project_key, key } => format!("project/{project_key}/flag/{key}"),
            ApiResource::Segment {
                project_key,
                environment_key,
                key,
            } => format!("project/{project_key}/environment/{environment_key}/segment/{key}"),
            ApiResource::Member { id } => format!("member/{id}"),
            ApiResource::Token { id } => format!("token/{id}"),
            ApiResource::Webhook { id } => format!("webhook/{id}"),
            ApiResource::CustomRole { key } => format!("role/{key}"),
            ApiResource::Team { key } => format!("team/{key}"),
        }
    }
}
