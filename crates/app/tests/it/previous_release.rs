//! A database written by the release before the store had a format of its own (the API's JSON
//! in every JSON column, `_links` and `_site` included) opens, migrates and reads as it did.
//!
//! `tests/fixtures/previous-release.db` was written by that release's binary with
//! `tests/fixtures/previous-release.sh`, which also recorded in `previous-release.json` what
//! that release answered for each object: a project with two environments, two flags (one
//! with targets, context targets, rules with clauses and a rollout, a rollout fallthrough and a
//! prerequisite), a segment with targets and a weighted rule, a webhook and their audit entries.
//! Every answer must be the same from this release.

use std::sync::Arc;

use actix_web::test;
use adapter_http::{AppState, HttpConfig};
use serde_json::{json, Value};
use service::{Service, SystemClock};

use crate::common::{request, OWNER};

const FIXTURE: &[u8] = include_bytes!("../fixtures/previous-release.db");
const ANSWERS: &str = include_str!("../fixtures/previous-release.json");

/// A copy of the fixture, removed when dropped.
struct Copy(std::path::PathBuf);

impl Drop for Copy {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

#[actix_web::test]
async fn a_database_of_the_previous_release_reads_as_it_did() {
    let copy = Copy(std::env::temp_dir().join(format!(
        "flagsvc-previous-{:016x}.db",
        rand::random::<u64>()
    )));
    std::fs::write(&copy.0, FIXTURE).unwrap();
    // As the binary opens it: migrations run on the way.
    let store = app::StoreUrl::parse(&copy.0.display().to_string())
        .open(2, true)
        .unwrap();
    let service = Arc::new(Service::new(
        store,
        Arc::new(SystemClock::default()),
        Arc::new(adapter_http::ApiRepresentations),
    ));
    let app = test::init_service(adapter_http::app(
        AppState::new(service, HttpConfig::default()).unwrap(),
    ))
    .await;
    let get = |path: String| {
        let app = &app;
        async move {
            let res = test::call_service(
                app,
                request(actix_web::http::Method::GET, &path, Some(OWNER)).to_request(),
            )
            .await;
            assert_eq!(res.status().as_u16(), 200, "GET {path}");
            let mut body: Value = test::read_body_json(res).await;
            // Added since that release, and about the caller rather than what is stored.
            if let Some(fields) = body.as_object_mut() {
                fields.remove("_access");
            }
            // Added since that release: a segment's salt, which a segment of that release reads
            // with as derived from its key and creation time.
            let segments: Vec<&mut Value> = match body.get_mut("items") {
                Some(Value::Array(items)) => items.iter_mut().collect(),
                _ => vec![&mut body],
            };
            for segment in segments {
                if let (Some(key), Some(created)) =
                    (segment["key"].as_str(), segment["creationDate"].as_i64())
                {
                    if segment.get("salt").is_some() && segment.get("included").is_some() {
                        let derived = domain::segment::derived_salt(key, created);
                        assert_eq!(segment["salt"], Value::String(derived), "{key}'s salt");
                        segment.as_object_mut().map(|s| s.remove("salt"));
                    }
                }
            }
            body
        }
    };

    let answers: Value = serde_json::from_str(ANSWERS).unwrap();
    let paths = [
        ("project", "/projects/legacy"),
        ("environments", "/projects/legacy/environments"),
        ("flags", "/flags/legacy"),
        ("checkout", "/flags/legacy/checkout"),
        ("beta", "/flags/legacy/beta"),
        ("segment", "/segments/legacy/production/vip"),
        ("segments", "/segments/legacy/production"),
        ("webhooks", "/webhooks"),
        ("auditlog", "/auditlog"),
    ];
    for (name, path) in paths {
        assert_eq!(
            get(format!("/api/v2{path}")).await,
            answers[name],
            "GET {path} answers as the previous release did"
        );
    }
    let details = answers["auditDetails"].as_object().unwrap();
    assert_eq!(details.len(), 7);
    for (id, answer) in details {
        assert_eq!(
            &get(format!("/api/v2/auditlog/{id}")).await,
            answer,
            "GET /auditlog/{id}"
        );
    }

    // The rich configuration, read through the store, is what was written.
    let production = &answers["checkout"]["environments"]["production"];
    assert_eq!(production["rules"].as_array().unwrap().len(), 2);
    assert_eq!(
        production["prerequisites"],
        json!([{"key": "beta", "variation": 0}])
    );
    assert_eq!(
        production["fallthrough"]["rollout"]["variations"][1]["weight"],
        90000
    );

    // A change writes the current format over an old row, and reads back.
    let res = test::call_service(
        &app,
        request(
            actix_web::http::Method::PATCH,
            "/api/v2/flags/legacy/checkout",
            Some(OWNER),
        )
        .set_json(json!([{"op": "replace", "path": "/description", "value": "Changed"}]))
        .to_request(),
    )
    .await;
    assert_eq!(res.status().as_u16(), 200);
    let mut expected = answers["checkout"].clone();
    let changed = get("/api/v2/flags/legacy/checkout".into()).await;
    expected["description"] = json!("Changed");
    expected["_version"] = changed["_version"].clone();
    assert_eq!(
        changed["_version"],
        answers["checkout"]["_version"].as_i64().unwrap() + 1
    );
    assert_eq!(changed, expected);
    // The rewritten rows are in the current format, without presentation data; the flag's
    // configurations, unchanged, are still in the old one and read alongside.
    for (what, sql) in [
        (
            "flag",
            "SELECT settings AS json FROM flags WHERE key = 'checkout'",
        ),
        (
            "audit entry",
            "SELECT entry AS json FROM audit_log ORDER BY date DESC LIMIT 1",
        ),
    ] {
        let json = raw_json(&copy.0, sql);
        assert!(json.starts_with(r#"{"v":1,"#), "{what}: {json}");
        assert!(!json.contains("_links"), "{what}: {json}");
    }
    let config = raw_json(
        &copy.0,
        "SELECT config AS json FROM flag_configs \
         WHERE flag_key = 'checkout' AND environment_key = 'production'",
    );
    assert!(config.contains("_site"), "{config}");
}

/// The text of the `json` column of the first row `sql` selects, read past the store.
fn raw_json(path: &std::path::Path, sql: &str) -> String {
    use diesel::{Connection, RunQueryDsl};
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        json: String,
    }
    let mut conn = diesel::SqliteConnection::establish(&path.display().to_string()).unwrap();
    let row: Row = diesel::sql_query(sql).get_result(&mut conn).unwrap();
    row.json
}
