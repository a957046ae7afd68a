//! The 1 MiB resource size limit holds for every way a flag or segment is written, not only for
//! patches (issue 8, the copy/clone finding): copying one environment's configuration onto
//! others, cloning a flag, and creating a flag or segment.

use adapter_http::HttpConfig;
use ports::StoreExt;
use serde_json::{json, Value};

use crate::common::{spawn, spawn_with, Backend, Resp};

const LIMIT: usize = 1 << 20;

fn assert_size_limit(resp: &Resp, status: u16, code: &str) {
    assert_eq!(resp.status, status, "{}", short(&resp.body));
    resp.assert_error(status, code);
    let message = resp.body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("1048576 bytes"),
        "'{message}' does not name the size limit"
    );
}

/// A large body cut short for a failure message.
fn short(body: &Value) -> String {
    body.to_string().chars().take(500).collect()
}

/// Bytes of compact JSON, `_links` (derived, not counted) left out at the top level.
fn stored_len(resource: &Value) -> usize {
    let mut resource = resource.clone();
    if let Some(fields) = resource.as_object_mut() {
        fields.remove("_links");
    }
    resource.to_string().len()
}

/// 15,000 target values of 24 characters in `test`: about 400 KB per environment holding them,
/// so one copy fits under the limit and a second does not.
async fn big_flag<S, B>(app: &crate::common::TestApp<S>) -> Value
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    app.flag("web", "big").await;
    let values: Vec<String> = (0..15_000).map(|i| format!("user-{i:0>19}")).collect();
    let resp = app
        .patch(
            "/api/v2/flags/web/big",
            json!([{"op": "add", "path": "/environments/test/targets/-",
                    "value": {"variation": 0, "values": values}}]),
        )
        .await;
    assert_eq!(resp.status, 200, "{}", short(&resp.body));
    resp.body
}

async fn copies_cannot_grow_a_flag_past_the_size_limit(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    for i in 0..20 {
        let created = app
            .post(
                "/api/v2/projects/web/environments",
                json!({"key": format!("e{i}"), "name": format!("E{i}"), "color": "000000"}),
            )
            .await;
        assert_eq!(created.status, 201, "{}", short(&created.body));
    }
    let flag = big_flag(&app).await;
    let size = stored_len(&flag);
    assert!(size > 400_000 && 2 * size < LIMIT && 3 * size > LIMIT + 200_000);

    // The reported requests: 20 copies of `test` onto 20 other environments. One fits.
    let mut refused = 0;
    for i in 0..20 {
        let resp = app
            .post(
                "/api/v2/flags/web/big/copy",
                json!({"source": {"key": "test"}, "target": {"key": format!("e{i}")}}),
            )
            .await;
        if i == 0 {
            assert_eq!(resp.status, 201, "{}", short(&resp.body));
        } else {
            assert_size_limit(&resp, 400, "invalid_request");
            refused += 1;
        }
    }
    assert_eq!(refused, 19);
    let stored = app.get("/api/v2/flags/web/big").await.body;
    assert_eq!(stored["_version"], 3, "the patch and one copy");
    assert!(stored_len(&stored) <= LIMIT);
    let e1 = &stored["environments"]["e1"];
    assert_eq!(e1["version"], 1);
    assert_eq!(e1["targets"], json!([]));
    // Entries for the creation, the patch and the copy: none for the refused copies.
    let log = app
        .get("/api/v2/auditlog?spec=proj/web:env/*:flag/big&limit=20")
        .await;
    assert_eq!(
        log.body["items"].as_array().unwrap().len(),
        3,
        "{}",
        short(&log.body)
    );

    // A copy that shrinks an oversized flag, or keeps its size, is not refused.
    let resp = app
        .post(
            "/api/v2/flags/web/big/copy",
            json!({"source": {"key": "e2"}, "target": {"key": "e0"}}),
        )
        .await;
    assert_eq!(resp.status, 201, "{}", short(&resp.body));
}

