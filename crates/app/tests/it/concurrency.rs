//! Concurrent writers of one flag, through the service on a real store.

use std::sync::Arc;

use domain::instruction::SemanticPatch;
use serde_json::json;
use service::{FlagChange, Service, SystemClock};

use crate::common::{open, Backend, OWNER};

/// Two writers never lose each other's change: 16 threads each add 25 distinct targets to one
/// flag through semantic patch; all 400 are there and `_version` grew by exactly 400.
fn concurrent_writers_lose_nothing(backend: Backend) {
    let db = open(backend);
    let service = Arc::new(Service::new(
        db.store.clone(),
        Arc::new(SystemClock::default()),
    ));
    service.bootstrap(Some(OWNER), "owner@example.com").unwrap();
    let caller = service.authenticate(OWNER).unwrap();
    service
        .create_project(
            &caller,
            serde_json::from_value(json!({"key": "p", "name": "P"})).unwrap(),
        )
        .unwrap();
    let flag = service
        .create_flag(
            &caller,
            "p",
            serde_json::from_value(json!({"key": "f", "name": "F"})).unwrap(),
        )
        .unwrap();
    let variation = flag.variations[0].id.clone();
    let threads: Vec<_> = (0..16)
        .map(|thread| {
            let (service, caller, variation) = (service.clone(), caller.clone(), variation.clone());
            std::thread::spawn(move || {
                for i in 0..25 {
                    let patch = SemanticPatch::parse(json!({"environmentKey": "production", "instructions": [
                        {"kind": "addTargets", "values": [format!("t{thread}-{i}")], "variationId": variation}]}))
                    .unwrap();
                    service.patch_flag(&caller, "p", "f", &FlagChange::Semantic(patch)).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let after = service.get_flag(&caller, "p", "f", &[]).unwrap();
    let targets = &after.environments["production"].targets;
    assert_eq!(targets.len(), 1);
    assert_eq!(targets[0].values.len(), 400);
    assert_eq!(after.version, flag.version + 400);
    assert_eq!(after.environments["production"].version, 401);
}

storage_on_both_backends!(concurrent_writers_lose_nothing);
