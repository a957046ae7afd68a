//! What each route is decided as: the actions of the catalogue (`domain::policy::actions`) that
//! a request to it may consist of. `cargo xtask roles` renders it into `docs/roles.md` (the
//! catalogue's "Needed by" column); the tests hold it to the served document (every route has a
//! row) and to the catalogue (every action exists, and every action is needed by something).

use domain::policy::actions::{ActionInfo, ResourceKind};

/// A route (method and path under `/api/v2`) and the actions on resources of one kind that a
/// request to it may consist of (which of them it does depends on the request: a JSON Patch of
/// a flag is decided as the actions its changes are).
#[derive(Debug, Clone, Copy)]
pub struct RouteActions {
    /// `GET`, `POST`, `PATCH` or `DELETE`.
    pub method: &'static str,
    /// The path under `/api/v2`, with its parameters as the document names them.
    pub path: &'static str,
    /// The kind of resource the actions are done to.
    pub kind: ResourceKind,
    /// The actions.
    pub actions: &'static [&'static str],
}

const fn route(
    method: &'static str,
    path: &'static str,
    kind: ResourceKind,
    actions: &'static [&'static str],
) -> RouteActions {
    RouteActions {
        method,
        path,
        kind,
        actions,
    }
}

use ResourceKind::{
    Account, Environment, Flag, Member, Project, Role, Segment, Team, Token, Webhook,
};

const VIEW_PROJECT: &[&str] = &["viewProject"];

/// What a flag's PATCH may change (every flag action but creating, cloning and copying).
const FLAG_PATCH: &[&str] = &[
    "deleteFlag",
    "updateName",
    "updateDescription",
    "updateTags",
    "updateTemporary",
    "updateFlagVariations",
    "updateFlagDefaults",
    "updateMaintainer",
    "updateClientSideFlagAvailability",
    "updateFlagCustomProperties",
    "updateGlobalArchived",
    "updateDeprecated",
    "updateOn",
    "updateRules",
    "updateFallthrough",
    "updateOffVariation",
    "updatePrerequisites",
    "updateTargets",
    "updateTrackEvents",
    "updateTrackEventsFallthrough",
    "updateArchived",
];

/// Routes no policy decides: they read nothing of the account but the caller itself.
pub const UNDECIDED: [(&str, &str); 4] = [
    ("GET", ""),
    ("GET", "/openapi.json"),
    ("GET", "/versions"),
    ("GET", "/caller-identity"),
];

