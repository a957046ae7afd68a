//! Concurrent writers of one object, through the service on every store (the in-memory one too):
//! every acknowledged change is kept, and the audit log holds exactly one entry per acknowledged
//! change.

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
    service.bootstrap(Some(OWNER), "owner@example.com").unwrap();
    let caller = service.authenticate(OWNER).unwrap();
    service
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
        let page = service.page_audit_log(caller, &query).unwrap();
        count += page.entries.len();
        match page.next_before {
            Some(next) => before = Some(next),
            None => return count,
        }
    }
}

/// Sets `/name` to "0" (one audited change), then increments it from `THREADS` threads
/// `PER_THREAD` times each; every increment is kept and audited once.
fn name_counter_loses_nothing(
    service: &Service,
    caller: &Caller,
    spec: &str,
    read: impl Fn() -> String + Sync,
    write: impl Fn(&JsonPatchBody) -> Result<(), ServiceError> + Sync,
) {
    write(&patch(
        json!([{"op": "add", "path": "/name", "value": "0"}]),
    ))
    .unwrap();
    let audited = audit_entries(service, caller, spec);
    let acknowledged = hammer(|_, _| increment("/name", &read, &write));
    assert_eq!(acknowledged, THREADS * PER_THREAD);
    assert_eq!(read(), acknowledged.to_string());
    assert_eq!(audit_entries(service, caller, spec) - audited, acknowledged);
}

fn project_counter_loses_nothing(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    let permit = caller.may(use_case::PatchProject).unwrap();
    name_counter_loses_nothing(
        &service,
        &caller,
        "proj/p",
        || {
            service
                .get_project(&caller, "p", false)
                .unwrap()
                .project
                .name
        },
        |body| service.patch_project(&permit, "p", body).map(drop),
    );
}

fn environment_counter_loses_nothing(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    let permit = caller.may(use_case::PatchEnvironment).unwrap();
    name_counter_loses_nothing(
        &service,
        &caller,
        "proj/p:env/production",
        || {
            service
                .get_environment(&caller, "p", "production")
                .unwrap()
                .name
        },
        |body| {
            service
                .patch_environment(&permit, "p", "production", body)
                .map(drop)
        },
    );
}

fn segment_counter_loses_nothing(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    service
        .create_segment(
            &caller.may(use_case::CreateSegment).unwrap(),
            "p",
            "production",
            serde_json::from_value(json!({"key": "s", "name": "S"})).unwrap(),
        )
        .unwrap();
    let permit = caller.may(use_case::PatchSegment).unwrap();
    name_counter_loses_nothing(
        &service,
        &caller,
        "proj/p:env/production:segment/s",
        || {
            service
                .get_segment(&caller, "p", "production", "s")
                .unwrap()
                .segment
                .name
        },
        |body| {
            service
                .patch_segment(
                    &permit,
                    "p",
                    "production",
                    "s",
                    &SegmentChange::JsonPatch(body.clone()),
                )
                .map(drop)
        },
    );
}

fn webhook_counter_loses_nothing(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    // An address literal: no name to resolve, and nothing is delivered in this test.
    let webhook = service
        .create_webhook(
            &caller.may(use_case::CreateWebhook).unwrap(),
            serde_json::from_value(
                json!({"url": "https://93.184.216.34/hook", "sign": false, "on": false}),
            )
            .unwrap(),
        )
        .unwrap();
    let permit = caller.may(use_case::PatchWebhook).unwrap();
    name_counter_loses_nothing(
        &service,
        &caller,
        &format!("webhook/{}", webhook.id),
        || {
            service
                .get_webhook(&caller, &webhook.id)
                .unwrap()
                .name
                .unwrap_or_default()
        },
        |body| service.patch_webhook(&permit, &webhook.id, body).map(drop),
    );
}

fn custom_role_counter_loses_nothing(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    service
        .create_custom_role(
            &caller.may(use_case::CreateCustomRole).unwrap(),
            serde_json::from_value(json!({"key": "r", "name": "R", "policy": []})).unwrap(),
        )
        .unwrap();
    let permit = caller.may(use_case::PatchCustomRole).unwrap();
    name_counter_loses_nothing(
        &service,
        &caller,
        "role/r",
        || service.get_custom_role(&caller, "r").unwrap().name,
        |body| {
            service
                .patch_custom_role(&permit, "r", &CustomRoleChange::JsonPatch(body.clone()))
                .map(drop)
        },
    );
}

