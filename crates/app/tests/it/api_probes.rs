//! What outside probes found (issue 32), each pinned by a test that failed before its fix.

use serde_json::{json, Value};

use crate::common::{bootstrapped, open, spawn, Backend, OWNER};

/// A member allowed project `shop` and the audit log, nothing about members: its token.
pub(crate) async fn shop_reader<S, B>(app: &crate::common::TestApp<S>) -> String
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let role = json!({"key": "shop-reader", "name": "Shop reader", "basePermissions": "no_access",
    "policy": [
        {"effect": "allow", "resources": ["proj/shop"], "actions": ["viewProject"]},
        {"effect": "allow", "resources": ["acct"], "actions": ["viewAuditLog"]}
    ]});
    assert_eq!(app.post("/api/v2/roles", role).await.status, 201);
    let invited = app
        .post(
            "/api/v2/members",
            json!([{"email": "r@example.com", "role": "no_access", "customRoles": ["shop-reader"]}]),
        )
        .await;
    assert_eq!(invited.status, 201, "{}", invited.body);
    let member = invited.body["items"][0]["_id"].as_str().unwrap().to_owned();
    app.token_of_member(&member, domain::role::Role::Reader)
}

fn mentions_owner(value: &Value) -> bool {
    value.to_string().contains("owner@example.com")
}

