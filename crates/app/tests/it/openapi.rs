//! The OpenAPI document is valid OpenAPI 3.1, resolves every reference, and lists exactly the
//! routes the server has.

use actix_web::http::Method;
use serde_json::Value;

use crate::common::{request, spawn, Backend, OWNER};

fn document() -> Value {
    adapter_http::openapi_document().unwrap()
}

#[test]
fn document_is_openapi_3() {
    let doc = document();
    let parsed = oas3::from_json(doc.to_string())
        .unwrap_or_else(|e| panic!("not a valid OpenAPI 3.1 document: {e}"));
    assert!(parsed.openapi.starts_with("3.1"));
    assert!(!parsed.paths.unwrap_or_default().is_empty());
    // Every $ref points at a component that exists.
    fn refs(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref") {
                    out.push(r.clone());
                }
                map.values().for_each(|v| refs(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(!all.is_empty());
    for r in all {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("unexpected $ref {r}"));
        assert!(
            doc["components"]["schemas"].get(name).is_some(),
            "$ref {r} resolves to nothing"
        );
    }
    assert!(doc["components"]["securitySchemes"]["ApiKey"].is_object());
}

/// The routes of the issue, by method and path: exactly those the document lists.
const ISSUE_ROUTES: &[(&str, &str)] = &[
    ("get", "/api/v2"),
    ("get", "/api/v2/versions"),
    ("get", "/api/v2/caller-identity"),
    ("get", "/api/v2/flag-statuses/{projectKey}/{environmentKey}"),
    (
        "post",
        "/api/v2/projects/{projectKey}/environments/{environmentKey}/flags/evaluate",
    ),
    (
        "post",
        "/api/v2/projects/{projectKey}/environments/{environmentKey}/flags/{flagKey}/explain",
    ),
    (
        "get",
        "/api/v2/flag-statuses/{projectKey}/{environmentKey}/{flagKey}",
    ),
    ("get", "/api/v2/flag-status/{projectKey}/{flagKey}"),
    ("get", "/api/v2/openapi.json"),
    ("get", "/api/v2/projects"),
    ("post", "/api/v2/projects"),
    ("get", "/api/v2/projects/{projectKey}"),
    ("patch", "/api/v2/projects/{projectKey}"),
    ("delete", "/api/v2/projects/{projectKey}"),
    ("get", "/api/v2/projects/{projectKey}/environments"),
    ("post", "/api/v2/projects/{projectKey}/environments"),
    (
        "get",
        "/api/v2/projects/{projectKey}/environments/{environmentKey}",
    ),
    (
        "patch",
        "/api/v2/projects/{projectKey}/environments/{environmentKey}",
    ),
    (
        "delete",
        "/api/v2/projects/{projectKey}/environments/{environmentKey}",
    ),
    ("get", "/api/v2/flags/{projectKey}"),
    ("post", "/api/v2/flags/{projectKey}"),
    ("get", "/api/v2/flags/{projectKey}/{flagKey}"),
    ("patch", "/api/v2/flags/{projectKey}/{flagKey}"),
    ("delete", "/api/v2/flags/{projectKey}/{flagKey}"),
    ("post", "/api/v2/flags/{projectKey}/{flagKey}/copy"),
    (
        "get",
        "/api/v2/flags/{projectKey}/{flagKey}/dependent-flags",
    ),
    ("get", "/api/v2/tokens"),
    ("post", "/api/v2/tokens"),
    ("get", "/api/v2/tokens/{id}"),
    ("delete", "/api/v2/tokens/{id}"),
    ("patch", "/api/v2/tokens/{id}"),
    ("post", "/api/v2/tokens/{id}/reset"),
    (
        "post",
        "/api/v2/projects/{projectKey}/environments/{environmentKey}/apiKey",
    ),
    (
        "post",
        "/api/v2/projects/{projectKey}/environments/{environmentKey}/mobileKey",
    ),
    ("get", "/api/v2/segments/{projectKey}/{environmentKey}"),
    ("post", "/api/v2/segments/{projectKey}/{environmentKey}"),
    (
        "get",
        "/api/v2/segments/{projectKey}/{environmentKey}/{segmentKey}",
    ),
    (
        "patch",
        "/api/v2/segments/{projectKey}/{environmentKey}/{segmentKey}",
    ),
    (
        "delete",
        "/api/v2/segments/{projectKey}/{environmentKey}/{segmentKey}",
    ),
    ("get", "/api/v2/auditlog"),
    ("get", "/api/v2/auditlog/{id}"),
    ("get", "/api/v2/webhooks"),
    ("post", "/api/v2/webhooks"),
    ("get", "/api/v2/webhooks/{id}"),
    ("patch", "/api/v2/webhooks/{id}"),
    ("delete", "/api/v2/webhooks/{id}"),
    ("get", "/api/v2/webhooks/{id}/deliveries"),
    ("get", "/api/v2/roles"),
    ("post", "/api/v2/roles"),
    ("get", "/api/v2/roles/{customRoleKey}"),
    ("patch", "/api/v2/roles/{customRoleKey}"),
    ("delete", "/api/v2/roles/{customRoleKey}"),
    ("get", "/api/v2/members"),
    ("post", "/api/v2/members"),
    ("get", "/api/v2/members/{id}"),
    ("patch", "/api/v2/members/{id}"),
    ("delete", "/api/v2/members/{id}"),
    ("post", "/api/v2/members/{id}/teams"),
    ("get", "/api/v2/teams"),
    ("post", "/api/v2/teams"),
    ("get", "/api/v2/teams/{teamKey}"),
    ("patch", "/api/v2/teams/{teamKey}"),
    ("delete", "/api/v2/teams/{teamKey}"),
];

#[test]
fn document_lists_the_issue_routes() {
    let doc = document();
    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.push((method.clone(), path.clone()));
        }
    }
    documented.sort();
    let mut expected: Vec<(String, String)> = ISSUE_ROUTES
        .iter()
        .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    expected.sort();
    assert_eq!(documented, expected);
}

