//! Races between objects (an owner, an email, a project and its flags, prerequisites) and
//! changes written in batches: each ends as if the changes had run one after another.

use super::*;

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
    let admins = service.members().invite_members(&permit, forms).unwrap();
    let permit = caller.may(use_case::PatchMember).unwrap();
    let outcomes: Vec<Result<(), ServiceError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = admins
            .iter()
            .map(|admin| {
                let (service, permit) = (&service, &permit);
                scope.spawn(move || {
                    service
                        .members()
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
        .members()
        .list_members(
            &service
                .authentication()
                .authenticate(OWNER)
                .unwrap()
                .may(use_case::ListMembers)
                .unwrap(),
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
                    service
                        .members()
                        .invite_members(permit, vec![form])
                        .map(drop)
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
                    .environments()
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
                    service.flags().create_flag(new_flag, "p", post).unwrap();
                }
            });
        }
    });
    let request = service::FlagListRequest {
        query: domain::query::FlagQuery::parse(None, None, None, None).unwrap(),
        environments: service::EnvironmentSelection::All,
    };
    let flags = service
        .flags()
        .list_flags(&caller.may(use_case::ListFlags).unwrap(), "p", &request)
        .unwrap();
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
                .flags()
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
                service
                    .flags()
                    .patch_flag(permit, "p", &of, &change)
                    .is_ok()
            });
            let second = scope.spawn(|| {
                let (of, change) = prerequisite(&a, &b, &variations[0]);
                barrier.wait();
                service
                    .flags()
                    .patch_flag(permit, "p", &of, &change)
                    .is_ok()
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
            .flags()
            .create_flag(
                &caller.may(use_case::CreateFlag).unwrap(),
                "p",
                serde_json::from_value(json!({"key": gone, "name": "G"})).unwrap(),
            )
            .unwrap()
            .flag;
        service
            .flags()
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
                service
                    .flags()
                    .delete_flag(&caller.may(use_case::DeleteFlag).unwrap(), "p", &gone)
                    .is_ok()
            });
            let add = scope.spawn(|| {
                let (of, change) = prerequisite(&gone, &user, &gone_flag.variations[0].id);
                barrier.wait();
                service
                    .flags()
                    .patch_flag(permit, "p", &of, &change)
                    .is_ok()
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
        .flags()
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
                .tokens()
                .create_token(
                    &caller.may(use_case::CreateToken).unwrap(),
                    serde_json::from_value(json!({"name": format!("w{t}"), "role": "writer"}))
                        .unwrap(),
                )
                .unwrap();
            service
                .authentication()
                .authenticate(&created.secret)
                .unwrap()
        })
        .collect();
    let per_thread = 5;
    let acknowledged = hammer_n(per_thread, |t, i| {
        let mut body = add_tag(t, i);
        body.comment = Some(format!("w{t}"));
        let permit = callers[t].may(use_case::PatchFlag).unwrap();
        service
            .flags()
            .patch_flag(&permit, "p", "f", &FlagChange::JsonPatch(body))
            .map(drop)
    });
    assert_eq!(acknowledged, THREADS * per_thread);
    let after = service
        .flags()
        .get_flag(&caller.may(use_case::GetFlag).unwrap(), "p", "f", &[])
        .unwrap()
        .flag;
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
        let page = service
            .audit_log()
            .list_audit_log(&caller.may(use_case::ReadAuditLog).unwrap(), &query)
            .unwrap();
        for listed in &page {
            let Some(comment) = &listed.comment else {
                continue;
            };
            let entry = service
                .audit_log()
                .get_audit_entry(
                    &caller.may(use_case::ReadAuditLog).unwrap(),
                    listed.id.as_str(),
                )
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
                .flags()
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
            .flags()
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
            .flags()
            .get_flag(
                &caller.may(use_case::GetFlag).unwrap(),
                "p",
                &format!("f{n}"),
                &[],
            )
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
                        match service.flags().create_flag(create, "p", post.unwrap()) {
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
        .flags()
        .list_flags(
            &caller.may(use_case::ListFlags).unwrap(),
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
    concurrent_prerequisites_never_form_a_cycle,
    concurrent_environment_and_flag_creation,
    concurrent_invites_of_one_email,
    concurrent_ownership_transfers_leave_one_owner,
    batched_flag_changes_are_audited_each_under_its_caller,
);
