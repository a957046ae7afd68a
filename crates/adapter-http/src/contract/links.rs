//! OpenAPI links: from each creating operation to the operations on what it created.

use serde_json::{json, Map, Value};

/// OpenAPI links from a creating operation to the operations that act on what it created:
/// (path, method, status, targets, parameters as runtime expressions). Clients (and the
/// stateful phase of `cargo xtask conformance`) follow them from a creation to its uses.
pub(super) type LinkSource = (
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
);

pub(super) const LINKS: [LinkSource; 9] = [
    (
        "/api/v2/roles",
        "post",
        "201",
        &["get_custom_role", "patch_custom_role", "delete_custom_role"],
        &[("customRoleKey", "$response.body#/key")],
    ),
    (
        "/api/v2/teams",
        "post",
        "201",
        &["get_team", "patch_team", "delete_team"],
        &[("teamKey", "$response.body#/key")],
    ),
    (
        "/api/v2/projects",
        "post",
        "201",
        &[
            "get_project",
            "patch_project",
            "delete_project",
            "list_environments",
            "create_environment",
            "list_flags",
            "create_flag",
        ],
        &[("projectKey", "$response.body#/key")],
    ),
    (
        "/api/v2/projects/{projectKey}/environments",
        "post",
        "201",
        &[
            "get_environment",
            "patch_environment",
            "delete_environment",
            "reset_sdk_key",
            "reset_mobile_key",
            "list_segments",
            "create_segment",
            "list_flag_statuses",
        ],
        &[
            ("projectKey", "$request.path.projectKey"),
            ("environmentKey", "$response.body#/key"),
        ],
    ),
    (
        "/api/v2/flags/{projectKey}",
        "post",
        "201",
        &[
            "get_flag",
            "patch_flag",
            "delete_flag",
            "copy_flag",
            "flag_status_across_environments",
        ],
        &[
            ("projectKey", "$request.path.projectKey"),
            ("flagKey", "$response.body#/key"),
        ],
    ),
    (
        "/api/v2/segments/{projectKey}/{environmentKey}",
        "post",
        "201",
        &["get_segment", "patch_segment", "delete_segment"],
        &[
            ("projectKey", "$request.path.projectKey"),
            ("environmentKey", "$request.path.environmentKey"),
            ("segmentKey", "$response.body#/key"),
        ],
    ),
    (
        "/api/v2/tokens",
        "post",
        "201",
        &["get_token", "patch_token", "delete_token", "reset_token"],
        &[("id", "$response.body#/_id")],
    ),
    (
        "/api/v2/webhooks",
        "post",
        "200",
        &[
            "get_webhook",
            "patch_webhook",
            "delete_webhook",
            "webhook_deliveries",
        ],
        &[("id", "$response.body#/_id")],
    ),
    (
        "/api/v2/members",
        "post",
        "201",
        &["get_member", "patch_member", "delete_member"],
        &[("id", "$response.body#/items/0/_id")],
    ),
];

pub(super) fn add_links(doc: &mut Value) {
    for (path, method, status, targets, parameters) in LINKS {
        let Some(response) = doc
            .get_mut("paths")
            .and_then(|paths| paths.get_mut(path))
            .and_then(|item| item.get_mut(method))
            .and_then(|operation| operation.get_mut("responses"))
            .and_then(|responses| responses.get_mut(status))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        let parameters: Map<String, Value> = parameters
            .iter()
            .map(|(name, expression)| ((*name).to_owned(), json!(expression)))
            .collect();
        let links: Map<String, Value> = targets
            .iter()
            .map(|target| {
                (
                    (*target).to_owned(),
                    json!({"operationId": target, "parameters": parameters}),
                )
            })
            .collect();
        response.insert("links".into(), Value::Object(links));
    }
}
