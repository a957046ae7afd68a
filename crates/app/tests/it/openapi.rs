//! The OpenAPI document is valid OpenAPI 3.1, resolves every reference, and lists exactly the
//! routes the server has.

use actix_web::http::Method;
use serde_json::Value;

use crate::common::{request, spawn, Backend, OWNER};

fn document() -> Value {
    serde_json::to_value(adapter_http::openapi_document()).unwrap()
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

#[test]
fn document_lists_the_issue_routes() {
    let doc = document();
    let expected = [
        ("get", "/api/v2"),
        ("get", "/api/v2/versions"),
        ("get", "/api/v2/caller-identity"),
        ("get", "/api/v2/flag-statuses/{projectKey}/{environmentKey}"),
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
        ("get", "/api/v2/members"),
        ("post", "/api/v2/members"),
        ("get", "/api/v2/members/{id}"),
        ("patch", "/api/v2/members/{id}"),
        ("delete", "/api/v2/members/{id}"),
    ];
    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.push((method.clone(), path.clone()));
        }
    }
    documented.sort();
    let mut expected: Vec<(String, String)> = expected
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