/// Members join and leave one team from 16 threads at once, by the team's semantic patch and by
/// `POST /members/{id}/teams`: every member ends in it, and every change moved its version once.
fn team_members_lose_nothing(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    let invite = caller.may(use_case::InviteMembers).unwrap();
    let forms = (0..THREADS)
        .map(|t| serde_json::from_value(json!({"email": format!("m{t}@example.com")})).unwrap())
        .collect();
    let members = service.invite_members(&invite, forms).unwrap();
    service
        .create_team(
            &caller.may(use_case::CreateTeam).unwrap(),
            serde_json::from_value(json!({"key": "t", "name": "T"})).unwrap(),
        )
        .unwrap();
    let patch_team = caller.may(use_case::PatchTeam).unwrap();
    let patch_member = caller.may(use_case::PatchMember).unwrap();
    let changes = 5;
    let acknowledged = hammer_n(changes, |thread, i| {
        let id = members[thread].id.to_string();
        let kind = if i % 2 == 0 {
            "addMembers"
        } else {
            "removeMembers"
        };
        if kind == "addMembers" && thread % 2 == 1 {
            return service
                .add_member_to_teams(&patch_member, &id, &["t".to_owned()])
                .map(drop);
        }
        let body = json!({"instructions": [{"kind": kind, "values": [id]}]});
        service
            .patch_team(
                &patch_team,
                "t",
                &domain::team::TeamPatch::parse(body).unwrap(),
            )
            .map(drop)
    });
    assert_eq!(acknowledged, THREADS * changes);
    let team = service.get_team(&caller, "t").unwrap();
    assert_eq!(team.member_count, THREADS as u64);
    assert_eq!(team.team.version, 1 + (THREADS * changes) as u64);
    for member in &members {
        let member = service.get_member(&caller, member.id.as_str()).unwrap();
        assert_eq!(member.teams.len(), 1, "{member:?}");
    }
}

/// Tags accumulate from concurrent `add /tags/-` (the shape of the reported loss), within the
/// limit of 100 tags per object: all of them arrive, each audited once.
fn project_tags_lose_nothing(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    let audited = audit_entries(&service, &caller, "proj/p");
    let permit = caller.may(use_case::PatchProject).unwrap();
    let acknowledged = hammer_n(6, |t, i| {
        service
            .patch_project(&permit, "p", &add_tag(t, i))
            .map(drop)
    });
    assert_eq!(acknowledged, THREADS * 6);
    let project = service.get_project(&caller, "p", false).unwrap().project;
    assert_eq!(project.tags.len(), acknowledged);
    assert_eq!(
        audit_entries(&service, &caller, "proj/p") - audited,
        acknowledged
    );
}

/// Read-modify-write through a JSON Patch `test`: each writer increments a counter held in a
/// text field, retrying when its `test` fails (409). Without the object held until commit, two
/// writers both pass their `test` on the same value and one increment is lost.
fn increment(
    field: &str,
    read: impl Fn() -> String,
    write: impl Fn(&JsonPatchBody) -> Result<(), ServiceError>,
) -> Result<(), ServiceError> {
    loop {
        let current = read();
        let next = current.parse::<usize>().unwrap() + 1;
        let body = patch(json!([
            {"op": "test", "path": field, "value": current},
            {"op": "replace", "path": field, "value": next.to_string()}
        ]));
        match write(&body) {
            Err(ServiceError::VersionConflict(_)) => continue,
            other => return other,
        }
    }
}

