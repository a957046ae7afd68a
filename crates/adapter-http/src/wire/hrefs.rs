//! Every API path a representation links to (`_links`, `href`s), in one place.

/// The API path of the token collection.
pub const TOKENS_HREF: &str = "/api/v2/tokens";

/// The API path of the team collection.
pub const TEAMS_HREF: &str = "/api/v2/teams";

/// The API path of the custom-role collection.
pub const ROLES_HREF: &str = "/api/v2/roles";

/// The API path of the webhook collection.
pub const WEBHOOKS_HREF: &str = "/api/v2/webhooks";

/// The API path of the project `key`.
pub fn project_href(key: &str) -> String {
    format!("/api/v2/projects/{key}")
}

/// The API path of the environments of project `key`.
pub fn environments_href(project_key: &str) -> String {
    format!("/api/v2/projects/{project_key}/environments")
}

/// The API path of environment `key` of project `project_key`.
pub fn environment_href(project_key: &str, key: &str) -> String {
    format!("{}/{key}", environments_href(project_key))
}

/// The API path of the flags of project `project_key`.
pub fn flags_href(project_key: &str) -> String {
    format!("/api/v2/flags/{project_key}")
}

/// The API path of flag `key` of project `project_key`.
pub fn flag_href(project_key: &str, key: &str) -> String {
    format!("{}/{key}", flags_href(project_key))
}

/// The API path of the segments of environment `environment_key` of project `project_key`.
pub fn segments_href(project_key: &str, environment_key: &str) -> String {
    format!("/api/v2/segments/{project_key}/{environment_key}")
}

/// The API path of segment `key` of environment `environment_key` of project `project_key`.
pub fn segment_href(project_key: &str, environment_key: &str, key: &str) -> String {
    format!("{}/{key}", segments_href(project_key, environment_key))
}

/// The API path of member `id`.
pub fn member_href(id: &str) -> String {
    format!("/api/v2/members/{id}")
}

/// The API path of token `id`.
pub fn token_href(id: &str) -> String {
    format!("{TOKENS_HREF}/{id}")
}

/// The API path of team `key`.
pub fn team_href(key: &str) -> String {
    format!("{TEAMS_HREF}/{key}")
}

/// The API path of custom role `key`.
pub fn role_href(key: &str) -> String {
    format!("{ROLES_HREF}/{key}")
}

/// The API path of webhook `id`.
pub fn webhook_href(id: &str) -> String {
    format!("{WEBHOOKS_HREF}/{id}")
}

/// The API path of the audit log.
pub fn audit_log_href() -> String {
    "/api/v2/auditlog".to_owned()
}

/// The API path of audit entry `id`.
pub fn audit_entry_href(id: &str) -> String {
    format!("{}/{id}", audit_log_href())
}
