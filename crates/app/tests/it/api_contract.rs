//! What an adversarial probe of the contract found, pinned: a preview that cannot become a real
//! write by a spelling, version tests that compare numbers by value, emails that cannot smuggle
//! Markdown into audit titles, and service tokens named as themselves in the audit log.

use serde_json::json;

use crate::common::{spawn, Backend, SEMANTIC};

/// `dryRun` given twice, or misspelled, is refused; neither becomes a real write.
async fn a_preview_never_turns_into_a_write(backend: Backend) {
    let app = spawn(backend).await;
    app.project("dr").await;
    app.flag("dr", "f").await;
    let turn_on = json!({"environmentKey": "test", "instructions": [{"kind": "turnFlagOn"}]});
    for query in ["dryRun=false&dryRun=true", "dryRun=true&dryRun=false"] {
        let resp = app
            .patch_with(
                &format!("/api/v2/flags/dr/f?{query}"),
                SEMANTIC,
                turn_on.clone(),
            )
            .await;
        resp.assert_error(400, "invalid_request");
        assert!(
            resp.body["message"].as_str().unwrap().contains("dryRun"),
            "{}",
            resp.body
        );
    }
    let misspelled = app
        .patch_with("/api/v2/flags/dr/f?dryrun=true", SEMANTIC, turn_on.clone())
        .await;
    misspelled.assert_error(400, "invalid_request");
    assert!(
        misspelled.body["message"]
            .as_str()
            .unwrap()
            .contains("'dryrun'"),
        "{}",
        misspelled.body
    );
    let stored = app.get("/api/v2/flags/dr/f").await.body;
    assert_eq!(stored["_version"], 1);
    assert_eq!(stored["environments"]["test"]["on"], false);
    // Reads ignore parameters they do not know (caches add their own).
    assert_eq!(app.get("/api/v2/flags/dr/f?_=123").await.status, 200);
}

/// A `test` of a version written as `2.0` is a test of 2 (RFC 6902: numbers by value).
async fn version_tests_compare_numbers_by_value(backend: Backend) {
    let app = spawn(backend).await;
    app.project("vt").await;
    app.flag("vt", "f").await;
    let renamed = app
        .patch(
            "/api/v2/flags/vt/f",
            json!([
                {"op": "test", "path": "/_version", "value": 1.0},
                {"op": "replace", "path": "/name", "value": "renamed"}
            ]),
        )
        .await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    assert_eq!(renamed.body["_version"], 2);
    app.patch(
        "/api/v2/flags/vt/f",
        json!([
            {"op": "test", "path": "/version", "value": 1e0},
            {"op": "replace", "path": "/name", "value": "again"}
        ]),
    )
    .await
    .assert_error(409, "optimistic_locking_error");
    let stored = app.get("/api/v2/flags/vt/f").await.body;
    assert_eq!(stored["name"], "renamed");
}

/// Emails with the characters RFC 5322 keeps out of an address are refused, so no member can
/// carry a Markdown link into the audit log's titles.
async fn emails_cannot_carry_markdown(backend: Backend) {
    let app = spawn(backend).await;
    for email in [
        "x)[Reset](https://evil.example/login)(@a.co",
        "a<b>@c.co",
        "a,b@c.co",
        "\"a\"@b.co",
    ] {
        let resp = app.post("/api/v2/members", json!([{"email": email}])).await;
        resp.assert_error(400, "invalid_request");
        assert_eq!(resp.body["errors"][0]["attribute"], "[0].email", "{email}");
    }
    assert_eq!(app.db.count_rows("members"), 1);
}