/// Every other route, with what it is decided as.
pub const ROUTES: &[RouteActions] = &[
    route("GET", "/auditlog", Account, &["viewAuditLog"]),
    route("GET", "/auditlog/{id}", Account, &["viewAuditLog"]),
    route("GET", "/projects", Project, VIEW_PROJECT),
    route("POST", "/projects", Project, &["createProject"]),
    route("POST", "/projects", Environment, &["createEnvironment"]),
    route("GET", "/projects/{projectKey}", Project, VIEW_PROJECT),
    route(
        "PATCH",
        "/projects/{projectKey}",
        Project,
        &[
            "updateName",
            "updateTags",
            "updateDefaultClientSideAvailability",
            "updateIncludeInSnippetByDefault",
            "updateFlagNamingConvention",
        ],
    ),
    route(
        "DELETE",
        "/projects/{projectKey}",
        Project,
        &["deleteProject"],
    ),
    // Changes inside a project read what they change first.
    route("PATCH", "/projects/{projectKey}", Project, VIEW_PROJECT),
    route(
        "PATCH",
        "/projects/{projectKey}/environments/{environmentKey}",
        Project,
        VIEW_PROJECT,
    ),
    route(
        "PATCH",
        "/flags/{projectKey}/{flagKey}",
        Project,
        VIEW_PROJECT,
    ),
    route(
        "DELETE",
        "/flags/{projectKey}/{flagKey}",
        Project,
        VIEW_PROJECT,
    ),
    route(
        "POST",
        "/flags/{projectKey}/{flagKey}/copy",
        Project,
        VIEW_PROJECT,
    ),
    route(
        "PATCH",
        "/segments/{projectKey}/{environmentKey}/{segmentKey}",
        Project,
        VIEW_PROJECT,
    ),
    route(
        "GET",
        "/projects/{projectKey}/environments",
        Project,
        VIEW_PROJECT,
    ),
    route(
        "POST",
        "/projects/{projectKey}/environments",
        Environment,
        &["createEnvironment", "cloneEnvironment"],
    ),
    route(
        "GET",
        "/projects/{projectKey}/environments/{environmentKey}",
        Project,
        VIEW_PROJECT,
    ),
    route(
        "PATCH",
        "/projects/{projectKey}/environments/{environmentKey}",
        Environment,
        &[
            "updateName",
            "updateColor",
            "updateTtl",
            "updateSecureMode",
            "updateDefaultTrackEvents",
            "updateRequireComments",
            "updateConfirmChanges",
            "updateCritical",
            "updateTags",
        ],
    ),
    route(
        "DELETE",
        "/projects/{projectKey}/environments/{environmentKey}",
        Environment,
        &["deleteEnvironment"],
    ),
    route(
        "POST",
        "/projects/{projectKey}/environments/{environmentKey}/apiKey",
        Environment,
        &["updateApiKey"],
    ),
    route(
        "POST",
        "/projects/{projectKey}/environments/{environmentKey}/mobileKey",
        Environment,
        &["updateMobileKey"],
    ),
    route("GET", "/flags/{projectKey}", Project, VIEW_PROJECT),
    route(
        "POST",
        "/flags/{projectKey}",
        Flag,
        &["createFlag", "cloneFlag"],
    ),
    route(
        "GET",
        "/flags/{projectKey}/{flagKey}",
        Project,
        VIEW_PROJECT,
    ),
    route("PATCH", "/flags/{projectKey}/{flagKey}", Flag, FLAG_PATCH),
    route(
        "DELETE",
        "/flags/{projectKey}/{flagKey}",
        Flag,
        &["deleteFlag"],
    ),
    route(
        "POST",
        "/flags/{projectKey}/{flagKey}/copy",
        Flag,
        &["copyFlagConfigFrom", "copyFlagConfigTo"],
    ),
    route(
        "GET",
        "/flags/{projectKey}/{flagKey}/dependent-flags",
        Project,
        VIEW_PROJECT,
    ),
    route(
        "GET",
        "/flag-status/{projectKey}/{flagKey}",
        Project,
        VIEW_PROJECT,
    ),
    route(
        "GET",
        "/flag-statuses/{projectKey}/{environmentKey}",
        Project,
        VIEW_PROJECT,
    ),
    route(
        "GET",
        "/flag-statuses/{projectKey}/{environmentKey}/{flagKey}",
        Project,
        VIEW_PROJECT,
    ),
    route(
        "POST",
        "/projects/{projectKey}/environments/{environmentKey}/flags/evaluate",
        Project,
        VIEW_PROJECT,
    ),
    route(
        "POST",
        "/projects/{projectKey}/environments/{environmentKey}/flags/{flagKey}/explain",
        Project,
        VIEW_PROJECT,
    ),
    route(
        "GET",
        "/segments/{projectKey}/{environmentKey}",
        Project,
        VIEW_PROJECT,
    ),
    route(
        "POST",
        "/segments/{projectKey}/{environmentKey}",
        Segment,
        &["createSegment"],
    ),
    route(
        "GET",
        "/segments/{projectKey}/{environmentKey}/{segmentKey}",
        Project,
        VIEW_PROJECT,
    ),
    route(
        "PATCH",
        "/segments/{projectKey}/{environmentKey}/{segmentKey}",
        Segment,
        &[
            "updateName",
            "updateDescription",
            "updateTags",
            "updateIncluded",
            "updateExcluded",
            "updateRules",
        ],
    ),
    route(
        "DELETE",
        "/segments/{projectKey}/{environmentKey}/{segmentKey}",
        Segment,
        &["deleteSegment"],
    ),
    route("GET", "/members", Member, &["viewMembers"]),
    route(
        "POST",
        "/members",
        Member,
        &["createMember", "updateCustomRole", "updateMemberTeams"],
    ),
    route("POST", "/members", Team, &["updateTeamMembers"]),
    route("GET", "/members/{id}", Member, &["viewMembers"]),
    route(
        "PATCH",
        "/members/{id}",
        Member,
        &["updateMemberName", "updateMemberRole", "updateCustomRole"],
    ),
    route("PATCH", "/members/{id}", Account, &["transferOwnership"]),
    route("DELETE", "/members/{id}", Member, &["deleteMember"]),
    route("DELETE", "/members/{id}", Team, &["updateTeamMembers"]),
    route(
        "POST",
        "/members/{id}/teams",
        Member,
        &["updateMemberTeams"],
    ),
    route("POST", "/members/{id}/teams", Team, &["updateTeamMembers"]),
    route("GET", "/tokens", Token, &["viewAccessTokens"]),
    route("POST", "/tokens", Token, &["createAccessToken"]),
    route("GET", "/tokens/{id}", Token, &["viewAccessTokens"]),
    route("PATCH", "/tokens/{id}", Token, &["updateAccessToken"]),
    route("DELETE", "/tokens/{id}", Token, &["deleteAccessToken"]),
    route("POST", "/tokens/{id}/reset", Token, &["resetAccessToken"]),
    route("GET", "/webhooks", Webhook, &["viewWebhooks"]),
    route("POST", "/webhooks", Webhook, &["createWebhook"]),
    route("GET", "/webhooks/{id}", Webhook, &["viewWebhooks"]),
    route("PATCH", "/webhooks/{id}", Webhook, &["updateWebhook"]),
    route("DELETE", "/webhooks/{id}", Webhook, &["deleteWebhook"]),
    route(
        "GET",
        "/webhooks/{id}/deliveries",
        Webhook,
        &["viewWebhooks"],
    ),
    route("GET", "/roles", Role, &["viewRoles"]),
    route("POST", "/roles", Role, &["createRole"]),
    route("GET", "/roles/{customRoleKey}", Role, &["viewRoles"]),
    route("PATCH", "/roles/{customRoleKey}", Role, &["updateRole"]),
    route("DELETE", "/roles/{customRoleKey}", Role, &["deleteRole"]),
    route("GET", "/teams", Team, &["viewTeams"]),
    route(
        "POST",
        "/teams",
        Team,
        &["createTeam", "updateTeamCustomRoles", "updateTeamMembers"],
    ),
    route("GET", "/teams/{teamKey}", Team, &["viewTeams"]),
    route(
        "PATCH",
        "/teams/{teamKey}",
        Team,
        &[
            "updateTeamName",
            "updateTeamDescription",
            "updateTeamCustomRoles",
            "updateTeamMembers",
        ],
    ),
    route(
        "DELETE",
        "/teams/{teamKey}",
        Team,
        &["deleteTeam", "updateTeamMembers", "updateTeamCustomRoles"],
    ),
];

