//! How the API shows resources, for what the service records in that shape: the
//! `previousVersion`/`currentVersion` and target links of audit entries (and so webhook
//! payloads). The HTTP adapter owns the wire shapes and implements [`Representations`]; the
//! service asks it (a port, so that the use cases never write an API path themselves).

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

/// Who maintains a flag, as the API shows it (`_maintainer`, `_maintainerTeam`): the member its
/// `maintainerId` names and the team its `maintainerTeamKey` names, each while it exists.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Maintainers {
    /// The maintaining member.
    pub member: Option<Member>,
    /// The maintaining team.
    pub team: Option<Team>,
}
