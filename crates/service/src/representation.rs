//! [`PlainRepresentations`]: domain values as their own JSON, for tests of the use cases.

use domain::audit::{AuditEntry, ShownVersion};
use domain::custom_role::CustomRole;
use domain::environment::Environment;
use domain::flag::Flag;
use domain::member::Member;
use domain::project::Project;
use domain::segment::Segment;
use domain::team::Team;
use domain::webhook::Webhook;
use ports::{ApiResource, Maintainers, Representations};
use serde_json::Value;

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