/// The routes a request to which may need `action` (`` `PATCH /flags/{projectKey}/{flagKey}` ``),
/// for the catalogue's "Needed by" column.
///
/// ```
/// let on = domain::policy::actions::find("updateOn", domain::policy::actions::ResourceKind::Flag).unwrap();
/// assert_eq!(adapter_http::catalogue::routes_needing(on), ["`PATCH /flags/{projectKey}/{flagKey}`"]);
/// ```
pub fn routes_needing(action: &ActionInfo) -> Vec<String> {
    ROUTES
        .iter()
        .filter(|r| r.kind == action.kind && r.actions.contains(&action.name))
        .map(|r| format!("`{} {}`", r.method, r.path))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::policy::actions;

    #[test]
    fn every_route_of_the_document_has_its_actions() {
        let doc = serde_json::to_value(crate::openapi::document()).unwrap();
        let mut documented: Vec<(String, String)> = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for method in item.as_object().unwrap().keys() {
                let path = path.strip_prefix("/api/v2").unwrap_or(path);
                documented.push((method.to_uppercase(), path.to_owned()));
            }
        }
        documented.sort();
        let mut listed: Vec<(String, String)> = ROUTES
            .iter()
            .map(|r| (r.method, r.path))
            .chain(UNDECIDED)
            .map(|(m, p)| (m.to_owned(), p.to_owned()))
            .collect();
        listed.sort();
        listed.dedup();
        assert_eq!(
            documented, listed,
            "every route needs a row in ROUTES or UNDECIDED"
        );
    }

    #[test]
    fn every_action_is_catalogued_and_needed() {
        for route in ROUTES {
            for name in route.actions {
                assert!(
                    actions::find(name, route.kind).is_some(),
                    "{} {}: '{name}' is no {} action",
                    route.method,
                    route.path,
                    route.kind
                );
            }
        }
        let unneeded: Vec<String> = actions::ALL
            .iter()
            .filter(|a| routes_needing(a).is_empty())
            .map(|a| format!("{} ({})", a.name, a.kind))
            .collect();
        assert!(unneeded.is_empty(), "actions no route needs: {unneeded:?}");
    }
}
