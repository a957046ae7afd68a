//! Versions the SDKs can trust, on every store: an SDK-side store that applies the stream's
//! events with the SDKs' rule (a `patch` or `delete` only above the version held; a deleted key
//! kept as a tombstone) always holds what a fresh `put` would give it, whatever sequence of
//! changes the use cases made (random, seeded).

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use service::{
    use_case, Caller, FlagChange, SegmentChange, Service, StreamEnd, StreamItem, Subscription,
    SystemClock,
};

use crate::common::{open, Backend, Db, OWNER};

/// A service over a new database of one store, with its owner.
struct Fixture {
    service: std::sync::Arc<Service>,
    owner: Caller,
    _db: Db,
}

impl Fixture {
    fn on(backend: Backend) -> Self {
        let db = open(backend);
        let service = std::sync::Arc::new(Service::new(
            db.store.clone(),
            std::sync::Arc::new(SystemClock::default()),
            std::sync::Arc::new(adapter_http::ApiRepresentations),
        ));
        service
            .authentication()
            .bootstrap(Some(OWNER), "owner@example.com")
            .unwrap();
        let owner = service.authentication().authenticate(OWNER).unwrap();
        Self {
            service,
            owner,
            _db: db,
        }
    }
}

fn json_patch(operations: Value) -> domain::patch::JsonPatchBody {
    domain::patch::JsonPatchBody::parse(operations).unwrap()
}

/// What an SDK holds: per kind, per key, the version and the item (`None`: a tombstone).
#[derive(Debug, Default)]
struct SdkStore {
    items: BTreeMap<(String, String), (u64, Option<Value>)>,
    versions_down: usize,
}

impl SdkStore {
    /// Applies one event of the wire, as the SDKs do.
    fn apply(&mut self, event: &[u8]) {
        let text = std::str::from_utf8(event).unwrap();
        if text.starts_with(':') {
            return;
        }
        let (name, data) = text
            .trim_end()
            .strip_prefix("event: ")
            .and_then(|rest| rest.split_once("\ndata: "))
            .unwrap_or_else(|| panic!("not an event: {text:?}"));
        let data: Value = serde_json::from_str(data).unwrap();
        match name {
            "put" => {
                self.items.clear();
                for kind in ["flags", "segments"] {
                    for (key, item) in data["data"][kind].as_object().unwrap() {
                        let version = item["version"].as_u64().unwrap();
                        self.items
                            .insert((kind.into(), key.clone()), (version, Some(item.clone())));
                    }
                }
            }
            "patch" | "delete" => {
                let path = data["path"].as_str().unwrap();
                let (kind, key) = path[1..].split_once('/').unwrap();
                let (version, item) = if name == "patch" {
                    (
                        data["data"]["version"].as_u64().unwrap(),
                        Some(data["data"].clone()),
                    )
                } else {
                    (data["version"].as_u64().unwrap(), None)
                };
                let held = self.items.get(&(kind.into(), key.into())).map(|h| h.0);
                if held.is_some_and(|held| held >= version) {
                    // The SDKs ignore it: in a correct stream that happens only for repeats.
                    self.versions_down += 1;
                    return;
                }
                self.items
                    .insert((kind.into(), key.into()), (version, item));
            }
            other => panic!("unknown event {other}"),
        }
    }

    /// The live items, as a `put` carries them.
    fn live(&self) -> Value {
        let mut all = json!({"flags": {}, "segments": {}});
        for ((kind, key), (_, item)) in &self.items {
            if let Some(item) = item {
                all[kind][key] = item.clone();
            }
        }
        all
    }

    /// Applies every event waiting on `stream`.
    fn follow(&mut self, stream: &mut Subscription) {
        while let Some(item) = stream.try_next() {
            match item {
                Ok(StreamItem::Event(event)) => self.apply(&event),
                Ok(StreamItem::KeyExpiresAt(_)) => panic!("the key is not replaced"),
                Err(end @ (StreamEnd::TooSlow | StreamEnd::Closed | StreamEnd::KeyRevoked)) => {
                    panic!("the stream ends: {end:?}")
                }
            }
        }
    }
}

/// What a fresh `put` holds now.
fn fresh(stream: &Subscription) -> Value {
    let mut store = SdkStore::default();
    store.apply(stream.put());
    store.live()
}

const FLAGS: [&str; 4] = ["a", "b", "c", "d"];
const SEGMENTS: [&str; 2] = ["s1", "s2"];

