//! PostgreSQL's batches of flag changes caught in a deadlock, a delete or a version test.

use super::*;

/// PostgreSQL aborts one change of a batch (changes to one flag written together) with a
/// deadlock: the transaction is gone, so every change in it fails with the same retryable 409,
/// and none is acknowledged. Set up: the flag's row is held by another session while a first
/// change waits for it and two more queue behind; then the project is held, so that the second
/// change of the batch (a prerequisite, which holds the project) waits for it while the batch
/// holds the flag, and the other session asks for the flag: a deadlock, which the batch loses
/// (the other session waits longer before looking for one).
#[test]
fn a_deadlock_in_a_batch_fails_every_change_in_it_with_a_conflict() {
    use diesel::connection::SimpleConnection;
    use std::time::Duration;

    let (db, service, caller) = service_on(Backend::Postgres);
    create_flags(&service, &caller, ["f", "g"]);
    let before = flag_of(&service, &caller, "f");
    let permit = caller.may(use_case::PatchFlag).unwrap();
    let add_prerequisite = prerequisite_g(&service, &caller);
    let (mut holds_flag, mut holds_project) = hold_f_and_p(&db);
    let pause = || std::thread::sleep(Duration::from_millis(400));
    let (service, permit) = (&service, &permit);
    let (first, second, third) = std::thread::scope(|scope| {
        let first = scope.spawn(|| {
            service
                .flags()
                .patch_flag(permit, "p", "f", &rename("first"))
        });
        pause();
        let second = scope.spawn(|| {
            service
                .flags()
                .patch_flag(permit, "p", "f", &rename("second"))
        });
        pause();
        let third = scope.spawn(|| {
            service
                .flags()
                .patch_flag(permit, "p", "f", &add_prerequisite)
        });
        pause();
        // The first is written alone; the second and third together, the third waiting for the
        // project.
        holds_flag.batch_execute("COMMIT").unwrap();
        pause();
        pause();
        let other = scope.spawn(move || {
            holds_project
                .batch_execute("SELECT 1 FROM flags WHERE key = 'f' FOR UPDATE")
                .unwrap();
            holds_project.batch_execute("ROLLBACK").unwrap();
        });
        let outcomes = (
            first.join().unwrap(),
            second.join().unwrap(),
            third.join().unwrap(),
        );
        other.join().unwrap();
        outcomes
    });
    assert_eq!(first.unwrap().flag.name, "first");
    for (which, outcome) in [("second", second), ("third", third)] {
        assert!(
            matches!(outcome, Err(ServiceError::VersionConflict(_))),
            "{which}: {outcome:?}"
        );
    }
    let after = flag_of(service, &caller, "f");
    assert_eq!(after.name, "first");
    assert_eq!(after.version, before.version + 1);
    assert!(after.environments["production"].prerequisites.is_empty());
}

/// As above, with changes to other flags of the project in the same batch (eight flags `h*`,
/// renamed while `f`'s changes wait; those that share `f`'s write lane join its batch): the
/// deadlock ends that transaction, and its changes are written again one flag at a time, so that
/// the deadlock, which was over by then, costs no change of any flag a 409.
#[test]
fn a_deadlock_in_a_batch_of_several_flags_is_written_again_flag_by_flag() {
    use diesel::connection::SimpleConnection;
    use std::time::Duration;

    let (db, service, caller) = service_on(Backend::Postgres);
    let others: Vec<String> = (0..8).map(|n| format!("h{n}")).collect();
    let keys = ["f", "g"]
        .into_iter()
        .chain(others.iter().map(String::as_str));
    create_flags(&service, &caller, keys);
    let before = flag_of(&service, &caller, "f");
    let permit = caller.may(use_case::PatchFlag).unwrap();
    let add_prerequisite = prerequisite_g(&service, &caller);
    let (mut holds_flag, mut holds_project) = hold_f_and_p(&db);
    let pause = || std::thread::sleep(Duration::from_millis(400));
    let (service, permit, others) = (&service, &permit, &others);
    let (first, second, third, renamed) = std::thread::scope(|scope| {
        let first = scope.spawn(|| {
            service
                .flags()
                .patch_flag(permit, "p", "f", &rename("first"))
        });
        pause();
        let second = scope.spawn(|| {
            service
                .flags()
                .patch_flag(permit, "p", "f", &rename("second"))
        });
        pause();
        let third = scope.spawn(|| {
            service
                .flags()
                .patch_flag(permit, "p", "f", &add_prerequisite)
        });
        let renamed: Vec<_> = others
            .iter()
            .map(|key| {
                scope.spawn(move || {
                    service
                        .flags()
                        .patch_flag(permit, "p", key, &rename("renamed"))
                })
            })
            .collect();
        pause();
        holds_flag.batch_execute("COMMIT").unwrap();
        pause();
        pause();
        let other = scope.spawn(move || {
            holds_project
                .batch_execute("SELECT 1 FROM flags WHERE key = 'f' FOR UPDATE")
                .unwrap();
            holds_project.batch_execute("ROLLBACK").unwrap();
        });
        let outcomes = (
            first.join().unwrap(),
            second.join().unwrap(),
            third.join().unwrap(),
            renamed
                .into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>(),
        );
        other.join().unwrap();
        outcomes
    });
    assert_eq!(first.unwrap().flag.name, "first");
    assert_eq!(second.unwrap().flag.name, "second");
    assert_eq!(
        third.unwrap().flag.environments["production"]
            .prerequisites
            .len(),
        1
    );
    for (key, outcome) in others.iter().zip(renamed) {
        assert_eq!(outcome.unwrap().flag.name, "renamed", "{key}");
    }
    let after = flag_of(service, &caller, "f");
    assert_eq!(after.name, "second");
    assert_eq!(after.version, before.version + 3);
    assert_eq!(after.environments["production"].prerequisites.len(), 1);
}

