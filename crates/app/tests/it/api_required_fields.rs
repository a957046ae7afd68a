//! Every field the reference marks required (R) is in every response that carries the object,
//! list items included, and the OpenAPI document lists it in the schema's `required`.

use serde_json::{json, Value};

use crate::common::{spawn, Backend, TestApp};

/// The reference's R fields (§3), by the name of our schema. `titleVerb` and `title` are not R
/// in the reference, but flagsvc always sends them and says so.
const REQUIRED: &[(&str, &[&str])] = &[
    (
        "Project",
        &[
            "_id",
            "_links",
            "key",
            "name",
            "tags",
            "includeInSnippetByDefault",
        ],
    ),
    (
        "ProjectRep",
        &[
            "_id",
            "_links",
            "key",
            "name",
            "tags",
            "includeInSnippetByDefault",
            "environments",
        ],
    ),
    ("Projects", &["_links", "items"]),
    (
        "Environment",
        &[
            "_id",
            "_links",
            "key",
            "name",
            "apiKey",
            "mobileKey",
            "color",
            "defaultTtl",
            "secureMode",
            "defaultTrackEvents",
            "requireComments",
            "confirmChanges",
            "critical",
            "tags",
        ],
    ),
    ("Environments", &["items"]),
    (
        "Flag",
        &[
            "key",
            "name",
            "kind",
            "_version",
            "creationDate",
            "variations",
            "temporary",
            "tags",
            "archived",
            "customProperties",
            "experiments",
            "_links",
        ],
    ),
    ("Variation", &["value"]),
    ("CustomProperty", &["name", "value"]),
    ("Experiments", &["baselineIdx", "items"]),
    (
        "FlagConfig",
        &[
            "on",
            "archived",
            "salt",
            "sel",
            "lastModified",
            "version",
            "trackEvents",
            "trackEventsFallthrough",
            "_site",
            "_environmentName",
        ],
    ),
    ("Target", &["values", "variation"]),
    ("Rule", &["clauses", "trackEvents"]),
    ("Clause", &["attribute", "op", "values", "negate"]),
    ("Rollout", &["variations"]),
    ("WeightedVariation", &["variation", "weight"]),
    ("Prerequisite", &["key", "variation"]),
    ("ConfigSummary", &["prerequisites"]),
    (
        "VariationSummary",
        &["rules", "nullRules", "targets", "contextTargets"],
    ),
    ("FeatureFlags", &["items", "_links"]),
    (
        "Segment",
        &[
            "key",
            "name",
            "tags",
            "creationDate",
            "lastModifiedDate",
            "version",
            "deleted",
            "generation",
            "rules",
            "_links",
        ],
    ),
    ("SegmentRule", &["clauses"]),
    ("Segments", &["items", "_links"]),
    (
        "Member",
        &[
            "_id",
            "_links",
            "email",
            "role",
            "customRoles",
            "_pendingInvite",
            "_verified",
            "_lastSeen",
            "creationDate",
            "mfa",
        ],
    ),
    ("Members", &["items", "_links"]),
    ("MemberSummary", &["_links", "_id", "role", "email"]),
    (
        "TokenRep",
        &[
            "_id",
            "ownerId",
            "memberId",
            "creationDate",
            "lastModified",
            "_links",
        ],
    ),
    ("Webhook", &["_id", "_links", "url", "on", "tags"]),
    ("Webhooks", &["_links", "items"]),
    (
        "AuditEntry",
        &[
            "_id",
            "_accountId",
            "_links",
            "date",
            "accesses",
            "kind",
            "name",
            "description",
            "shortDescription",
            "titleVerb",
            "title",
        ],
    ),
    ("AuditEntries", &["items", "_links"]),
    ("FlagStatusRep", &["name", "_links"]),
    ("FeatureFlagStatuses", &["items", "_links"]),
    (
        "FeatureFlagStatusAcrossEnvironments",
        &["environments", "key", "_links"],
    ),
    ("FeatureFlagStatus", &["name"]),
    ("Link", &["href", "type"]),
];

/// Fields that are times in epoch milliseconds: `integer`, `int64`.
const EPOCH_MS: &[(&str, &str)] = &[
    ("Flag", "creationDate"),
    ("Flag", "archivedDate"),
    ("Flag", "deprecatedDate"),
    ("FlagConfig", "lastModified"),
    ("Segment", "creationDate"),
    ("Segment", "lastModifiedDate"),
    ("Member", "_lastSeen"),
    ("Member", "creationDate"),
    ("TokenRep", "creationDate"),
    ("TokenRep", "lastModified"),
    ("TokenRep", "lastUsed"),
    ("AuditEntry", "date"),
];