/// One random change through the use cases (refusals are part of the game).
fn random_change(fx: &Fixture, rng: &mut StdRng) {
    let flag = FLAGS[rng.random_range(0..FLAGS.len())];
    let segment = SEGMENTS[rng.random_range(0..SEGMENTS.len())];
    let env = if rng.random_bool(0.8) {
        "production"
    } else {
        "test"
    };
    let patch_flag = |ops: Value| {
        let permit = fx.owner.may(use_case::PatchFlag).unwrap();
        let change = FlagChange::JsonPatch(json_patch(ops));
        let _ = fx.service.flags().patch_flag(&permit, "web", flag, &change);
    };
    let patch_segment = |ops: Value| {
        let permit = fx.owner.may(use_case::PatchSegment).unwrap();
        let change = SegmentChange::JsonPatch(json_patch(ops));
        let _ = fx
            .service
            .segments()
            .patch_segment(&permit, "web", env, segment, &change);
    };
    let user = format!("u{}", rng.random_range(0..5));
    match rng.random_range(0..10) {
        0 => {
            let post = serde_json::from_value(json!({"key": flag, "name": flag})).unwrap();
            let permit = fx.owner.may(use_case::CreateFlag).unwrap();
            let _ = fx.service.flags().create_flag(&permit, "web", post);
        }
        1 => {
            let permit = fx.owner.may(use_case::DeleteFlag).unwrap();
            let _ = fx.service.flags().delete_flag(&permit, "web", flag);
        }
        2 => patch_flag(
            json!([{"op": "replace", "path": format!("/environments/{env}/on"),
                                 "value": rng.random_bool(0.5)}]),
        ),
        3 => {
            let first = rng.random_bool(0.5);
            patch_flag(
                json!([{"op": "replace", "path": "/variations/0/value", "value": first},
                              {"op": "replace", "path": "/variations/1/value", "value": !first}]),
            );
        }
        4 => patch_flag(json!([{"op": "replace", "path": "/archived",
                                 "value": rng.random_bool(0.5)}])),
        5 => patch_flag(
            json!([{"op": "add", "path": format!("/environments/{env}/rules/-"),
            "value": {"variation": 0, "clauses": [{"contextKind": "user",
                "attribute": "segmentMatch", "op": "segmentMatch", "values": [segment],
                "negate": false}]}}]),
        ),
        6 => {
            let post = serde_json::from_value(json!({"key": segment, "name": segment})).unwrap();
            let permit = fx.owner.may(use_case::CreateSegment).unwrap();
            let _ = fx
                .service
                .segments()
                .create_segment(&permit, "web", env, post);
        }
        7 => {
            let permit = fx.owner.may(use_case::DeleteSegment).unwrap();
            let _ = fx
                .service
                .segments()
                .delete_segment(&permit, "web", env, segment);
        }
        8 => patch_segment(json!([{"op": "add", "path": "/included/-", "value": user}])),
        _ => patch_flag(
            json!([{"op": "add", "path": format!("/environments/{env}/targets/-"),
                                 "value": {"variation": 1, "values": [user]}}]),
        ),
    }
}

/// Runs `seeds` random sequences of 150 changes on `backend`.
fn an_sdk_following_the_stream_always_holds_what_a_fresh_put_gives(backend: Backend, seeds: u64) {
    for seed in 0..seeds {
        let fx = Fixture::on(backend);
        let post = serde_json::from_value(json!({"key": "web", "name": "Web"})).unwrap();
        let permit = fx.owner.may(use_case::CreateProject).unwrap();
        let project = fx.service.projects().create_project(&permit, post).unwrap();
        let key = project
            .environments
            .unwrap()
            .into_iter()
            .find(|e| e.key.as_str() == "production")
            .unwrap()
            .api_key;
        let access = fx.service.sdk().open(&key).unwrap();
        let mut rng = StdRng::seed_from_u64(seed);
        let mut first = fx.service.sdk().stream(&access).unwrap();
        let mut sdk = SdkStore::default();
        sdk.apply(first.put());
        // A second SDK joins half-way.
        let mut later: Option<(Subscription, SdkStore)> = None;
        for step in 0..150 {
            random_change(&fx, &mut rng);
            fx.service.deliver_due(1000).unwrap();
            sdk.follow(&mut first);
            if step == 75 {
                let stream = fx.service.sdk().stream(&access).unwrap();
                let mut store = SdkStore::default();
                store.apply(stream.put());
                later = Some((stream, store));
            }
            if let Some((stream, store)) = later.as_mut() {
                store.follow(stream);
            }
            let check = fx.service.sdk().stream(&access).unwrap();
            let expected = fresh(&check);
            assert_eq!(sdk.live(), expected, "seed {seed}, step {step}");
            if let Some((_, store)) = &later {
                assert_eq!(
                    store.live(),
                    expected,
                    "the later SDK: seed {seed}, step {step}"
                );
            }
        }
        assert_eq!(
            sdk.versions_down, 0,
            "seed {seed}: no event at a version not above"
        );
    }
}

#[test]
fn on_memory() {
    an_sdk_following_the_stream_always_holds_what_a_fresh_put_gives(Backend::Memory, 12);
}

#[test]
fn on_sqlite() {
    an_sdk_following_the_stream_always_holds_what_a_fresh_put_gives(Backend::Sqlite, 4);
}

#[test]
fn on_postgres() {
    an_sdk_following_the_stream_always_holds_what_a_fresh_put_gives(Backend::Postgres, 4);
}
