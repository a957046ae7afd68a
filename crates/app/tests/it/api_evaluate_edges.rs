//! Edges of `POST .../flags/evaluate` and `.../explain`: odd input, archived flags, and
//! prerequisites shared along many paths.

use actix_web::http::Method;
use serde_json::{json, Value};

use crate::common::{request, spawn, Backend};

const EVALUATE: &str = "/api/v2/projects/web/environments/production/flags/evaluate";

/// Odd contexts and parameters: nothing answers 500.
async fn odd_inputs_never_answer_500(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "beta").await;
    let deep = (0..120).fold(json!("x"), |v, _| json!({"a": v}));
    let deep_array = (0..120).fold(json!("x"), |v, _| json!([v]));
    let contexts = [
        json!({}),
        json!({"key": null}),
        json!({"key": ""}),
        json!({"kind": "user", "key": ""}),
        json!({"kind": "multi", "user": {"key": "a"}}),
        json!({"kind": "multi", "user": {"key": "a", "kind": "org"}}),
        json!({"kind": "multi", "_meta": {"privateAttributes": ["x"]}, "user": {"key": "a"}}),
        json!({"kind": "multi", "multi": {"key": "a"}}),
        json!({"kind": "kind", "key": "a"}),
        json!({"kind": "", "key": "a"}),
        json!({"kind": "ü", "key": "a"}),
        json!({"kind": "user", "key": "ü\u{1F600}", "name": 3}),
        json!({"kind": "user", "key": "a", "anonymous": "yes"}),
        json!({"key": "a", "anonymous": "yes", "custom": {"kind": 1, "key": 2}}),
        json!({"key": "a", "custom": [1]}),
        json!({"kind": "user", "key": "a", "n": 18446744073709551615_u64, "m": -9223372036854775808_i64}),
        json!({"kind": "user", "key": "a", "deep": deep}),
        json!({"kind": "user", "key": "a", "deep": deep_array}),
        json!(null),
        json!("a"),
    ];
    for context in contexts {
        let r = app.post(EVALUATE, context.clone()).await;
        eprintln!(
            "{} <- {}",
            r.status,
            &context.to_string()[..context.to_string().len().min(80)]
        );
        assert_ne!(r.status, 500, "{context}: {}", r.body);
    }
    for raw in [
        "",
        "1e400",
        "{\"key\":\"a\",\"n\":1e400}",
        "{\"key\":\"a\",\"key\":\"b\"}",
        "{\"key\":\"\\u0000\"}",
    ] {
        let r = app
            .send(
                request(Method::POST, EVALUATE, Some(crate::common::OWNER))
                    .insert_header(("Content-Type", "application/json"))
                    .set_payload(raw),
            )
            .await;
        eprintln!("{} <- raw {raw:?}: {}", r.status, r.body);
        assert_ne!(r.status, 500, "{raw}");
    }
    for query in [
        "limit=0",
        "limit=-1",
        "limit=1.5",
        "limit=99999999999999999999",
        "limit=1&offset=-1",
        "limit=1&offset=99999999999999999999",
        "limit=1&offset=9223372036854775807",
        "offset=5",
        "filter=state:archived",
        "filter=nope:1",
        "filter=query:%00",
        "filter=tags:a+b",
        "limit=",
    ] {
        let r = app
            .post(&format!("{EVALUATE}?{query}"), json!({"key": "a"}))
            .await;
        eprintln!(
            "{} <- ?{query}: total {} items {}",
            r.status,
            r.body["totalCount"],
            r.body["items"].as_array().map_or(0, Vec::len)
        );
        assert_ne!(r.status, 500, "{query}: {}", r.body);
    }
    let text = app
        .send(
            request(Method::POST, EVALUATE, Some(crate::common::OWNER))
                .insert_header(("Content-Type", "text/plain"))
                .set_payload("{\"key\":\"a\"}"),
        )
        .await;
    eprintln!("{} <- text/plain", text.status);
}

/// `filter=state:archived` counts archived flags in `totalCount` but evaluates none of them
/// (`flags_in` leaves archived flags out): a page that says 1 and holds 0.
async fn archived_flags_are_never_evaluated(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "old").await;
    app.flag("web", "gone").await;
    let archived = app
        .patch(
            "/api/v2/flags/web/old",
            json!([{"op": "replace", "path": "/archived", "value": true}]),
        )
        .await;
    assert_eq!(archived.status, 200, "{}", archived.body);
    // A state filter would count flags it never lists.
    app.post(
        &format!("{EVALUATE}?filter=state:archived"),
        json!({"key": "a"}),
    )
    .await
    .assert_error(400, "invalid_request");
    // Archived in one environment only: a tombstone to SDKs there.
    let r = app
        .patch(
            "/api/v2/flags/web/gone",
            json!([
            {"op": "replace", "path": "/environments/production/on", "value": true},
            {"op": "replace", "path": "/environments/production/archived", "value": true}]),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let listed = app.post(EVALUATE, json!({"key": "a"})).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let keys: Vec<&Value> = listed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["key"])
        .collect();
    assert!(keys.is_empty(), "{keys:?}");
    app.post(
        "/api/v2/projects/web/environments/production/flags/gone/explain",
        json!({"key": "a"}),
    )
    .await
    .assert_error(404, "not_found");
    let test = app
        .post(
            "/api/v2/projects/web/environments/test/flags/gone/explain",
            json!({"key": "a"}),
        )
        .await;
    assert_eq!(test.status, 200, "{}", test.body);
}