fn required(schema: &str) -> &'static [&'static str] {
    REQUIRED
        .iter()
        .find(|(name, _)| *name == schema)
        .map(|(_, fields)| *fields)
        .unwrap_or_else(|| panic!("no reference entry for {schema}"))
}

/// Asserts that `value` (a `what`) has every R field of `schema`, none of them null.
#[track_caller]
fn assert_required(schema: &str, what: &str, value: &Value) {
    for field in required(schema) {
        let got = value.get(*field);
        assert!(
            got.is_some_and(|v| !v.is_null()),
            "{what}: R field `{field}` of {schema} is missing or null in {value}"
        );
    }
}

/// Asserts the R fields of a flag, of its variations and of each environment's configuration.
#[track_caller]
fn assert_flag(what: &str, flag: &Value) {
    assert_required("Flag", what, flag);
    assert_required("Experiments", what, &flag["experiments"]);
    for variation in flag["variations"].as_array().unwrap() {
        assert_required("Variation", what, variation);
    }
    for (env, config) in flag["environments"].as_object().unwrap() {
        let what = format!("{what}, environment {env}");
        assert_required("FlagConfig", &what, config);
        for rule in config["rules"].as_array().into_iter().flatten() {
            assert_required("Rule", &what, rule);
            for clause in rule["clauses"].as_array().unwrap() {
                assert_required("Clause", &what, clause);
            }
        }
        for target in config["targets"].as_array().into_iter().flatten() {
            assert_required("Target", &what, target);
        }
        assert_required("ConfigSummary", &what, &config["_summary"]);
    }
}

#[track_caller]
fn items(body: &Value) -> &Vec<Value> {
    let items = body["items"].as_array().unwrap();
    assert!(!items.is_empty(), "an empty list proves nothing: {body}");
    items
}

/// Projects (created, read, listed) and their environments.
async fn check_projects_and_environments<S, B>(app: &TestApp<S>)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    // Projects: create (ProjectRep), get, list.
    let created = app.project("web").await;
    assert_required("ProjectRep", "POST /projects", &created);
    for env in created["environments"].as_array().unwrap() {
        assert_required("Environment", "POST /projects environments", env);
    }
    assert_required(
        "Project",
        "GET /projects/web",
        &app.get("/api/v2/projects/web").await.body,
    );
    let expanded = app
        .get("/api/v2/projects/web?expand=environments")
        .await
        .body;
    assert_required(
        "Environments",
        "expand=environments",
        &expanded["environments"],
    );
    let list = app.get("/api/v2/projects").await.body;
    assert_required("Projects", "GET /projects", &list);
    for project in items(&list) {
        assert_required("Project", "GET /projects item", project);
    }

    // Environments.
    let env = app
        .get("/api/v2/projects/web/environments/production")
        .await
        .body;
    assert_required("Environment", "GET environment", &env);
    let list = app.get("/api/v2/projects/web/environments").await.body;
    assert_required("Environments", "GET environments", &list);
    for env in items(&list) {
        assert_required("Environment", "GET environments item", env);
    }
}

