//! The service's view of the wire shapes: what audit entries record of a resource is what the
//! API shows of it.

use domain::audit::ShownVersion;
use serde_json::Value;
use service::{ApiResource, Representations};

use super::{
    audit, environments, flags, hrefs, members, projects, roles, segments, teams, webhooks,
};

/// Renders domain values in their wire shapes, for the service (audit entries, webhook payloads).
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiRepresentations;

/// A wire shape as JSON; they all serialise infallibly (string keys, no custom serialisers).
fn to_json<T: serde::Serialize>(shape: &T) -> Value {
    serde_json::to_value(shape).unwrap_or(Value::Null)
}

impl Representations for ApiRepresentations {
    fn project(&self, project: &domain::project::Project) -> Value {
        to_json(&projects::Project::from(project))
    }

    fn environment(
        &self,
        project_key: &str,
        environment: &domain::environment::Environment,
    ) -> Value {
        to_json(&environments::Environment::of(project_key, environment))
    }

    fn member(&self, member: &domain::member::Member) -> Value {
        to_json(&members::Member::from(member))
    }

    fn flag(
        &self,
        project_key: &str,
        flag: &domain::flag::Flag,
        maintainers: &service::Maintainers,
    ) -> ShownVersion {
        ShownVersion::of(&flags::Flag::of(project_key, flag.clone(), maintainers))
    }

    fn flag_document(
        &self,
        project_key: &str,
        flag: &domain::flag::Flag,
        maintainers: &service::Maintainers,
    ) -> Value {
        to_json(&flags::Flag::of(project_key, flag.clone(), maintainers))
    }

    fn webhook(&self, webhook: &domain::webhook::Webhook) -> Value {
        to_json(&webhooks::Webhook::from(webhook))
    }

    fn custom_role(&self, role: &domain::custom_role::CustomRole) -> Value {
        to_json(&roles::CustomRole::from(role))
    }

    fn team(&self, team: &domain::team::Team) -> Value {
        to_json(&teams::Team::of(team, None))
    }

    fn segment(
        &self,
        project_key: &str,
        environment_key: &str,
        segment: &domain::segment::Segment,
    ) -> Value {
        to_json(&segments::Segment::of(
            project_key,
            environment_key,
            segment.clone(),
        ))
    }

    fn audit_entry_json(
        &self,
        entry: &domain::audit::AuditEntry,
    ) -> Result<String, serde_json::Error> {
        serde_json::to_string(&audit::AuditEntry::from(entry.clone()))
    }

    fn href(&self, resource: ApiResource<'_>) -> String {
        match resource {
            ApiResource::Project { key } => hrefs::project_href(key),
            ApiResource::Environment { project_key, key } => {
                hrefs::environment_href(project_key, key)
            }
            ApiResource::Flag { project_key, key } => hrefs::flag_href(project_key, key),
            ApiResource::Segment {
                project_key,
                environment_key,
                key,
            } => hrefs::segment_href(project_key, environment_key, key),
            ApiResource::Member { id } => hrefs::member_href(id),
            ApiResource::Token { id } => hrefs::token_href(id),
            ApiResource::Webhook { id } => hrefs::webhook_href(id),
            ApiResource::CustomRole { key } => hrefs::role_href(key),
            ApiResource::Team { key } => hrefs::team_href(key),
        }
    }
}