/// Item 9: member emails, names and roles reach only callers who may see members.
async fn members_are_shown_only_to_who_may_see_them(backend: Backend) {
    let app = spawn(backend).await;
    app.project("shop").await;
    let me = app.get("/api/v2/members/me").await.body["_id"].clone();
    let created = app
        .post(
            "/api/v2/flags/shop",
            json!({"key": "f", "name": "f", "maintainerId": me}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let reader = shop_reader(&app).await;

    let owners_view = app.get("/api/v2/flags/shop/f").await.body;
    assert_eq!(owners_view["_maintainer"]["email"], "owner@example.com");
    let maintainer = owners_view["maintainerId"].clone();
    for path in [
        "/api/v2/flags/shop/f",
        "/api/v2/flags/shop/f",
        "/api/v2/flags/shop?env=test",
        "/api/v2/flags/shop?env=test",
    ] {
        // Twice each: the second may come from the read cache.
        let shown = app.get_as(&reader, path).await;
        assert_eq!(shown.status, 200, "{}", shown.body);
        assert!(!mentions_owner(&shown.body), "{path}: {}", shown.body);
        let flag = shown
            .body
            .get("items")
            .map_or(&shown.body, |items| &items[0]);
        assert_eq!(flag["maintainerId"], maintainer, "the _id stays");
        assert!(flag.get("_maintainer").is_none(), "{flag}");
    }
    // The owner's view is not what the reader's left in the cache.
    assert_eq!(app.get("/api/v2/flags/shop/f").await.body, owners_view);

    let entries = app.get_as(&reader, "/api/v2/auditlog?limit=20").await;
    assert_eq!(entries.status, 200, "{}", entries.body);
    let items = entries.body["items"].as_array().unwrap();
    assert!(!items.is_empty());
    assert!(!mentions_owner(&entries.body), "{}", entries.body);
    assert!(items.iter().all(|e| e.get("member").is_none()));
    let id = items[0]["_id"].as_str().unwrap();
    let entry = app.get_as(&reader, &format!("/api/v2/auditlog/{id}")).await;
    assert_eq!(entry.status, 200, "{}", entry.body);
    assert!(!mentions_owner(&entry.body), "{}", entry.body);
    // The owner still sees who did it.
    let owners_entry = app.get(&format!("/api/v2/auditlog/{id}")).await.body;
    assert_eq!(owners_entry["member"]["email"], "owner@example.com");
}

/// Item 7: a list answer holds at most `MAX_PAGE_BYTES` of items, whatever `limit` or the API
/// version asks, and its `next` link goes on after the last item it holds.
async fn list_pages_are_bounded_in_bytes(backend: Backend) {
    use adapter_http::MAX_PAGE_BYTES;
    let app = spawn(backend).await;
    app.project("shop").await;
    let description = "d".repeat(900_000);
    for i in 0..9 {
        let created = app
            .post(
                "/api/v2/flags/shop",
                json!({"key": format!("f{i}"), "name": "F", "description": description}),
            )
            .await;
        assert_eq!(created.status, 201);
    }
    for first in [
        "/api/v2/flags/shop?limit=100&env=test",
        "/api/v2/flags/shop",
    ] {
        let mut path = first.to_owned();
        let mut keys = Vec::new();
        loop {
            let request = crate::common::request(
                actix_web::http::Method::GET,
                &path,
                Some(crate::common::OWNER),
            )
            .insert_header(("Svc-API-Version", "20220603"));
            let page = app.send(request).await;
            assert_eq!(page.status, 200, "{}", page.body["message"]);
            assert!(page.body.to_string().len() < MAX_PAGE_BYTES + 1_000_000);
            assert_eq!(page.body["totalCount"], 9);
            for item in page.body["items"].as_array().unwrap() {
                keys.push(item["key"].as_str().unwrap().to_owned());
            }
            match page.body["_links"]["next"]["href"].as_str() {
                Some(next) => path = next.to_owned(),
                None => break,
            }
        }
        keys.sort();
        let expected: Vec<String> = (0..9).map(|i| format!("f{i}")).collect();
        assert_eq!(keys, expected, "{first}: every flag once");
    }
}

/// Item 12: creating a flag sets what it sets in each environment only where the creator may.
async fn creating_a_flag_is_decided_in_each_environment(backend: Backend) {
    let app = spawn(backend).await;
    app.project("shop").await;
    app.flag("shop", "base").await;
    let on = json!([{"op": "replace", "path": "/environments/production/on", "value": true}]);
    assert_eq!(app.patch("/api/v2/flags/shop/base", on).await.status, 200);
    let made = app
        .post(
            "/api/v2/tokens",
            json!({"name": "careful", "role": "writer", "serviceToken": true, "inlineRole": [
                {"effect": "deny", "resources": ["proj/*:env/production:flag/*"],
                 "actions": ["updateOn", "updatePrerequisites"]}
            ]}),
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.body);
    let careful = made.body["token"].as_str().unwrap().to_owned();
    let false_id = app.get("/api/v2/flags/shop/base").await.body["variations"][1]["_id"].clone();
    for (body, path) in [
        (
            json!({"key": "a", "name": "A", "isFlagOn": true}),
            "/api/v2/flags/shop",
        ),
        (
            json!({"key": "b", "name": "B",
                   "initialPrerequisites": [{"key": "base", "variationId": false_id}]}),
            "/api/v2/flags/shop",
        ),
        (
            json!({"key": "c", "name": "C"}),
            "/api/v2/flags/shop?clone=base",
        ),
    ] {
        let refused = app.post_as(&careful, path, body.clone()).await;
        refused.assert_error(403, "forbidden");
        assert!(
            refused.body["message"]
                .as_str()
                .unwrap()
                .contains("production"),
            "{}",
            refused.body
        );
        let key = body["key"].as_str().unwrap();
        app.get(&format!("/api/v2/flags/shop/{key}"))
            .await
            .assert_error(404, "not_found");
    }
    // An environment cloned from one where the flag is on sets it on there: decided there too.
    let on_in_test = json!([{"op": "replace", "path": "/environments/test/on", "value": true}]);
    assert_eq!(
        app.patch("/api/v2/flags/shop/base", on_in_test)
            .await
            .status,
        200
    );
    let prod_like =
        json!({"key": "production-eu", "name": "EU", "color": "000000", "source": {"key": "test"}});
    let careful_prod = app
        .post(
            "/api/v2/tokens",
            json!({"name": "careful-prod", "role": "writer", "serviceToken": true, "inlineRole": [
                {"effect": "deny", "resources": ["proj/*:env/production*:flag/*"], "actions": ["updateOn"]}
            ]}),
        )
        .await;
    let careful_prod = careful_prod.body["token"].as_str().unwrap().to_owned();
    app.post_as(
        &careful_prod,
        "/api/v2/projects/shop/environments",
        prod_like,
    )
    .await
    .assert_error(403, "forbidden");
    app.get("/api/v2/projects/shop/environments/production-eu")
        .await
        .assert_error(404, "not_found");
    let staging =
        json!({"key": "staging", "name": "Staging", "color": "000000", "source": {"key": "test"}});
    let cloned = app
        .post_as(&careful_prod, "/api/v2/projects/shop/environments", staging)
        .await;
    assert_eq!(cloned.status, 201, "{}", cloned.body);
    // What sets nothing in production beyond a new flag's defaults is allowed.
    let plain = app
        .post_as(
            &careful,
            "/api/v2/flags/shop",
            json!({"key": "d", "name": "D"}),
        )
        .await;
    assert_eq!(plain.status, 201, "{}", plain.body);
    // And the owner's creation records each environment's setting in the audit log.
    let created = app
        .post(
            "/api/v2/flags/shop",
            json!({"key": "e", "name": "E", "isFlagOn": true}),
        )
        .await;
    assert_eq!(created.status, 201);
    let entries = app
        .get("/api/v2/auditlog?spec=proj/shop:env/production:flag/e")
        .await;
    assert_eq!(
        entries.body["items"].as_array().unwrap().len(),
        1,
        "{}",
        entries.body
    );
}

/// Item 13: a caller allowed only some roles' and teams' keys gets the same answer for a key
/// that exists and one that does not.
async fn unknown_and_forbidden_keys_answer_alike(backend: Backend) {
    let app = spawn(backend).await;
    for (path, body) in [
        (
            "/api/v2/roles",
            json!({"key": "secret-role", "name": "S", "policy": []}),
        ),
        ("/api/v2/teams", json!({"key": "secret-team", "name": "S"})),
    ] {
        let created = app.post(path, body).await;
        assert_eq!(created.status, 201, "{}", created.body);
    }
    let made = app
        .post(
            "/api/v2/tokens",
            json!({"name": "some", "role": "admin", "serviceToken": true, "inlineRole": [
                {"effect": "deny", "resources": ["role/secret*", "team/secret*"], "actions": ["*"]}
            ]}),
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.body);
    let some = made.body["token"].as_str().unwrap().to_owned();
    for kind in ["roles", "teams"] {
        let existing = app
            .get_as(&some, &format!("/api/v2/{kind}/secret-{}", &kind[..4]))
            .await;
        let missing = app
            .get_as(&some, &format!("/api/v2/{kind}/secret-none"))
            .await;
        existing.assert_error(403, "forbidden");
        missing.assert_error(403, "forbidden");
        // Where the caller may look, a missing key is a 404.
        app.get_as(&some, &format!("/api/v2/{kind}/other"))
            .await
            .assert_error(404, "not_found");
    }
}

/// Item 15: an integer no JSON number keeps exactly is refused, naming its field.
async fn inexact_integers_are_refused(backend: Backend) {
    let app = spawn(backend).await;
    app.project("shop").await;
    let body = r#"{"key": "big", "name": "Big", "variations": [
        {"value": 123456789012345678901234567890}, {"value": 123456789012345678901234567891}]}"#;
    let sent = app
        .send(
            crate::common::request(
                actix_web::http::Method::POST,
                "/api/v2/flags/shop",
                Some(OWNER),
            )
            .insert_header(("Content-Type", "application/json"))
            .set_payload(body),
        )
        .await;
    sent.assert_error(400, "invalid_request");
    assert_eq!(
        sent.body["errors"][0]["attribute"], "variations[0].value",
        "{}",
        sent.body
    );
    app.get("/api/v2/flags/shop/big")
        .await
        .assert_error(404, "not_found");
    // Within 64 bits such values are kept.
    let kept = app
        .post(
            "/api/v2/flags/shop",
            json!({"key": "ok", "name": "Ok", "variations": [
                {"value": 9_223_372_036_854_775_807_i64}, {"value": 1}]}),
        )
        .await;
    assert_eq!(kept.status, 201, "{}", kept.body);
    assert_eq!(
        kept.body["variations"][0]["value"],
        9_223_372_036_854_775_807_i64
    );
}