fn member_counter_loses_nothing(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    let member = service
        .invite_members(
            &caller.may(use_case::InviteMembers).unwrap(),
            vec![
                serde_json::from_value(json!({"email": "m@example.com", "firstName": "0"}))
                    .unwrap(),
            ],
        )
        .unwrap()
        .remove(0);
    let audited = audit_entries(&service, &caller, &format!("member/{}", member.id));
    let permit = caller.may(use_case::PatchMember).unwrap();
    let acknowledged = hammer(|_, _| {
        increment(
            "/firstName",
            || {
                let m = service.get_member(&caller, &member.id).unwrap();
                m.first_name.unwrap_or_default()
            },
            |body| service.patch_member(&permit, &member.id, body).map(drop),
        )
    });
    assert_eq!(acknowledged, THREADS * PER_THREAD);
    let stored = service.get_member(&caller, &member.id).unwrap();
    assert_eq!(stored.first_name, Some(acknowledged.to_string()));
    assert_eq!(
        audit_entries(&service, &caller, &format!("member/{}", member.id)) - audited,
        acknowledged
    );
}

fn token_counter_loses_nothing(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    let token = service
        .create_token(
            &caller.may(use_case::CreateToken).unwrap(),
            serde_json::from_value(
                json!({"name": "counter", "description": "0", "role": "reader"}),
            )
            .unwrap(),
        )
        .unwrap()
        .token;
    let audited = audit_entries(
        &service,
        &caller,
        &domain::policy::Resource::member(&token.member_id)
            .token("counter")
            .to_string(),
    );
    let permit = caller.may(use_case::PatchToken).unwrap();
    let acknowledged = hammer(|_, _| {
        increment(
            "/description",
            || service.get_token(&caller, &token.id).unwrap().description,
            |body| service.patch_token(&permit, &token.id, body).map(drop),
        )
    });
    assert_eq!(acknowledged, THREADS * PER_THREAD);
    let stored = service.get_token(&caller, &token.id).unwrap();
    assert_eq!(stored.description, acknowledged.to_string());
    assert_eq!(
        audit_entries(
            &service,
            &caller,
            &domain::policy::Resource::member(&token.member_id)
                .token("counter")
                .to_string()
        ) - audited,
        acknowledged
    );
}

/// Two writers never lose each other's change: 16 threads each add 25 distinct targets to one
/// flag through semantic patch; all 400 are there and `_version` grew by exactly 400.
fn flag_targets_lose_nothing(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    let flag = service
        .create_flag(
            &caller.may(use_case::CreateFlag).unwrap(),
            "p",
            serde_json::from_value(json!({"key": "f", "name": "F"})).unwrap(),
        )
        .unwrap()
        .flag;
    let variation = flag.variations[0].id.clone();
    let permit = caller.may(use_case::PatchFlag).unwrap();
    let acknowledged = hammer(|t, i| {
        let patch = SemanticPatch::parse(json!({"environmentKey": "production", "instructions": [
            {"kind": "addTargets", "values": [format!("t{t}-{i}")], "variationId": variation}]}))
        .unwrap();
        service
            .patch_flag(&permit, "p", "f", &FlagChange::Semantic(patch))
            .map(drop)
    });
    assert_eq!(acknowledged, THREADS * PER_THREAD);
    let after = service.get_flag(&caller, "p", "f", &[]).unwrap().flag;
    let targets = &after.environments["production"].targets;
    assert_eq!(targets.len(), 1);
    assert_eq!(targets[0].values.len(), 400);
    assert_eq!(after.version, flag.version + 400);
    assert_eq!(after.environments["production"].version, 401);
}