async fn layer_flags<S, B>(app: &crate::common::TestApp<S>, depth: usize)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    // Deepest layer first, so that prerequisites exist when named.
    for layer in (0..depth).rev() {
        for side in ["l", "r"] {
            let key = format!("{side}{layer}");
            app.flag("web", &key).await;
            let prerequisites: Vec<Value> = if layer + 1 < depth {
                ["l", "r"]
                    .iter()
                    .map(|s| json!({"key": format!("{s}{}", layer + 1), "variation": 0}))
                    .collect()
            } else {
                vec![]
            };
            let r = app
                .patch(&format!("/api/v2/flags/web/{key}"), json!([
                    {"op": "replace", "path": "/environments/production/on", "value": true},
                    {"op": "replace", "path": "/environments/production/fallthrough", "value": {"variation": 0}},
                    {"op": "replace", "path": "/environments/production/prerequisites", "value": prerequisites}]))
                .await;
            assert_eq!(r.status, 200, "{}", r.body);
        }
    }
}

/// 2 x 14 flags, each with the two flags of the next layer as prerequisites (accepted: no
/// cycle): each flag is evaluated, and traced, once.
async fn shared_prerequisites_are_explained_once(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    layer_flags(&app, 14).await;
    let r = app
        .post(
            "/api/v2/projects/web/environments/production/flags/l0/explain",
            json!({"key": "a"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["result"]["reason"], json!({"kind": "FALLTHROUGH"}));
    let size = r.body.to_string().len();
    assert!(size < 100_000, "{size} bytes for one flag's explanation");
    let all = app.post(EVALUATE, json!({"key": "a"})).await;
    assert_eq!(all.body["totalCount"], 28, "{}", all.body);
}

/// What `context` gets from flag `flag` of `web`/`production`: its value and reason.
async fn served<S, B>(app: &crate::common::TestApp<S>, flag: &str, context: Value) -> (Value, Value)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let r = app.post(EVALUATE, context).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let item = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["key"] == flag)
        .cloned()
        .unwrap_or_default();
    (item["_value"].clone(), item["reason"]["kind"].clone())
}

/// Evaluations come from a snapshot kept between requests: every change to what it holds (a
/// segment, a flag, a new flag, the environment) is evaluated by the next request.
async fn changes_are_evaluated_at_once(backend: Backend) {
    let app = spawn(backend).await;
    crate::api_evaluate::configure(&app).await;
    let globex = json!({"kind": "org", "key": "globex"});
    assert_eq!(
        served(&app, "beta", globex.clone()).await,
        (json!(false), json!("FALLTHROUGH"))
    );
    let staff = app
        .patch_with(
            "/api/v2/segments/web/production/staff",
            crate::common::SEMANTIC,
            json!({"environmentKey": "production",
                   "instructions": [{"kind": "addIncludedTargets", "contextKind": "org",
                                      "values": ["globex"]}]}),
        )
        .await;
    assert_eq!(staff.status, 200, "{}", staff.body);
    assert_eq!(
        served(&app, "beta", globex.clone()).await,
        (json!(true), json!("RULE_MATCH")),
        "the segment's change"
    );
    let off = app
        .patch_with(
            "/api/v2/flags/web/beta",
            crate::common::SEMANTIC,
            json!({"environmentKey": "production", "instructions": [{"kind": "turnFlagOff"}]}),
        )
        .await;
    assert_eq!(off.status, 200, "{}", off.body);
    assert_eq!(
        served(&app, "beta", globex.clone()).await,
        (json!(false), json!("OFF")),
        "the flag's change"
    );
    app.flag("web", "fresh").await;
    assert_eq!(
        served(&app, "fresh", globex.clone()).await,
        (json!(false), json!("OFF")),
        "a new flag"
    );
    let gone = app
        .delete("/api/v2/projects/web/environments/production")
        .await;
    assert_eq!(gone.status, 204, "{}", gone.body);
    app.post(EVALUATE, globex)
        .await
        .assert_error(404, "not_found");
}

on_both_backends!(
    changes_are_evaluated_at_once,
    odd_inputs_never_answer_500,
    archived_flags_are_never_evaluated,
    shared_prerequisites_are_explained_once,
);