/// Item 16: one case-folding rule for emails on both stores, non-ASCII letters included.
async fn emails_fold_alike_on_both_stores(backend: Backend) {
    let app = spawn(backend).await;
    let first = app
        .post("/api/v2/members", json!([{"email": "Émile@example.com"}]))
        .await;
    assert_eq!(first.status, 201, "{}", first.body);
    let again = app
        .post("/api/v2/members", json!([{"email": "émile@example.com"}]))
        .await;
    again.assert_error(400, "email_already_exists_in_account");
    let both = app
        .post(
            "/api/v2/members",
            json!([{"email": "ÖZ@example.com"}, {"email": "öz@example.com"}]),
        )
        .await;
    both.assert_error(400, "duplicate_email");
    let found = app
        .get("/api/v2/members?filter=email:%C3%A9mile@example.com")
        .await;
    assert_eq!(found.body["totalCount"], 1, "{}", found.body);
}

/// Item 17: what the document says of a statement is what the server takes: its lists are
/// lists (never `null`), one of `resources` and `notResources`.
async fn statements_are_as_the_document_says(backend: Backend) {
    let app = spawn(backend).await;
    let doc = app.get("/api/v2/openapi.json").await.body;
    let statement = &doc["components"]["schemas"]["PolicyStatement"];
    for list in ["resources", "notResources", "actions", "notActions"] {
        assert_eq!(statement["properties"][list]["type"], "array", "{list}");
    }
    for statement in [
        json!({"effect": "allow", "resources": ["proj/*"], "actions": null}),
        json!({"effect": "allow", "resources": null, "notResources": ["proj/*"]}),
        json!({"effect": "allow", "resources": ["proj/*"], "notResources": ["proj/x"]}),
    ] {
        app.post(
            "/api/v2/roles",
            json!({"key": "r", "name": "R", "policy": [statement]}),
        )
        .await
        .assert_error(400, "invalid_request");
    }
}