/// A change made with a service token is the token's in the audit title, not its creator's.
async fn service_tokens_are_named_in_audit_titles(backend: Backend) {
    let app = spawn(backend).await;
    app.project("st").await;
    app.flag("st", "f").await;
    let created = app
        .post(
            "/api/v2/tokens",
            json!({"name": "deploy-bot", "role": "writer", "serviceToken": true}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let service = created.body["token"].as_str().unwrap().to_owned();
    let on = app
        .send(
            crate::common::request(
                actix_web::http::Method::PATCH,
                "/api/v2/flags/st/f",
                Some(&service),
            )
            .insert_header(("Content-Type", SEMANTIC))
            .set_payload(
                json!({"environmentKey": "test", "instructions": [{"kind": "turnFlagOn"}]})
                    .to_string(),
            ),
        )
        .await;
    assert_eq!(on.status, 200, "{}", on.body);
    let entry = &app.get("/api/v2/auditlog?limit=1").await.body["items"][0];
    let title = entry["title"].as_str().unwrap();
    assert!(
        title.starts_with("the service token deploy-bot "),
        "{title}"
    );
    assert!(!title.contains("mailto:"), "{title}");
}

/// A body that does not fit its schema is refused naming the field by its path, in JSON terms.
async fn body_errors_name_the_field(backend: Backend) {
    let app = spawn(backend).await;
    app.project("be").await;
    let no_key = app
        .post(
            "/api/v2/projects/be/environments",
            json!({"key": "staging", "name": "Staging", "color": "F5A623", "source": {}}),
        )
        .await;
    no_key.assert_error(400, "invalid_request");
    assert_eq!(
        no_key.body["errors"][0]["attribute"], "source",
        "{}",
        no_key.body
    );
    assert!(
        no_key.body["message"].as_str().unwrap().contains("`key`"),
        "{}",
        no_key.body
    );
    let fraction = app
        .post(
            "/api/v2/flags/be",
            json!({"key": "f", "name": "f", "defaults": {"onVariation": 0.5, "offVariation": 1}}),
        )
        .await;
    fraction.assert_error(400, "invalid_request");
    assert_eq!(
        fraction.body["errors"][0]["attribute"], "defaults.onVariation",
        "{}",
        fraction.body
    );
    let message = fraction.body["message"].as_str().unwrap();
    assert!(message.contains("a non-negative integer"), "{message}");
    assert!(!message.contains("usize"), "{message}");
}

/// Variation and custom property names follow the rules the document states for them.
async fn variation_and_property_names_are_checked(backend: Backend) {
    let app = spawn(backend).await;
    app.project("vn").await;
    let variations = |name: &str| {
        json!({"key": "f", "name": "f", "variations": [
            {"value": "a", "name": name}, {"value": "b"}
        ]})
    };
    for (name, reason) in [("two\nlines", "control"), (&"n".repeat(257)[..], "256")] {
        let resp = app.post("/api/v2/flags/vn", variations(name)).await;
        resp.assert_error(400, "invalid_request");
        assert_eq!(resp.body["errors"][0]["attribute"], "variations[0].name");
        assert!(
            resp.body["errors"][0]["reason"]
                .as_str()
                .unwrap()
                .contains(reason),
            "{}",
            resp.body
        );
    }
    let blank = app
        .post(
            "/api/v2/flags/vn",
            json!({"key": "g", "name": "g",
                   "customProperties": {"team": {"name": " ", "value": ["x"]}}}),
        )
        .await;
    blank.assert_error(400, "invalid_request");
    assert_eq!(
        blank.body["errors"][0]["attribute"],
        "customProperties.team.name"
    );
    assert_eq!(
        app.post("/api/v2/flags/vn", variations("Plain name"))
            .await
            .status,
        201
    );
}

/// Member names are labels: single-line, at most 256 characters, on invitation and on patch.
async fn member_names_are_bounded(backend: Backend) {
    let app = spawn(backend).await;
    let long = "n".repeat(257);
    let invited = app
        .post(
            "/api/v2/members",
            json!([{"email": "long@example.com", "firstName": long}]),
        )
        .await;
    invited.assert_error(400, "invalid_request");
    assert_eq!(invited.body["errors"][0]["attribute"], "[0].firstName");
    assert_eq!(app.db.count_rows("members"), 1);
    let id = app.member("ok@example.com", "reader").await;
    app.patch(
        &format!("/api/v2/members/{id}"),
        json!([{"op": "replace", "path": "/lastName", "value": long}]),
    )
    .await
    .assert_error(422, "patch_failed");
    let stored = app.get(&format!("/api/v2/members/{id}")).await.body;
    assert!(stored.get("lastName").is_none(), "{stored}");
}

on_both_backends!(
    member_names_are_bounded,
    variation_and_property_names_are_checked,
    body_errors_name_the_field,
    a_preview_never_turns_into_a_write,
    version_tests_compare_numbers_by_value,
    emails_cannot_carry_markdown,
    service_tokens_are_named_in_audit_titles,
);