/// Every documented route is served: a request to it is routed (never the 404/405 fallback).
async fn every_documented_route_is_served(backend: Backend) {
    let app = spawn(backend).await;
    let doc = document();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let concrete = path
            .replace("{projectKey}", "nope")
            .replace("{environmentKey}", "nope")
            .replace("{flagKey}", "nope")
            .replace("{segmentKey}", "nope")
            .replace("{id}", "nope");
        for method in item.as_object().unwrap().keys() {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let mut req = request(method.clone(), &concrete, Some(OWNER));
            if method == Method::POST || method == Method::PATCH {
                req = req
                    .insert_header(("Content-Type", "application/json"))
                    .set_payload("{}");
            }
            let resp = app.send(req).await;
            assert_ne!(
                resp.status, 405,
                "{method} {path} is documented but not served: {}",
                resp.body
            );
            let unrouted = resp.status == 404
                && resp.body["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("no route"));
            assert!(!unrouted, "{method} {path} is documented but not served");
        }
    }
}

on_both_backends!(every_documented_route_is_served);

#[test]
fn document_describes_every_instruction_kind() {
    let doc = document();
    let instruction = &doc["components"]["schemas"]["Instruction"];
    assert_eq!(instruction["discriminator"]["propertyName"], "kind");
    let mut kinds: Vec<String> = instruction["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|variant| {
            // A variant is an object with a `kind` enum, or an allOf of which one part has it.
            let parts = variant["allOf"]
                .as_array()
                .cloned()
                .unwrap_or_else(|| vec![variant.clone()]);
            let kind = parts.iter().find_map(|part| {
                part["properties"]["kind"]["enum"][0]
                    .as_str()
                    .map(str::to_owned)
            });
            kind.unwrap_or_else(|| panic!("variant without a kind: {variant}"))
        })
        .collect();
    kinds.sort();
    let mut expected: Vec<String> = domain::instruction::Instruction::KINDS
        .iter()
        .map(|k| (*k).to_owned())
        .collect();
    expected.sort();
    assert_eq!(kinds, expected);
    assert!(kinds.len() >= 52);
}

/// Every operation of the document, with its path and method.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            out.push((path.clone(), method.clone(), operation.clone()));
        }
    }
    out
}

fn parameter<'a>(operation: &'a Value, name: &str) -> Option<&'a Value> {
    operation["parameters"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == name)
}