/// The attack on the fixes (issue 32): lists show what a lookup by key would, and a lookup of a
/// key the caller may not touch answers alike whether it exists.
async fn lists_lookups_and_searches_tell_nothing_hidden(backend: Backend) {
    let app = spawn(backend).await;
    for (path, body) in [
        (
            "/api/v2/roles",
            json!({"key": "secret-r", "name": "S", "policy": []}),
        ),
        (
            "/api/v2/roles",
            json!({"key": "open-r", "name": "O", "policy": []}),
        ),
        ("/api/v2/teams", json!({"key": "secret-t", "name": "S"})),
        ("/api/v2/teams", json!({"key": "open-t", "name": "O"})),
    ] {
        assert_eq!(app.post(path, body).await.status, 201);
    }
    let hook = app
        .post(
            "/api/v2/webhooks",
            json!({"url": "https://hooks.example.com/x", "sign": true, "on": false, "name": "h"}),
        )
        .await;
    assert_eq!(hook.status, 200, "{}", hook.body);
    let hook_id = hook.body["_id"].as_str().unwrap().to_owned();
    let made = app
        .post(
            "/api/v2/tokens",
            json!({"name": "some", "role": "admin", "serviceToken": true, "inlineRole": [
                {"effect": "deny", "resources": ["role/secret*", "team/secret*", format!("webhook/{hook_id}")], "actions": ["*"]}
            ]}),
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.body);
    let some = made.body["token"].as_str().unwrap().to_owned();
    for (path, hidden, shown) in [
        ("/api/v2/roles", "secret-r", "open-r"),
        ("/api/v2/teams", "secret-t", "open-t"),
    ] {
        let listed = app.get_as(&some, path).await;
        assert_eq!(listed.status, 200, "{}", listed.body);
        let keys: Vec<&str> = listed.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["key"].as_str().unwrap())
            .collect();
        assert_eq!(keys, [shown], "{path}");
        assert_eq!(listed.body["totalCount"], 1);
        let queried = app
            .get_as(&some, &format!("{path}?filter=query:secret"))
            .await;
        assert_eq!(queried.body["totalCount"], 0, "{}", queried.body);
        // Changing, deleting or creating a key it may not touch: 403 whether it exists or not.
        for key in [hidden, "secret-none"] {
            app.delete_as(&some, &format!("{path}/{key}"))
                .await
                .assert_error(403, "forbidden");
        }
        let body = if path.ends_with("roles") {
            json!({"key": hidden, "name": "S", "policy": []})
        } else {
            json!({"key": hidden, "name": "S"})
        };
        app.post_as(&some, path, body)
            .await
            .assert_error(403, "forbidden");
    }
    let missing_role = json!([{"op": "replace", "path": "/name", "value": "x"}]);
    for key in ["secret-r", "secret-none"] {
        app.patch_as(&some, &format!("/api/v2/roles/{key}"), missing_role.clone())
            .await
            .assert_error(403, "forbidden");
    }
    let hooks = app.get_as(&some, "/api/v2/webhooks").await;
    assert_eq!(hooks.status, 200);
    assert!(
        hooks.body["items"].as_array().unwrap().is_empty(),
        "{}",
        hooks.body
    );
}

