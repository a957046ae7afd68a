//! Concurrent writers of one object, through the service on every store (the in-memory one too):
//! every acknowledged change is kept, and the audit log holds exactly one entry per acknowledged
//! change. By topic: counters and sets of one object (`counters`), races between objects
//! (`races`), and PostgreSQL's batches caught in deadlocks and deletes (`batches`).

mod batches;
mod counters;
mod races;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use domain::audit::{AuditQuery, ShownVersion};
use domain::instruction::SemanticPatch;
use domain::patch::JsonPatchBody;
use domain::role::Role;
use serde_json::{json, Value};
use service::{
    use_case, Caller, CustomRoleChange, FlagChange, SegmentChange, Service, ServiceError,
    SystemClock,
};

use crate::common::{open, Backend, Db, OWNER};

const THREADS: usize = 16;
const PER_THREAD: usize = 25;

fn service_on(backend: Backend) -> (Db, Arc<Service>, Caller) {
    let db = open(backend);
    let (service, caller) = service_over(db.store.clone());
    (db, service, caller)
}

/// A service over `store`, with the owner and project `p`.
fn service_over(store: Arc<dyn ports::Store>) -> (Arc<Service>, Caller) {
    let service = Arc::new(Service::new(
        store,
        Arc::new(SystemClock::default()),
        Arc::new(adapter_http::ApiRepresentations),
    ));
    service
        .authentication()
        .bootstrap(Some(OWNER), "owner@example.com")
        .unwrap();
    let caller = service.authentication().authenticate(OWNER).unwrap();
    service
        .projects()
        .create_project(
            &caller.may(use_case::CreateProject).unwrap(),
            serde_json::from_value(json!({"key": "p", "name": "P"})).unwrap(),
        )
        .unwrap();
    (service, caller)
}

fn patch(ops: Value) -> JsonPatchBody {
    JsonPatchBody::parse(ops).unwrap()
}

/// `THREADS` threads each call `change(thread, i)` for `i` in `0..PER_THREAD`; returns how many
/// calls answered `Ok`. A call may fail only with a 409 (a lost race its caller would retry).
fn hammer(change: impl Fn(usize, usize) -> Result<(), ServiceError> + Sync) -> usize {
    hammer_n(PER_THREAD, change)
}

/// As [`hammer`], with `per_thread` changes per thread.
fn hammer_n(
    per_thread: usize,
    change: impl Fn(usize, usize) -> Result<(), ServiceError> + Sync,
) -> usize {
    let acknowledged = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let (change, acknowledged) = (&change, &acknowledged);
            scope.spawn(move || {
                for i in 0..per_thread {
                    match change(thread, i) {
                        Ok(()) => {
                            acknowledged.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(ServiceError::VersionConflict(_)) => {}
                        Err(other) => panic!("thread {thread}, change {i}: {other:?}"),
                    }
                }
            });
        }
    });
    acknowledged.into_inner()
}

/// Adds `t{thread}-{i}` to the object's tags: `THREADS * PER_THREAD` distinct tags.
fn add_tag(thread: usize, i: usize) -> JsonPatchBody {
    patch(json!([{"op": "add", "path": "/tags/-", "value": format!("t{thread}-{i}")}]))
}

/// How many audit entries name a resource matching `spec`, by paging back in time.
fn audit_entries(service: &Service, caller: &Caller, spec: &str) -> usize {
    let mut count = 0;
    let mut before: Option<(i64, String)> = None;
    loop {
        let query = AuditQuery {
            before: before.as_ref().map(|(date, _)| *date),
            before_id: before.as_ref().map(|(_, id)| id.clone()),
            after: None,
            q: None,
            spec: Some(spec.to_owned()),
            limit: 20,
        };
        let page = service
            .audit_log()
            .page_audit_log(&caller.may(use_case::ReadAuditLog).unwrap(), &query)
            .unwrap();
        count += page.entries.len();
        match page.next_before {
            Some(next) => before = Some(next),
            None => return count,
        }
    }
}