async fn clones_cannot_be_larger_than_the_size_limit(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    big_flag(&app).await;
    let copied = app
        .post(
            "/api/v2/flags/web/big/copy",
            json!({"source": {"key": "test"}, "target": {"key": "production"}}),
        )
        .await;
    assert_eq!(copied.status, 201, "{}", short(&copied.body));
    // ~800 KB, plus a 300 KB description.
    let resp = app
        .post(
            "/api/v2/flags/web?clone=big",
            json!({"key": "big-2", "name": "Big 2", "description": "d".repeat(300_000)}),
        )
        .await;
    assert_size_limit(&resp, 400, "invalid_request");
    app.get("/api/v2/flags/web/big-2")
        .await
        .assert_error(404, "not_found");

    // A flag stored before the limit (here: written straight to the store) that is already
    // larger cannot be cloned either.
    app.db
        .store
        .write_tx(|repo| -> Result<(), ports::StoreError> {
            let project = repo
                .get_project(&domain::key::ProjectKey::parse("web").unwrap())?
                .unwrap();
            let mut held = repo
                .lock_flag(&project.id, &domain::key::FlagKey::parse("big").unwrap())?
                .unwrap();
            let previous = (*held).clone();
            held.get_mut().description = "d".repeat(400_000);
            repo.update_flag(&project.id, &held, &previous)
        })
        .unwrap();
    let resp = app
        .post(
            "/api/v2/flags/web?clone=big",
            json!({"key": "big-3", "name": "Big 3"}),
        )
        .await;
    assert_size_limit(&resp, 400, "invalid_request");
    app.get("/api/v2/flags/web/big-3")
        .await
        .assert_error(404, "not_found");

    // A clone within the limit still works.
    app.flag("web", "small").await;
    let resp = app
        .post(
            "/api/v2/flags/web?clone=small",
            json!({"key": "small-2", "name": "Small 2", "description": "d".repeat(1000)}),
        )
        .await;
    assert_eq!(resp.status, 201, "{}", short(&resp.body));
}

async fn created_flags_and_segments_are_within_the_size_limit(backend: Backend) {
    // With a body limit raised past the size limit, a create is what must refuse.
    let app = spawn_with(
        backend,
        HttpConfig {
            rate_limit: 0,
            body_limit: 4 * LIMIT,
            ..HttpConfig::default()
        },
    )
    .await;
    app.project("web").await;
    let entries = app.get("/api/v2/auditlog?limit=20").await.body["items"].clone();
    let resp = app
        .post(
            "/api/v2/flags/web",
            json!({"key": "f", "name": "F", "description": "d".repeat(LIMIT)}),
        )
        .await;
    assert_size_limit(&resp, 400, "invalid_request");
    app.get("/api/v2/flags/web/f")
        .await
        .assert_error(404, "not_found");
    let resp = app
        .post(
            "/api/v2/segments/web/test",
            json!({"key": "s", "name": "S", "description": "d".repeat(LIMIT)}),
        )
        .await;
    assert_size_limit(&resp, 400, "invalid_request");
    app.get("/api/v2/segments/web/test/s")
        .await
        .assert_error(404, "not_found");
    // Nothing was audited either.
    assert_eq!(
        app.get("/api/v2/auditlog?limit=20").await.body["items"],
        entries
    );

    // Just under the limit is fine.
    let resp = app
        .post(
            "/api/v2/flags/web",
            json!({"key": "f", "name": "F", "description": "d".repeat(LIMIT - 10_000)}),
        )
        .await;
    assert_eq!(resp.status, 201, "{}", short(&resp.body));
    let resp = app
        .post(
            "/api/v2/segments/web/test",
            json!({"key": "s", "name": "S", "description": "d".repeat(LIMIT - 10_000)}),
        )
        .await;
    assert_eq!(resp.status, 201, "{}", short(&resp.body));
}

on_both_backends!(
    copies_cannot_grow_a_flag_past_the_size_limit,
    clones_cannot_be_larger_than_the_size_limit,
    created_flags_and_segments_are_within_the_size_limit,
);