/// The attack on the fixes (issue 32): an audit search tells no email.
async fn an_audit_search_tells_no_hidden_email(backend: Backend) {
    let app = spawn(backend).await;
    // An audit search does not match who made a change the caller may not see.
    let reader = shop_reader(&app).await;
    app.project("shop").await;
    let by_email = app
        .get_as(&reader, "/api/v2/auditlog?q=owner@example.com")
        .await;
    assert_eq!(by_email.status, 200, "{}", by_email.body);
    assert!(
        by_email.body["items"].as_array().unwrap().is_empty(),
        "{}",
        by_email.body
    );
    let by_name = app.get_as(&reader, "/api/v2/auditlog?q=shop").await;
    assert!(
        !by_name.body["items"].as_array().unwrap().is_empty(),
        "{}",
        by_name.body
    );
}

/// The attack on the fixes (issue 32): emails are one member in any Unicode form.
async fn an_email_is_one_member_in_any_unicode_form(backend: Backend) {
    let app = spawn(backend).await;
    // An email in decomposed form, or with a final sigma, is the same member.
    assert_eq!(
        app.post(
            "/api/v2/members",
            json!([{"email": "\u{00e9}mile@example.com"}])
        )
        .await
        .status,
        201
    );
    app.post(
        "/api/v2/members",
        json!([{"email": "e\u{0301}mile@example.com"}]),
    )
    .await
    .assert_error(400, "email_already_exists_in_account");
    assert_eq!(
        app.post(
            "/api/v2/members",
            json!([{"email": "\u{03a3}\u{0391}\u{03a3}@example.com"}])
        )
        .await
        .status,
        201
    );
    app.post(
        "/api/v2/members",
        json!([{"email": "\u{03c3}\u{03b1}\u{03c3}@example.com"}]),
    )
    .await
    .assert_error(400, "email_already_exists_in_account");
}