/// The owner sends four ownership transfers at once: exactly one wins, the others are refused
/// (the caller is no longer the owner once the first commits), and one owner remains.
fn concurrent_ownership_transfers_leave_one_owner(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    let forms = (0..4)
        .map(|n| {
            serde_json::from_value(json!({"email": format!("a{n}@example.com"), "role": "admin"}))
                .unwrap()
        })
        .collect();
    let permit = caller.may(use_case::InviteMembers).unwrap();
    let admins = service.invite_members(&permit, forms).unwrap();
    let permit = caller.may(use_case::PatchMember).unwrap();
    let outcomes: Vec<Result<(), ServiceError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = admins
            .iter()
            .map(|admin| {
                let (service, permit) = (&service, &permit);
                scope.spawn(move || {
                    service
                        .patch_member(
                            permit,
                            &admin.id,
                            &patch(json!([{"op": "replace", "path": "/role", "value": "owner"}])),
                        )
                        .map(drop)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let won = outcomes.iter().filter(|o| o.is_ok()).count();
    assert_eq!(won, 1, "{outcomes:?}");
    for lost in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        assert!(
            matches!(
                lost,
                ServiceError::NotPermitted(_) | ServiceError::PatchFailed(_)
            ),
            "{lost:?}"
        );
    }
    let page = service
        .list_members(
            &service.authenticate(OWNER).unwrap(),
            &domain::query::MemberQuery::parse(None, None, Some("100"), None).unwrap(),
        )
        .unwrap();
    let owners: Vec<_> = page
        .items
        .iter()
        .filter(|m| m.role == Role::Owner)
        .collect();
    assert_eq!(owners.len(), 1, "{owners:?}");
    assert_ne!(owners[0].email, "owner@example.com");
}

/// Eight invitations of one email at once: one member is created, the others are the
/// documented 400 `email_already_exists_in_account`, never a 409 with the engine's text.
fn concurrent_invites_of_one_email(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    let permit = caller.may(use_case::InviteMembers).unwrap();
    let outcomes: Vec<Result<(), ServiceError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (service, permit) = (&service, &permit);
                scope.spawn(move || {
                    let form =
                        serde_json::from_value(json!({"email": "same@example.com"})).unwrap();
                    service.invite_members(permit, vec![form]).map(drop)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        outcomes.iter().filter(|o| o.is_ok()).count(),
        1,
        "{outcomes:?}"
    );
    for refused in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        match refused {
            // The service names the situation; the code is the HTTP adapter's.
            ServiceError::EmailTaken(_) => {
                let adapter_http::ApiError { code, message, .. } =
                    adapter_http::ApiError::from(refused.clone());
                assert_eq!(code, "email_already_exists_in_account");
                assert!(message.contains("same@example.com"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}

/// Environments and flags created at the same time in one project: every flag ends up with a
/// configuration in every environment (neither creation misses the other's row).
fn concurrent_environment_and_flag_creation(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    let new_environment = caller.may(use_case::CreateEnvironment).unwrap();
    let new_flag = caller.may(use_case::CreateFlag).unwrap();
    std::thread::scope(|scope| {
        let (service, new_environment, new_flag) = (&service, &new_environment, &new_flag);
        scope.spawn(move || {
            for n in 0..12 {
                let post = serde_json::from_value(
                    json!({"key": format!("e{n}"), "name": format!("E{n}"), "color": "aabbcc"}),
                )
                .unwrap();
                service
                    .create_environment(new_environment, "p", post)
                    .unwrap();
            }
        });
        for thread in 0..3 {
            scope.spawn(move || {
                for n in 0..12 {
                    let post = serde_json::from_value(
                        json!({"key": format!("f{thread}-{n}"), "name": "F"}),
                    )
                    .unwrap();
                    service.create_flag(new_flag, "p", post).unwrap();
                }
            });
        }
    });
    let request = service::FlagListRequest {
        query: domain::query::FlagQuery::parse(None, None, None, None).unwrap(),
        environments: service::EnvironmentSelection::All,
    };
    let flags = service.list_flags(&caller, "p", &request).unwrap();
    assert_eq!(flags.items.len(), 36);
    for flag in flags.items.iter().map(|view| &view.flag) {
        assert_eq!(
            flag.environments.len(),
            14,
            "{}: {:?}",
            flag.key,
            flag.environments.keys()
        );
    }
}

/// Two flags made prerequisites of each other at the same moment: at most one of the two
/// patches may succeed, never a cycle. And a flag deleted while another makes it a prerequisite:
/// never a prerequisite on a flag that is gone.
fn concurrent_prerequisites_never_form_a_cycle(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    let prerequisite = |on: &str, of: &str, variation: &str| {
        let patch = SemanticPatch::parse(json!({"environmentKey": "production", "instructions": [
            {"kind": "addPrerequisite", "key": on, "variationId": variation}]}))
        .unwrap();
        (of.to_owned(), FlagChange::Semantic(patch))
    };
    let permit = caller.may(use_case::PatchFlag).unwrap();
    for round in 0..15 {
        let (a, b) = (format!("a{round}"), format!("b{round}"));
        let mut variations = vec![];
        for key in [&a, &b] {
            let flag = service
                .create_flag(
                    &caller.may(use_case::CreateFlag).unwrap(),
                    "p",
                    serde_json::from_value(json!({"key": key, "name": key})).unwrap(),
                )
                .unwrap()
                .flag;
            variations.push(flag.variations[0].id.clone());
        }
        let barrier = std::sync::Barrier::new(2);
        let (service, permit, barrier) = (&service, &permit, &barrier);
        let outcomes: Vec<bool> = std::thread::scope(|scope| {
            let first = scope.spawn(|| {
                let (of, change) = prerequisite(&b, &a, &variations[1]);
                barrier.wait();
                service.patch_flag(permit, "p", &of, &change).is_ok()
            });
            let second = scope.spawn(|| {
                let (of, change) = prerequisite(&a, &b, &variations[0]);
                barrier.wait();
                service.patch_flag(permit, "p", &of, &change).is_ok()
            });
            vec![first.join().unwrap(), second.join().unwrap()]
        });
        assert!(
            !(outcomes[0] && outcomes[1]),
            "round {round}: both prerequisites were added"
        );
    }
    // A delete racing a new prerequisite on the deleted flag.
    for round in 0..15 {
        let (gone, user) = (format!("gone{round}"), format!("user{round}"));
        let gone_flag = service
            .create_flag(
                &caller.may(use_case::CreateFlag).unwrap(),
                "p",
                serde_json::from_value(json!({"key": gone, "name": "G"})).unwrap(),
            )
            .unwrap()
            .flag;
        service
            .create_flag(
                &caller.may(use_case::CreateFlag).unwrap(),
                "p",
                serde_json::from_value(json!({"key": user, "name": "U"})).unwrap(),
            )
            .unwrap();
        let barrier = std::sync::Barrier::new(2);
        let (service, caller, permit, barrier) = (&service, &caller, &permit, &barrier);
        let (deleted, added) = std::thread::scope(|scope| {
            let delete = scope.spawn(|| {
                barrier.wait();
                service.delete_flag(caller, "p", &gone).is_ok()
            });
            let add = scope.spawn(|| {
                let (of, change) = prerequisite(&gone, &user, &gone_flag.variations[0].id);
                barrier.wait();
                service.patch_flag(permit, "p", &of, &change).is_ok()
            });
            (delete.join().unwrap(), add.join().unwrap())
        });
        assert!(
            !(deleted && added),
            "round {round}: a prerequisite on a deleted flag"
        );
    }
}

/// Changes to one flag from many callers at once (written in batches): each change is audited
/// once, under the token that sent it, and the entries' versions chain: each `previousVersion`
/// is the flag one version before its `currentVersion`, and every version from the first change
/// to the last is some change's `currentVersion` exactly once.
fn batched_flag_changes_are_audited_each_under_its_caller(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    let before = service
        .create_flag(
            &caller.may(use_case::CreateFlag).unwrap(),
            "p",
            serde_json::from_value(json!({"key": "f", "name": "F"})).unwrap(),
        )
        .unwrap()
        .flag;
    let callers: Vec<Caller> = (0..THREADS)
        .map(|t| {
            let created = service
                .create_token(
                    &caller.may(use_case::CreateToken).unwrap(),
                    serde_json::from_value(json!({"name": format!("w{t}"), "role": "writer"}))
                        .unwrap(),
                )
                .unwrap();
            service.authenticate(&created.secret).unwrap()
        })
        .collect();
    let per_thread = 5;
    let acknowledged = hammer_n(per_thread, |t, i| {
        let mut body = add_tag(t, i);
        body.comment = Some(format!("w{t}"));
        let permit = callers[t].may(use_case::PatchFlag).unwrap();
        service
            .patch_flag(&permit, "p", "f", &FlagChange::JsonPatch(body))
            .map(drop)
    });
    assert_eq!(acknowledged, THREADS * per_thread);
    let after = service.get_flag(&caller, "p", "f", &[]).unwrap().flag;
    assert_eq!(after.tags.len(), acknowledged);
    assert_eq!(
        after.version,
        before.version + i64::try_from(acknowledged).unwrap()
    );
    let mut versions = vec![];
    let mut listed_before = None;
    loop {
        let query = AuditQuery {
            before: listed_before,
            before_id: None,
            after: None,
            q: None,
            spec: Some("proj/p:env/*:flag/f".to_owned()),
            limit: 20,
        };
        let page = service.list_audit_log(&caller, &query).unwrap();
        for listed in &page {
            let Some(comment) = &listed.comment else {
                continue;
            };
            let entry = service
                .get_audit_entry(&caller, listed.id.as_str())
                .unwrap();
            assert_eq!(&entry.token.as_ref().unwrap().name, comment, "{entry:?}");
            let version = |v: &Option<ShownVersion>| {
                v.as_ref().unwrap().to_value()["_version"].as_i64().unwrap()
            };
            let current = version(&entry.current_version);
            assert_eq!(version(&entry.previous_version) + 1, current, "{entry:?}");
            versions.push(current);
        }
        match page.last() {
            Some(oldest) if page.len() == 20 => listed_before = Some(oldest.date),
            _ => break,
        }
    }
    versions.sort_unstable();
    let expected: Vec<i64> = (before.version + 1..=after.version).collect();
    assert_eq!(versions, expected);
}

/// Changes spread over the flags of one project lose nothing: those that arrive together are
/// written together, several flags in one transaction (the flags locked together, saved
/// together, their entries appended together). 16 threads × 25 changes over 8 flags, semantic
/// patches adding a distinct target and JSON Patches adding a distinct tag: every flag has all
/// of its own, its version grew by exactly its changes, and the audit log holds one entry per
/// change of each flag, whose versions chain.
fn changes_spread_over_flags_lose_nothing(backend: Backend) {
    const FLAGS: usize = 8;
    let (_db, service, caller) = service_on(backend);
    let create = caller.may(use_case::CreateFlag).unwrap();
    let flags: Vec<domain::flag::Flag> = (0..FLAGS)
        .map(|n| {
            service
                .create_flag(
                    &create,
                    "p",
                    serde_json::from_value(json!({"key": format!("f{n}"), "name": "F"})).unwrap(),
                )
                .unwrap()
                .flag
        })
        .collect();
    let flag_of = |t: usize, i: usize| (t + i) % FLAGS;
    let entries_before: Vec<usize> = (0..FLAGS)
        .map(|n| audit_entries(&service, &caller, &format!("proj/p:env/*:flag/f{n}")))
        .collect();
    let permit = caller.may(use_case::PatchFlag).unwrap();
    let acknowledged = hammer(|t, i| {
        let n = flag_of(t, i);
        let change = if i % 2 == 0 {
            FlagChange::Semantic(
                SemanticPatch::parse(json!({"environmentKey": "production", "instructions": [
                    {"kind": "addTargets", "values": [format!("t{t}-{i}")],
                     "variationId": flags[n].variations[0].id}]}))
                .unwrap(),
            )
        } else {
            FlagChange::JsonPatch(add_tag(t, i))
        };
        service
            .patch_flag(&permit, "p", &format!("f{n}"), &change)
            .map(drop)
    });
    assert_eq!(acknowledged, THREADS * PER_THREAD);
    for (n, before) in flags.iter().enumerate() {
        let mine: Vec<(usize, usize)> = (0..THREADS)
            .flat_map(|t| (0..PER_THREAD).map(move |i| (t, i)))
            .filter(|&(t, i)| flag_of(t, i) == n)
            .collect();
        let mut targets: Vec<String> = mine
            .iter()
            .filter(|(_, i)| i % 2 == 0)
            .map(|(t, i)| format!("t{t}-{i}"))
            .collect();
        let mut tags: Vec<String> = mine
            .iter()
            .filter(|(_, i)| i % 2 == 1)
            .map(|(t, i)| format!("t{t}-{i}"))
            .collect();
        let after = service
            .get_flag(&caller, "p", &format!("f{n}"), &[])
            .unwrap()
            .flag;
        let mut stored_targets = after.environments["production"].targets[0].values.clone();
        let mut stored_tags = after.tags.clone();
        for list in [
            &mut targets,
            &mut tags,
            &mut stored_targets,
            &mut stored_tags,
        ] {
            list.sort();
        }
        assert_eq!(stored_targets, targets, "flag f{n}");
        assert_eq!(stored_tags, tags, "flag f{n}");
        assert_eq!(
            after.version,
            before.version + i64::try_from(mine.len()).unwrap(),
            "flag f{n}"
        );
        assert_eq!(
            audit_entries(&service, &caller, &format!("proj/p:env/*:flag/f{n}")),
            entries_before[n] + mine.len(),
            "flag f{n}"
        );
    }
}

/// Flags created at once (created together, several in one transaction) are each created once:
/// 16 threads each create the same 25 keys, and 25 distinct ones of their own. Every key of
/// its own is created; of each shared key exactly one creation is, the others are refused as a
/// taken key (none fails otherwise), and the audit log holds one entry per flag created.
fn flags_created_at_once_are_each_created_once(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    let create = caller.may(use_case::CreateFlag).unwrap();
    let created = AtomicUsize::new(0);
    let taken = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let (service, create, created, taken) = (&service, &create, &created, &taken);
            scope.spawn(move || {
                for i in 0..PER_THREAD {
                    for key in [format!("shared-{i}"), format!("own-{thread}-{i}")] {
                        let post = serde_json::from_value(json!({"key": key, "name": key}));
                        match service.create_flag(create, "p", post.unwrap()) {
                            Ok(view) => {
                                assert_eq!(view.flag.key.as_str(), key);
                                created.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(ServiceError::KeyTaken(detail)) => {
                                assert!(key.starts_with("shared-"), "{key}: {detail:?}");
                                assert_eq!(
                                    detail.message,
                                    format!(
                                        "a flag with key '{key}' already exists in project 'p'"
                                    )
                                );
                                taken.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(other) => panic!("{key}: {other:?}"),
                        }
                    }
                }
            });
        }
    });
    let (created, taken) = (created.into_inner(), taken.into_inner());
    assert_eq!(created, PER_THREAD + THREADS * PER_THREAD);
    assert_eq!(taken, (THREADS - 1) * PER_THREAD);
    let listed = service
        .list_flags(
            &caller,
            "p",
            &service::FlagListRequest {
                query: domain::query::FlagQuery::parse(None, None, None, None).unwrap(),
                environments: service::EnvironmentSelection::All,
            },
        )
        .unwrap();
    assert_eq!(usize::try_from(listed.total).unwrap(), created);
    for view in &listed.items {
        // Every environment's configuration was created with the flag.
        assert_eq!(view.flag.environments.len(), 2, "{}", view.flag.key);
    }
    assert_eq!(
        audit_entries(&service, &caller, "proj/p:env/*:flag/*"),
        created
    );
}

storage_on_every_store!(
    flags_created_at_once_are_each_created_once,
    changes_spread_over_flags_lose_nothing,
    project_counter_loses_nothing,
    environment_counter_loses_nothing,
    segment_counter_loses_nothing,
    webhook_counter_loses_nothing,
    custom_role_counter_loses_nothing,
    team_members_lose_nothing,
    concurrent_prerequisites_never_form_a_cycle,
    concurrent_environment_and_flag_creation,
    concurrent_invites_of_one_email,
    project_tags_lose_nothing,
    member_counter_loses_nothing,
    token_counter_loses_nothing,
    flag_targets_lose_nothing,
    concurrent_ownership_transfers_leave_one_owner,
    batched_flag_changes_are_audited_each_under_its_caller,
);

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
    let create = caller.may(use_case::CreateFlag).unwrap();
    for key in ["f", "g"] {
        service
            .create_flag(
                &create,
                "p",
                serde_json::from_value(json!({"key": key, "name": key})).unwrap(),
            )
            .unwrap();
    }
    let g_variation = service
        .get_flag(&caller, "p", "g", &[])
        .unwrap()
        .flag
        .variations[0]
        .id
        .clone();
    let before = service.get_flag(&caller, "p", "f", &[]).unwrap().flag;
    let permit = caller.may(use_case::PatchFlag).unwrap();
    let rename = |name: &str| {
        FlagChange::JsonPatch(patch(
            json!([{"op": "replace", "path": "/name", "value": name}]),
        ))
    };
    let add_prerequisite = FlagChange::Semantic(
        SemanticPatch::parse(json!({"environmentKey": "production", "instructions": [
            {"kind": "addPrerequisite", "key": "g", "variationId": g_variation}]}))
        .unwrap(),
    );
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
    let pause = || std::thread::sleep(Duration::from_millis(400));
    let (service, permit) = (&service, &permit);
    let (first, second, third) = std::thread::scope(|scope| {
        let first = scope.spawn(|| service.patch_flag(permit, "p", "f", &rename("first")));
        pause();
        let second = scope.spawn(|| service.patch_flag(permit, "p", "f", &rename("second")));
        pause();
        let third = scope.spawn(|| service.patch_flag(permit, "p", "f", &add_prerequisite));
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
    let after = service.get_flag(&caller, "p", "f", &[]).unwrap().flag;
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
    let create = caller.may(use_case::CreateFlag).unwrap();
    let others: Vec<String> = (0..8).map(|n| format!("h{n}")).collect();
    for key in ["f", "g"]
        .into_iter()
        .chain(others.iter().map(String::as_str))
    {
        service
            .create_flag(
                &create,
                "p",
                serde_json::from_value(json!({"key": key, "name": key})).unwrap(),
            )
            .unwrap();
    }
    let g_variation = service
        .get_flag(&caller, "p", "g", &[])
        .unwrap()
        .flag
        .variations[0]
        .id
        .clone();
    let before = service.get_flag(&caller, "p", "f", &[]).unwrap().flag;
    let permit = caller.may(use_case::PatchFlag).unwrap();
    let rename = |name: &str| {
        FlagChange::JsonPatch(patch(
            json!([{"op": "replace", "path": "/name", "value": name}]),
        ))
    };
    let add_prerequisite = FlagChange::Semantic(
        SemanticPatch::parse(json!({"environmentKey": "production", "instructions": [
            {"kind": "addPrerequisite", "key": "g", "variationId": g_variation}]}))
        .unwrap(),
    );
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
    let pause = || std::thread::sleep(Duration::from_millis(400));
    let (service, permit, others) = (&service, &permit, &others);
    let (first, second, third, renamed) = std::thread::scope(|scope| {
        let first = scope.spawn(|| service.patch_flag(permit, "p", "f", &rename("first")));
        pause();
        let second = scope.spawn(|| service.patch_flag(permit, "p", "f", &rename("second")));
        pause();
        let third = scope.spawn(|| service.patch_flag(permit, "p", "f", &add_prerequisite));
        let renamed: Vec<_> = others
            .iter()
            .map(|key| {
                scope.spawn(move || service.patch_flag(permit, "p", key, &rename("renamed")))
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
    let after = service.get_flag(&caller, "p", "f", &[]).unwrap().flag;
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
        let mut handles =
            vec![scope.spawn(|| service.patch_flag(permit, "p", "f", &rename("zero")))];
        pause();
        for change in [rename("a"), delete, rename("c")] {
            handles.push(scope.spawn(move || service.patch_flag(permit, "p", "f", &change)));
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
        service.get_flag(&caller, "p", "f", &[]),
        Err(ServiceError::NotFound(_))
    ));
    for table in ["flags", "flag_configs", "flag_tags"] {
        assert_eq!(db.count_rows(table), 0, "{table}");
    }
    let page = service
        .list_audit_log(
            &caller,
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
        .get_audit_entry(&caller, deleted.id.as_str())
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
                service.patch_flag(permit, "p", "f", &change).unwrap();
            }
            done.store(true, Ordering::SeqCst);
        });
        let mut seen = vec![];
        while !done.load(Ordering::SeqCst) {
            let listed = service.list_flags(&caller, "p", &request).unwrap();
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
            handles.push(scope.spawn(move || service.patch_flag(permit, "p", "f", &change)));
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
    let after = service.get_flag(&caller, "p", "f", &[]).unwrap().flag;
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
        service.create_flag(
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
            .get_project(&caller, "p", false)
            .map(|p| p.project.name)
            .unwrap(),
        "Q"
    );
}