/// Flag `dark-mode` of project `web`, created with a maintainer and custom properties, given a
/// rule and a target; read and listed.
async fn check_flags<S, B>(app: &TestApp<S>, owner_id: &str)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    // Flags, with a rule, a target, custom properties and a maintainer.
    let flag = app
        .post(
            "/api/v2/flags/web",
            json!({"key": "dark-mode", "name": "Dark mode", "maintainerId": owner_id,
                   "customProperties": {"jira": {"name": "Jira", "value": ["WEB-1"]}}}),
        )
        .await;
    assert_eq!(flag.status, 201, "{}", flag.body);
    assert_flag("POST /flags", &flag.body);
    assert_required(
        "CustomProperty",
        "POST /flags",
        &flag.body["customProperties"]["jira"],
    );
    let variation = flag.body["variations"][0]["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let patched = app
        .patch_with(
            "/api/v2/flags/web/dark-mode",
            crate::common::SEMANTIC,
            json!({"environmentKey": "production", "instructions": [
                {"kind": "addRule", "clauses": [{"attribute": "country", "op": "in", "values": ["fr"]}], "variationId": variation},
                {"kind": "addTargets", "values": ["ann"], "variationId": variation},
            ]}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_flag("PATCH /flags", &patched.body);
    let got = app.get("/api/v2/flags/web/dark-mode").await.body;
    assert_flag("GET flag", &got);
    assert_eq!(
        got["environments"]["production"]["rules"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_required("MemberSummary", "GET flag _maintainer", &got["_maintainer"]);
    let list = app
        .get("/api/v2/flags/web?env=production&summary=0")
        .await
        .body;
    assert_required("FeatureFlags", "GET flags", &list);
    for flag in items(&list) {
        assert_flag("GET flags item", flag);
        assert_required(
            "MemberSummary",
            "GET flags item _maintainer",
            &flag["_maintainer"],
        );
    }
}

/// Segment `beta` of project `web`, created and given a rule; read and listed.
async fn check_segments<S, B>(app: &TestApp<S>)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    // Segments, with a rule.
    let segment = app
        .post(
            "/api/v2/segments/web/production",
            json!({"key": "beta", "name": "Beta"}),
        )
        .await;
    assert_eq!(segment.status, 201, "{}", segment.body);
    assert_required("Segment", "POST segment", &segment.body);
    let patched = app
        .patch(
            "/api/v2/segments/web/production/beta",
            json!([{"op": "add", "path": "/rules/-", "value": {"clauses": [{"attribute": "email", "op": "endsWith", "values": ["@example.com"]}]}}]),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let got = app.get("/api/v2/segments/web/production/beta").await.body;
    assert_required("Segment", "GET segment", &got);
    assert_required("SegmentRule", "GET segment rule", &got["rules"][0]);
    let list = app.get("/api/v2/segments/web/production").await.body;
    assert_required("Segments", "GET segments", &list);
    for segment in items(&list) {
        assert_required("Segment", "GET segments item", segment);
    }
}

/// A member invited, a service token and a webhook created; read and listed.
async fn check_members_tokens_and_webhooks<S, B>(app: &TestApp<S>)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    // Members.
    let invited = app.member("bob@example.com", "writer").await;
    assert_required(
        "Member",
        "GET member",
        &app.get(&format!("/api/v2/members/{invited}")).await.body,
    );
    let list = app.get("/api/v2/members").await.body;
    assert_required("Members", "GET members", &list);
    for member in items(&list) {
        assert_required("Member", "GET members item", member);
    }

    // Tokens (the owner's and a service token).
    let token = app
        .post(
            "/api/v2/tokens",
            json!({"name": "ci", "role": "reader", "serviceToken": true}),
        )
        .await;
    assert_eq!(token.status, 201, "{}", token.body);
    assert_required("TokenRep", "POST token", &token.body);
    let id = token.body["_id"].as_str().unwrap();
    assert_required(
        "TokenRep",
        "GET token",
        &app.get(&format!("/api/v2/tokens/{id}")).await.body,
    );
    let list = app.get("/api/v2/tokens").await.body;
    for token in items(&list) {
        assert_required("TokenRep", "GET tokens item", token);
    }

    // Webhooks.
    let hook = app
        .post(
            "/api/v2/webhooks",
            json!({"url": "https://hooks.example.com/in", "sign": false, "on": true}),
        )
        .await;
    assert_eq!(hook.status, 200, "{}", hook.body);
    assert_required("Webhook", "POST webhook", &hook.body);
    let id = hook.body["_id"].as_str().unwrap();
    assert_required(
        "Webhook",
        "GET webhook",
        &app.get(&format!("/api/v2/webhooks/{id}")).await.body,
    );
    let list = app.get("/api/v2/webhooks").await.body;
    assert_required("Webhooks", "GET webhooks", &list);
    for hook in items(&list) {
        assert_required("Webhook", "GET webhooks item", hook);
    }
}

/// The audit log, after the steps above made an entry of every kind.
async fn check_audit_log<S, B>(app: &TestApp<S>)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    // The audit log: every entry of every kind made above, listed and one by one.
    let list = app.get("/api/v2/auditlog?limit=20").await.body;
    assert_required("AuditEntries", "GET auditlog", &list);
    let mut kinds: Vec<&str> = Vec::new();
    for entry in items(&list) {
        assert_required("AuditEntry", "GET auditlog item", entry);
        kinds.push(entry["kind"].as_str().unwrap());
        let id = entry["_id"].as_str().unwrap();
        let one = app.get(&format!("/api/v2/auditlog/{id}")).await;
        assert_eq!(one.status, 200);
        assert_required("AuditEntry", "GET auditlog/{id}", &one.body);
        assert_eq!(one.body["_accountId"], entry["_accountId"]);
        assert_eq!(one.body["title"], entry["title"]);
    }
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!(
        kinds,
        ["flag", "member", "project", "segment", "token", "webhook"]
    );
}

/// The statuses of flag `dark-mode`.
async fn check_flag_statuses<S, B>(app: &TestApp<S>)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    // Flag statuses.
    let list = app.get("/api/v2/flag-statuses/web/production").await.body;
    assert_required("FeatureFlagStatuses", "GET flag-statuses", &list);
    for status in items(&list) {
        assert_required("FlagStatusRep", "GET flag-statuses item", status);
    }
    assert_required(
        "FlagStatusRep",
        "GET flag-statuses one",
        &app.get("/api/v2/flag-statuses/web/production/dark-mode")
            .await
            .body,
    );
    let across = app.get("/api/v2/flag-status/web/dark-mode").await.body;
    assert_required(
        "FeatureFlagStatusAcrossEnvironments",
        "GET flag-status",
        &across,
    );
    for (env, status) in across["environments"].as_object().unwrap() {
        assert_required("FeatureFlagStatus", env, status);
    }
}

async fn served_objects_have_every_required_field(backend: Backend) {
    let app = spawn(backend).await;
    let owner_id = app.get("/api/v2/members/me").await.body["_id"]
        .as_str()
        .unwrap()
        .to_owned();

    check_projects_and_environments(&app).await;
    check_flags(&app, &owner_id).await;
    check_segments(&app).await;
    check_members_tokens_and_webhooks(&app).await;
    check_audit_log(&app).await;
    check_flag_statuses(&app).await;
}

/// The audit entries' account, titles and the flag's `_maintainer` hold the right values.
async fn audit_entries_name_the_account_and_the_change(backend: Backend) {
    let app = spawn(backend).await;
    let owner = app.get("/api/v2/members/me").await.body;
    app.project("web").await;
    app.flag("web", "dark-mode").await;
    let on = app
        .patch_with(
            "/api/v2/flags/web/dark-mode",
            crate::common::SEMANTIC,
            json!({"environmentKey": "production", "instructions": [{"kind": "turnFlagOn"}]}),
        )
        .await;
    assert_eq!(on.status, 200, "{}", on.body);
    let entries = app.get("/api/v2/auditlog").await.body;
    let entries = entries["items"].as_array().unwrap();
    assert_eq!(entries.len(), 3, "{entries:?}");
    // One account: every entry names the same 24-hex id, which is the one stored.
    let account = entries[0]["_accountId"].as_str().unwrap().to_owned();
    assert_eq!(account.len(), 24);
    assert!(account
        .chars()
        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    assert!(entries.iter().all(|e| e["_accountId"] == account));
    use ports::StoreExt;
    let stored = app.db.store.read_tx(|repo| repo.account_id()).unwrap();
    assert_eq!(stored.as_deref(), Some(account.as_str()));

    let email = owner["email"].as_str().unwrap();
    assert_eq!(entries[0]["titleVerb"], "turned on the flag");
    assert_eq!(
        entries[0]["title"],
        format!("[{email}](mailto:{email}) turned on the flag [dark-mode](/api/v2/flags/web/dark-mode) in `production`")
    );
    assert_eq!(entries[1]["titleVerb"], "created the flag");
    assert_eq!(
        entries[1]["title"],
        format!(
            "[{email}](mailto:{email}) created the flag [dark-mode](/api/v2/flags/web/dark-mode)"
        )
    );
    assert_eq!(entries[2]["titleVerb"], "created the project");

    // An entry stored before these fields existed gets them when read.
    let id = entries[2]["_id"].as_str().unwrap();
    app.db.execute_sql(&format!(
        "UPDATE audit_log SET entry = replace(replace(replace(entry, '\"_accountId\"', '\"_gone1\"'), '\"titleVerb\"', '\"_gone2\"'), '\"title\"', '\"_gone3\"') WHERE id = '{id}'"
    ));
    let old = app.get(&format!("/api/v2/auditlog/{id}")).await;
    assert_eq!(old.status, 200, "{}", old.body);
    assert_eq!(old.body["_accountId"], account);
    assert_eq!(old.body["titleVerb"], "created the project");
    assert_eq!(
        old.body["title"],
        format!("[{email}](mailto:{email}) created the project [web](/api/v2/projects/web)")
    );
}

async fn a_flag_shows_its_maintainer(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let bob = app.member("bob@example.com", "writer").await;
    let created = app
        .post(
            "/api/v2/flags/web",
            json!({"key": "f", "name": "F", "maintainerId": bob}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let expected = json!({
        "_links": {"self": {"href": format!("/api/v2/members/{bob}"), "type": "application/json"}},
        "_id": bob, "role": "writer", "email": "bob@example.com",
    });
    assert_eq!(created.body["_maintainer"], expected);
    assert_eq!(
        app.get("/api/v2/flags/web/f").await.body["_maintainer"],
        expected
    );
    assert_eq!(
        app.get("/api/v2/flags/web").await.body["items"][0]["_maintainer"],
        expected
    );
    // A maintainer that is no member: no `_maintainer`; none at all: none either.
    let patched = app
        .patch(
            "/api/v2/flags/web/f",
            json!([{"op": "replace", "path": "/maintainerId", "value": "000000000000000000000000"}]),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert!(
        patched.body.get("_maintainer").is_none(),
        "{}",
        patched.body
    );
    let patched = app
        .patch(
            "/api/v2/flags/web/f",
            json!([{"op": "replace", "path": "/maintainerId", "value": bob}]),
        )
        .await;
    assert_eq!(patched.body["_maintainer"], expected);
    app.patch(
        "/api/v2/flags/web/f",
        json!([{"op": "remove", "path": "/maintainerId"}]),
    )
    .await;
    let got = app.get("/api/v2/flags/web/f").await.body;
    assert!(got.get("_maintainer").is_none(), "{got}");
    // `_maintainer` is read-only.
    let refused = app
        .patch(
            "/api/v2/flags/web/f",
            json!([{"op": "add", "path": "/_maintainer", "value": expected}]),
        )
        .await;
    refused.assert_error(422, "patch_failed");
}

on_both_backends!(
    served_objects_have_every_required_field,
    audit_entries_name_the_account_and_the_change,
    a_flag_shows_its_maintainer,
);

fn document() -> Value {
    adapter_http::openapi_document().unwrap()
}

/// The required fields of a component schema, through `allOf` and `$ref`s, and its properties.
fn schema_parts(doc: &Value, name: &str) -> (Vec<String>, serde_json::Map<String, Value>) {
    let schema = &doc["components"]["schemas"][name];
    assert!(schema.is_object(), "no schema {name}");
    let mut required = Vec::new();
    let mut properties = serde_json::Map::new();
    let parts = schema["allOf"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| vec![schema.clone()]);
    for part in parts {
        let part = match part["$ref"].as_str() {
            Some(r) => {
                let (inner_required, inner_properties) =
                    schema_parts(doc, r.strip_prefix("#/components/schemas/").unwrap());
                required.extend(inner_required);
                properties.extend(inner_properties);
                continue;
            }
            None => part,
        };
        for field in part["required"].as_array().into_iter().flatten() {
            required.push(field.as_str().unwrap().to_owned());
        }
        if let Some(props) = part["properties"].as_object() {
            properties.extend(props.clone());
        }
    }
    (required, properties)
}

fn nullable(property: &Value) -> bool {
    property["type"]
        .as_array()
        .is_some_and(|types| types.iter().any(|t| t == "null"))
        || property["oneOf"]
            .as_array()
            .is_some_and(|options| options.iter().any(|o| o["type"] == "null"))
}

#[test]
fn the_document_requires_every_reference_required_field() {
    let doc = document();
    // Flagsvc sends `lastRequested: null` (it has no evaluation data): required and nullable.
    let really_null = [
        ("FlagStatusRep", "lastRequested"),
        ("FeatureFlagStatus", "lastRequested"),
    ];
    for (schema, fields) in REQUIRED {
        let (required, properties) = schema_parts(&doc, schema);
        for field in *fields {
            assert!(
                required.iter().any(|r| r == field),
                "{schema}.{field} is R in the reference but not required in the document (required: {required:?})"
            );
            let property = properties
                .get(*field)
                .unwrap_or_else(|| panic!("{schema}.{field} is required but not described"));
            assert!(
                !nullable(property),
                "{schema}.{field} is R and never null, but the document says nullable: {property}"
            );
        }
        for (field, property) in &properties {
            if nullable(property) {
                assert!(
                    really_null.contains(&(*schema, field.as_str())),
                    "{schema}.{field} is never null in responses, but the document says nullable: {property}"
                );
            }
        }
    }
    for (schema, field) in EPOCH_MS {
        let (_, properties) = schema_parts(&doc, schema);
        let property = &properties[*field];
        assert_eq!(property["type"], "integer", "{schema}.{field}: {property}");
        assert_eq!(property["format"], "int64", "{schema}.{field}: {property}");
    }
    // Time is epoch ms everywhere but `lastRequested`, an RFC 3339 date-time.
    let (_, properties) = schema_parts(&doc, "FlagStatusRep");
    assert_eq!(properties["lastRequested"]["format"], "date-time");
}