/// The second attack on the fixes (issue 32): a cloned environment's segments, entries about a
/// hidden token, roles given and teams named that the caller may not see.
async fn second_attack_findings_hold(backend: Backend) {
    let app = spawn(backend).await;
    app.project("p").await;
    assert_eq!(
        app.post(
            "/api/v2/segments/p/test",
            json!({"key": "s1", "name": "S1"})
        )
        .await
        .status,
        201
    );
    let included = json!({"environmentKey": "test", "instructions": [
        {"kind": "addIncludedUsers", "values": ["u1"]}]});
    let patched = app
        .send(
            crate::common::request(
                actix_web::http::Method::PATCH,
                "/api/v2/segments/p/test/s1",
                Some(OWNER),
            )
            .insert_header(("Content-Type", crate::common::SEMANTIC))
            .set_payload(included.to_string()),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let made = app
        .post(
            "/api/v2/tokens",
            json!({"name": "c", "serviceToken": true, "role": "writer", "inlineRole": [
                {"effect": "deny", "resources": ["proj/*:env/new*:segment/*"], "actions": ["updateIncluded"]}]}),
        )
        .await;
    let c = made.body["token"].as_str().unwrap().to_owned();
    let clone = json!({"key": "new1", "name": "N", "color": "cccccc", "source": {"key": "test"}});
    app.post_as(&c, "/api/v2/projects/p/environments", clone)
        .await
        .assert_error(403, "forbidden");

    // Entries about a token the caller may not see are not shown.
    let secret = app
        .post(
            "/api/v2/tokens",
            json!({"name": "secrettok", "serviceToken": true, "role": "reader"}),
        )
        .await;
    assert_eq!(secret.status, 201);
    let made = app
        .post(
            "/api/v2/tokens",
            json!({"name": "l", "serviceToken": true, "role": "admin", "inlineRole": [
                {"effect": "deny", "resources": ["member/*:token/secret*", "role/sec*", "team/sec*"], "actions": ["*"]}]}),
        )
        .await;
    let l = made.body["token"].as_str().unwrap().to_owned();
    let owners = app.get("/api/v2/auditlog?q=secrettok").await.body;
    let entry = owners["items"][0]["_id"].as_str().unwrap().to_owned();
    let listed = app.get_as(&l, "/api/v2/auditlog?q=secrettok").await;
    assert!(
        listed.body["items"].as_array().unwrap().is_empty(),
        "{}",
        listed.body
    );
    app.get_as(&l, &format!("/api/v2/auditlog/{entry}"))
        .await
        .assert_error(403, "forbidden");

    // Giving a role it may not see: 403 whether the role exists or not.
    assert_eq!(
        app.post(
            "/api/v2/roles",
            json!({"key": "secA", "name": "S", "basePermissions": "no_access", "policy": []})
        )
        .await
        .status,
        201
    );
    for key in ["secA", "secMissing"] {
        app.post_as(
            &l,
            "/api/v2/members",
            json!([{"email": format!("{key}@example.com"), "role": "no_access", "customRoles": [key]}]),
        )
        .await
        .assert_error(403, "forbidden");
    }
    // A flag maintained by a team it may not see does not name the team.
    assert_eq!(
        app.post(
            "/api/v2/teams",
            json!({"key": "secT", "name": "Secret Team Name"})
        )
        .await
        .status,
        201
    );
    let flag = app
        .post(
            "/api/v2/flags/p",
            json!({"key": "f1", "name": "F", "maintainerTeamKey": "secT"}),
        )
        .await;
    assert_eq!(flag.status, 201, "{}", flag.body);
    let shown = app.get_as(&l, "/api/v2/flags/p/f1").await;
    assert_eq!(shown.status, 200);
    assert!(
        !shown.body.to_string().contains("Secret Team Name"),
        "{}",
        shown.body
    );
    assert_eq!(shown.body["maintainerTeamKey"], "secT");
}

on_both_backends!(
    second_attack_findings_hold,
    lists_lookups_and_searches_tell_nothing_hidden,
    an_audit_search_tells_no_hidden_email,
    an_email_is_one_member_in_any_unicode_form,
    statements_are_as_the_document_says,
    emails_fold_alike_on_both_stores,
    inexact_integers_are_refused,
    unknown_and_forbidden_keys_answer_alike,
    creating_a_flag_is_decided_in_each_environment,
    members_are_shown_only_to_who_may_see_them,
    list_pages_are_bounded_in_bytes
);

/// Item 14: 40 sign-ins at once leave at most 16 sessions of one token, on both stores.
fn concurrent_sign_ins_keep_the_session_cap(backend: Backend) {
    let db = open(backend);
    let service = bootstrapped(&db);
    std::thread::scope(|scope| {
        for _ in 0..40 {
            let service = &service;
            scope.spawn(move || {
                // A sign-in may be refused by a busy store: the cap must hold all the same.
                let _ = service.console_sessions().open_console_session(OWNER);
            });
        }
    });
    let open_sessions = db.count_rows("console_sessions");
    assert!(
        (1..=i64::from(service::CONSOLE_SESSIONS_PER_TOKEN)).contains(&open_sessions),
        "{open_sessions} sessions"
    );
}

mod sessions {
    use super::concurrent_sign_ins_keep_the_session_cap;
    storage_on_both_backends!(concurrent_sign_ins_keep_the_session_cap);
}
