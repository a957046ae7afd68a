//! Counters and sets of one object, raised from many threads at once: none loses a change.

use super::*;

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
                .projects()
                .get_project(&caller.may(use_case::GetProject).unwrap(), "p", false)
                .unwrap()
                .project
                .name
        },
        |body| {
            service
                .projects()
                .patch_project(&permit, "p", body)
                .map(drop)
        },
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
                .environments()
                .get_environment(
                    &caller.may(use_case::GetEnvironment).unwrap(),
                    "p",
                    "production",
                )
                .unwrap()
                .name
        },
        |body| {
            service
                .environments()
                .patch_environment(&permit, "p", "production", body)
                .map(drop)
        },
    );
}

fn segment_counter_loses_nothing(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    service
        .segments()
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
                .segments()
                .get_segment(
                    &caller.may(use_case::GetSegment).unwrap(),
                    "p",
                    "production",
                    "s",
                )
                .unwrap()
                .segment
                .name
        },
        |body| {
            service
                .segments()
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
        .webhooks()
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
                .webhooks()
                .get_webhook(&caller.may(use_case::GetWebhook).unwrap(), &webhook.id)
                .unwrap()
                .name
                .unwrap_or_default()
        },
        |body| {
            service
                .webhooks()
                .patch_webhook(&permit, &webhook.id, body)
                .map(drop)
        },
    );
}

fn custom_role_counter_loses_nothing(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    service
        .custom_roles()
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
        || {
            service
                .custom_roles()
                .get_custom_role(&caller.may(use_case::GetCustomRole).unwrap(), "r")
                .unwrap()
                .name
        },
        |body| {
            service
                .custom_roles()
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
    let members = service.members().invite_members(&invite, forms).unwrap();
    service
        .teams()
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
                .teams()
                .add_member_to_teams(&patch_member, &id, &["t".to_owned()])
                .map(drop);
        }
        let body = json!({"instructions": [{"kind": kind, "values": [id]}]});
        service
            .teams()
            .patch_team(
                &patch_team,
                "t",
                &domain::team::TeamPatch::parse(body).unwrap(),
            )
            .map(drop)
    });
    assert_eq!(acknowledged, THREADS * changes);
    let team = service
        .teams()
        .get_team(&caller.may(use_case::GetTeam).unwrap(), "t")
        .unwrap();
    assert_eq!(team.member_count, THREADS as u64);
    assert_eq!(team.team.version, 1 + (THREADS * changes) as u64);
    for member in &members {
        let member = service
            .members()
            .get_member(
                &caller.may(use_case::GetMember).unwrap(),
                member.id.as_str(),
            )
            .unwrap();
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
            .projects()
            .patch_project(&permit, "p", &add_tag(t, i))
            .map(drop)
    });
    assert_eq!(acknowledged, THREADS * 6);
    let project = service
        .projects()
        .get_project(&caller.may(use_case::GetProject).unwrap(), "p", false)
        .unwrap()
        .project;
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
        .members()
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
                let m = service
                    .members()
                    .get_member(&caller.may(use_case::GetMember).unwrap(), &member.id)
                    .unwrap();
                m.first_name.unwrap_or_default()
            },
            |body| {
                service
                    .members()
                    .patch_member(&permit, &member.id, body)
                    .map(drop)
            },
        )
    });
    assert_eq!(acknowledged, THREADS * PER_THREAD);
    let stored = service
        .members()
        .get_member(&caller.may(use_case::GetMember).unwrap(), &member.id)
        .unwrap();
    assert_eq!(stored.first_name, Some(acknowledged.to_string()));
    assert_eq!(
        audit_entries(&service, &caller, &format!("member/{}", member.id)) - audited,
        acknowledged
    );
}

fn token_counter_loses_nothing(backend: Backend) {
    let (_db, service, caller) = service_on(backend);
    let token = service
        .tokens()
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
            || {
                service
                    .tokens()
                    .get_token(&caller.may(use_case::GetToken).unwrap(), &token.id)
                    .unwrap()
                    .description
            },
            |body| {
                service
                    .tokens()
                    .patch_token(&permit, &token.id, body)
                    .map(drop)
            },
        )
    });
    assert_eq!(acknowledged, THREADS * PER_THREAD);
    let stored = service
        .tokens()
        .get_token(&caller.may(use_case::GetToken).unwrap(), &token.id)
        .unwrap();
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
        .flags()
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
            .flags()
            .patch_flag(&permit, "p", "f", &FlagChange::Semantic(patch))
            .map(drop)
    });
    assert_eq!(acknowledged, THREADS * PER_THREAD);
    let after = service
        .flags()
        .get_flag(&caller.may(use_case::GetFlag).unwrap(), "p", "f", &[])
        .unwrap()
        .flag;
    let targets = &after.environments["production"].targets;
    assert_eq!(targets.len(), 1);
    assert_eq!(targets[0].values.len(), 400);
    assert_eq!(after.version, flag.version + 400);
    assert_eq!(after.environments["production"].version, 401);
}

storage_on_every_store!(
    project_counter_loses_nothing,
    environment_counter_loses_nothing,
    segment_counter_loses_nothing,
    webhook_counter_loses_nothing,
    custom_role_counter_loses_nothing,
    team_members_lose_nothing,
    project_tags_lose_nothing,
    member_counter_loses_nothing,
    token_counter_loses_nothing,
    flag_targets_lose_nothing,
);