/// Only the methods the server serves are declared; the version header lists its values.
#[test]
fn document_declares_methods_and_the_version_values() {
    let doc = document();
    let versions: Vec<Value> = domain::version::ApiVersion::HEADER_VALUES
        .iter()
        .map(|v| Value::from(*v))
        .collect();
    for (path, method, operation) in operations(&doc) {
        assert!(
            ["get", "post", "patch", "delete"].contains(&method.as_str()),
            "{method} {path}: the server answers only GET, POST, PATCH and DELETE"
        );
        let header = parameter(&operation, "Svc-API-Version")
            .unwrap_or_else(|| panic!("{method} {path} lacks Svc-API-Version"));
        assert_eq!(header["in"], "header");
        assert_eq!(
            header["schema"]["enum"],
            Value::from(versions.clone()),
            "{path}"
        );
        for version in &versions {
            domain::version::ApiVersion::parse(version.as_str().unwrap()).unwrap();
        }
    }
}

/// `limit`, `offset`, `sort`, `filter` and `expand` state exactly what the parsers take.
#[test]
fn document_states_the_list_parameters() {
    use domain::query::*;
    fn names<F>(sorts: &[(&'static str, F)]) -> Vec<&'static str> {
        sorts.iter().map(|(name, _)| *name).collect()
    }
    let lists: [(&str, Vec<&str>, &[&str]); 6] = [
        ("/api/v2/projects", names(&PROJECT_SORTS), &PROJECT_FILTERS),
        (
            "/api/v2/projects/{projectKey}/environments",
            names(&ENVIRONMENT_SORTS),
            &ENVIRONMENT_FILTERS,
        ),
        (
            "/api/v2/flags/{projectKey}",
            names(&FLAG_SORTS),
            &FLAG_FILTERS,
        ),
        ("/api/v2/members", names(&MEMBER_SORTS), &MEMBER_FILTERS),
        (
            "/api/v2/roles",
            names(&CUSTOM_ROLE_SORTS),
            &CUSTOM_ROLE_FILTERS,
        ),
        (
            "/api/v2/segments/{projectKey}/{environmentKey}",
            names(&SEGMENT_SORTS),
            &SEGMENT_FILTERS,
        ),
    ];
    let doc = document();
    for (path, sorts, filters) in &lists {
        let list = &doc["paths"][*path]["get"];
        let mut expected: Vec<String> = sorts.iter().map(|s| (*s).to_owned()).collect();
        expected.extend(sorts.iter().map(|s| format!("-{s}")));
        let sort = parameter(list, "sort").unwrap_or_else(|| panic!("{path} sort"));
        assert_eq!(
            sort["schema"]["enum"],
            Value::from(expected.clone()),
            "{path}"
        );
        let filter = parameter(list, "filter").unwrap_or_else(|| panic!("{path} filter"));
        let description = filter["description"].as_str().unwrap();
        for field in *filters {
            assert!(
                description.contains(&format!("`{field}`")),
                "{path}: filter field {field} is not described: {description}"
            );
        }
    }
    let mut limits = 0;
    for (path, method, operation) in operations(&doc) {
        if let Some(limit) = parameter(&operation, "limit") {
            limits += 1;
            assert_eq!(limit["schema"]["type"], "integer", "{path}");
            assert_eq!(limit["schema"]["minimum"], 1, "{method} {path}");
            if path == "/api/v2/auditlog" {
                assert_eq!(limit["schema"]["maximum"], 20);
            } else {
                assert!(limit["schema"].get("maximum").is_none(), "{path}");
                assert!(
                    limit["description"].as_str().unwrap().contains("100"),
                    "{path}: the cap is stated"
                );
            }
        }
        if let Some(offset) = parameter(&operation, "offset") {
            assert_eq!(offset["schema"]["type"], "integer", "{path}");
            assert_eq!(offset["schema"]["minimum"], 0, "{path}");
        }
        if let Some(sort) = parameter(&operation, "sort") {
            assert!(sort["schema"]["enum"].is_array(), "{method} {path} sort");
        }
    }
    assert!(limits >= 7, "{limits}");
    for path in ["/api/v2/projects", "/api/v2/projects/{projectKey}"] {
        let expand = parameter(&doc["paths"][path]["get"], "expand").unwrap();
        assert_eq!(
            expand["schema"]["enum"],
            serde_json::json!(["environments"])
        );
    }
}