/// A batch (changes to one flag written together) that deletes the flag in its middle: the
/// changes before are kept in the audit log, the delete answers the flag as it left it, the ones
/// after find no flag (404), and nothing of the flag remains.
#[test]
fn a_delete_in_the_middle_of_a_batch() {
    use diesel::connection::SimpleConnection;
    use std::time::Duration;

    let (db, service, caller) = service_on(Backend::Postgres);
    let before = service
        .flags()
        .create_flag(
            &caller.may(use_case::CreateFlag).unwrap(),
            "p",
            serde_json::from_value(json!({"key": "f", "name": "F", "tags": ["x"]})).unwrap(),
        )
        .unwrap()
        .flag;
    let permit = caller.may(use_case::PatchFlag).unwrap();
    let rename = |name: &str| {
        FlagChange::JsonPatch(patch(
            json!([{"op": "replace", "path": "/name", "value": name}]),
        ))
    };
    let delete = FlagChange::Semantic(
        SemanticPatch::parse(json!({"instructions": [{"kind": "deleteFlag"}]})).unwrap(),
    );
    let mut holds_flag = db.pg_connection();
    holds_flag
        .batch_execute("BEGIN; SELECT 1 FROM flags WHERE key = 'f' FOR UPDATE")
        .unwrap();
    let pause = || std::thread::sleep(Duration::from_millis(300));
    let (service, permit) = (&service, &permit);
    let outcomes = std::thread::scope(|scope| {
        let mut handles = vec![scope.spawn(|| {
            service
                .flags()
                .patch_flag(permit, "p", "f", &rename("zero"))
        })];
        pause();
        for change in [rename("a"), delete, rename("c")] {
            handles
                .push(scope.spawn(move || service.flags().patch_flag(permit, "p", "f", &change)));
            pause();
        }
        holds_flag.batch_execute("COMMIT").unwrap();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    let names: Vec<_> = outcomes[..3]
        .iter()
        .map(|o| o.as_ref().unwrap().flag.name.clone())
        .collect();
    assert_eq!(names, ["zero", "a", "a"]);
    assert_eq!(
        outcomes[2].as_ref().unwrap().flag.version,
        before.version + 2
    );
    assert!(
        matches!(outcomes[3], Err(ServiceError::NotFound(_))),
        "{:?}",
        outcomes[3]
    );
    assert!(matches!(
        service
            .flags()
            .get_flag(&caller.may(use_case::GetFlag).unwrap(), "p", "f", &[]),
        Err(ServiceError::NotFound(_))
    ));
    for table in ["flags", "flag_configs", "flag_tags"] {
        assert_eq!(db.count_rows(table), 0, "{table}");
    }
    let page = service
        .audit_log()
        .list_audit_log(
            &caller.may(use_case::ReadAuditLog).unwrap(),
            &AuditQuery {
                before: None,
                before_id: None,
                after: None,
                q: None,
                spec: Some("proj/p:env/*:flag/f".to_owned()),
                limit: 20,
            },
        )
        .unwrap();
    let deleted = page
        .iter()
        .find(|e| e.accesses.iter().any(|a| a.action == "deleteFlag"))
        .expect("the delete is audited");
    let deleted = service
        .audit_log()
        .get_audit_entry(
            &caller.may(use_case::ReadAuditLog).unwrap(),
            deleted.id.as_str(),
        )
        .unwrap();
    assert_eq!(
        deleted.previous_version.as_ref().unwrap().to_value()["_version"],
        json!(before.version + 2)
    );
    assert_eq!(
        deleted.previous_version.as_ref().unwrap().to_value()["name"],
        json!("a")
    );
}

/// A listing of live flags never shows an archived one, not even while a flag is archived and
/// restored over and over: the page is read in two statements (its keys, then its rows), and a
/// flag archived between the two must not come back as a live flag (PostgreSQL: a read runs
/// without a transaction, each statement on its own snapshot).
#[test]
fn a_live_listing_never_shows_an_archived_flag() {
    use domain::query::{Direction, FlagQuery, FlagSortField, Page, Sort};
    use service::{EnvironmentSelection, FlagListRequest};
    use std::sync::atomic::AtomicBool;

    let (_db, service, caller) = service_on(Backend::Postgres);
    let create = caller.may(use_case::CreateFlag).unwrap();
    for key in ["a", "f", "z"] {
        service
            .flags()
            .create_flag(
                &create,
                "p",
                serde_json::from_value(json!({"key": key, "name": key})).unwrap(),
            )
            .unwrap();
    }
    let permit = caller.may(use_case::PatchFlag).unwrap();
    let request = FlagListRequest {
        query: FlagQuery {
            query: None,
            tags: vec![],
            state: None,
            temporary: None,
            maintainer_id: None,
            sort: Sort {
                field: FlagSortField::Key,
                direction: Direction::Ascending,
            },
            page: Some(Page {
                limit: 20,
                offset: 0,
            }),
        },
        environments: EnvironmentSelection::None,
    };
    let done = AtomicBool::new(false);
    let seen_archived = std::thread::scope(|scope| {
        let (service, permit, done) = (&service, &permit, &done);
        scope.spawn(move || {
            for round in 0..400 {
                let kind = if round % 2 == 0 {
                    "archiveFlag"
                } else {
                    "restoreFlag"
                };
                let change = FlagChange::Semantic(
                    SemanticPatch::parse(json!({"instructions": [{"kind": kind}]})).unwrap(),
                );
                service
                    .flags()
                    .patch_flag(permit, "p", "f", &change)
                    .unwrap();
            }
            done.store(true, Ordering::SeqCst);
        });
        let mut seen = vec![];
        while !done.load(Ordering::SeqCst) {
            let listed = service
                .flags()
                .list_flags(&caller.may(use_case::ListFlags).unwrap(), "p", &request)
                .unwrap();
            seen.extend(
                listed
                    .items
                    .iter()
                    .filter(|f| f.flag.archived)
                    .map(|f| f.flag.version),
            );
        }
        seen
    });
    assert!(
        seen_archived.is_empty(),
        "archived flag listed as live at versions {seen_archived:?}"
    );
}

/// Two changes in one batch that both `test` the same `_version`: the first is written, the
/// second sees the version the first made and is refused with a 409; the first's change stays.
#[test]
fn a_version_test_in_a_batch_sees_the_changes_before_it() {
    use diesel::connection::SimpleConnection;
    use std::time::Duration;

    let (db, service, caller) = service_on(Backend::Postgres);
    let before = service
        .flags()
        .create_flag(
            &caller.may(use_case::CreateFlag).unwrap(),
            "p",
            serde_json::from_value(json!({"key": "f", "name": "F"})).unwrap(),
        )
        .unwrap()
        .flag;
    let permit = caller.may(use_case::PatchFlag).unwrap();
    let tested_rename = |version: i64, name: &str| {
        FlagChange::JsonPatch(patch(json!([
            {"op": "test", "path": "/_version", "value": version},
            {"op": "replace", "path": "/name", "value": name}
        ])))
    };
    let mut holds_flag = db.pg_connection();
    holds_flag
        .batch_execute("BEGIN; SELECT 1 FROM flags WHERE key = 'f' FOR UPDATE")
        .unwrap();
    let pause = || std::thread::sleep(Duration::from_millis(300));
    let (service, permit) = (&service, &permit);
    let outcomes = std::thread::scope(|scope| {
        let mut handles = vec![];
        for change in [
            tested_rename(before.version, "zero"),
            tested_rename(before.version + 1, "first"),
            tested_rename(before.version + 1, "second"),
        ] {
            handles
                .push(scope.spawn(move || service.flags().patch_flag(permit, "p", "f", &change)));
            pause();
        }
        holds_flag.batch_execute("COMMIT").unwrap();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert_eq!(outcomes[0].as_ref().unwrap().flag.name, "zero");
    let first = outcomes[1].as_ref().unwrap();
    assert_eq!(
        (first.flag.name.as_str(), first.flag.version),
        ("first", before.version + 2)
    );
    assert!(
        matches!(outcomes[2], Err(ServiceError::VersionConflict(_))),
        "{:?}",
        outcomes[2]
    );
    let after = flag_of(service, &caller, "f");
    assert_eq!(
        (after.name.as_str(), after.version),
        ("first", before.version + 2)
    );
}

/// Creations hold their project shared (PostgreSQL), side by side; a change that holds it alone
/// (a project patch here; an environment creation, a flag delete, a prerequisite change) still
/// gets its turn while they go on: a share asked for while it waits queues behind it, instead of
/// joining the shares held and keeping it out for as long as creations overlap.
#[test]
fn a_stream_of_flag_creations_does_not_starve_a_project_patch() {
    use std::sync::atomic::AtomicBool;
    // Connections for every creator and the patch: creations overlap all the time.
    let db = adapter_postgres::TestDatabase::create(&crate::common::postgres_server_url()).unwrap();
    let (service, caller) =
        service_over(Arc::new(adapter_postgres::connect(db.url(), 10).unwrap()));
    let create = |key: &str| {
        service.flags().create_flag(
            &caller.may(use_case::CreateFlag).unwrap(),
            "p",
            serde_json::from_value(json!({
                "key": key, "name": "F",
                "variations": [{"value": true}, {"value": false}],
            }))
            .unwrap(),
        )
    };
    let stop = AtomicBool::new(false);
    let created = AtomicUsize::new(0);
    let patch =
        JsonPatchBody::parse(json!([{"op": "replace", "path": "/name", "value": "Q"}])).unwrap();
    let (created_before_the_patch, created_in_all) = std::thread::scope(|scope| {
        let (create, stop, created) = (&create, &stop, &created);
        for t in 0..6 {
            scope.spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    create(&format!("f-{t}-{i}")).unwrap();
                    created.fetch_add(1, Ordering::SeqCst);
                    i += 1;
                }
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        let (service, caller, patch) = (&service, &caller, &patch);
        let patcher = scope.spawn(move || {
            let started = std::time::Instant::now();
            service
                .projects()
                .patch_project(&caller.may(use_case::PatchProject).unwrap(), "p", patch)
                .unwrap();
            (started.elapsed(), created.load(Ordering::SeqCst))
        });
        // Creations go on for 4 s; the patch must not wait for them to stop (it waited the
        // whole 4 s before the gate; it takes milliseconds with it).
        std::thread::sleep(std::time::Duration::from_secs(4));
        stop.store(true, Ordering::SeqCst);
        let (took, before) = patcher.join().unwrap();
        assert!(
            took < std::time::Duration::from_secs(2),
            "the patch waited {took:?}, until creations stopped"
        );
        (before, created.load(Ordering::SeqCst))
    });
    assert!(created_before_the_patch < created_in_all);
    assert_eq!(
        service
            .projects()
            .get_project(&caller.may(use_case::GetProject).unwrap(), "p", false)
            .map(|p| p.project.name)
            .unwrap(),
        "Q"
    );
}

/// Flag `key` of project `p` as it is now.
fn flag_of(service: &Service, caller: &Caller, key: &str) -> domain::flag::Flag {
    service
        .flags()
        .get_flag(&caller.may(use_case::GetFlag).unwrap(), "p", key, &[])
        .unwrap()
        .flag
}

/// Creates flags `keys` (each named after its key) in project `p`.
fn create_flags<'k>(service: &Service, caller: &Caller, keys: impl IntoIterator<Item = &'k str>) {
    let create = caller.may(use_case::CreateFlag).unwrap();
    for key in keys {
        service
            .flags()
            .create_flag(
                &create,
                "p",
                serde_json::from_value(json!({"key": key, "name": key})).unwrap(),
            )
            .unwrap();
    }
}

/// A rename of a flag, as a JSON Patch.
fn rename(name: &str) -> FlagChange {
    FlagChange::JsonPatch(patch(
        json!([{"op": "replace", "path": "/name", "value": name}]),
    ))
}

/// Makes `g` (serving its first variation) a prerequisite in production.
fn prerequisite_g(service: &Service, caller: &Caller) -> FlagChange {
    let g_variation = flag_of(service, caller, "g").variations[0].id.clone();
    FlagChange::Semantic(
        SemanticPatch::parse(json!({"environmentKey": "production", "instructions": [
            {"kind": "addPrerequisite", "key": "g", "variationId": g_variation}]}))
        .unwrap(),
    )
}

/// Two sessions in open transactions: one holds flag `f`'s row, the other project `p`'s (and
/// waits 20 s before looking for a deadlock, so that the batch is the one to lose).
fn hold_f_and_p(db: &Db) -> (diesel::PgConnection, diesel::PgConnection) {
    use diesel::connection::SimpleConnection;
    let mut holds_flag = db.pg_connection();
    let mut holds_project = db.pg_connection();
    holds_flag
        .batch_execute("BEGIN; SELECT 1 FROM flags WHERE key = 'f' FOR UPDATE")
        .unwrap();
    holds_project
        .batch_execute(
            "BEGIN; SET LOCAL deadlock_timeout = '20s'; \
             SELECT 1 FROM projects WHERE key = 'p' FOR UPDATE",
        )
        .unwrap();
    (holds_flag, holds_project)
}
