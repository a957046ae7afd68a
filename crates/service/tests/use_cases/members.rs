//! Ownership (one owner; an admin cannot become, demote or delete it; the owner transfers it) and
//! role caps on members (no role above your own; a member's role bounds its tokens).

use domain::id::MemberId;
use domain::key::{FlagKey, ProjectKey};
use domain::query::MemberQuery;
use domain::role::Role;
use serde_json::json;
use service::{use_case, ServiceError};

use crate::{json_patch, Fixture};

fn owners(fx: &Fixture) -> Vec<String> {
    let query = MemberQuery::parse(Some("role:owner"), None, None, None).unwrap();
    let owners = fx.read(|repo| repo.list_members(&query)).items;
    owners.into_iter().map(|m| m.id.to_string()).collect()
}

#[test]
fn an_admin_can_neither_become_nor_demote_nor_delete_the_owner() {
    let fx = Fixture::new();
    let ann = fx.invite("ann@example.com", "admin");
    let bob = fx.invite("bob@example.com", "reader");
    let admin = fx.caller_for(&ann, Role::Admin);
    let owner_id = fx.owner.member_id().to_string();

    let make_owner = json_patch(json!([{"op": "replace", "path": "/role", "value": "owner"}]));
    let permit = admin.may(use_case::PatchMember).unwrap();
    for target in [&bob, &ann] {
        let refused = fx
            .service
            .members()
            .patch_member(&permit, target, &make_owner);
        assert!(
            matches!(refused, Err(ServiceError::PatchFailed(_))),
            "{refused:?}"
        );
    }
    let demote = json_patch(json!([{"op": "replace", "path": "/role", "value": "reader"}]));
    let refused = fx
        .service
        .members()
        .patch_member(&permit, &owner_id, &demote);
    assert!(
        matches!(refused, Err(ServiceError::NotPermitted(_))),
        "{refused:?}"
    );
    let refused = fx
        .service
        .members()
        .delete_member(&admin.may(use_case::DeleteMember).unwrap(), &owner_id);
    assert!(
        matches!(refused, Err(ServiceError::WrongState(_))),
        "{refused:?}"
    );

    assert_eq!(owners(&fx), std::slice::from_ref(&owner_id));
    assert_eq!(fx.member(&owner_id).role, Role::Owner);
    assert_eq!(fx.member(&ann).role, Role::Admin);
    assert_eq!(fx.member(&bob).role, Role::Reader);
}

#[test]
fn the_owner_transfers_ownership_and_becomes_an_admin() {
    let fx = Fixture::new();
    let ann = fx.invite("ann@example.com", "reader");
    let bob = fx.invite("bob@example.com", "reader");
    let owner_id = fx.owner.member_id().to_string();

    let make_owner = json_patch(json!([{"op": "replace", "path": "/role", "value": "owner"}]));
    let permit = fx.owner.may(use_case::PatchMember).unwrap();
    let ann_now = fx
        .service
        .members()
        .patch_member(&permit, &ann, &make_owner)
        .unwrap();
    assert_eq!(ann_now.role, Role::Owner);

    // One owner, in the store as in the answer; the former owner is an admin.
    assert_eq!(owners(&fx), std::slice::from_ref(&ann));
    assert_eq!(fx.member(&owner_id).role, Role::Admin);
    assert_eq!(
        fx.read(|repo| repo.find_owner()).map(|m| m.id.to_string()),
        Some(ann.clone())
    );

    // The former owner's token now acts as an admin: it cannot transfer ownership again, nor
    // take it back.
    for target in [&bob, &owner_id] {
        let refused = fx
            .service
            .members()
            .patch_member(&permit, target, &make_owner);
        assert!(
            matches!(refused, Err(ServiceError::PatchFailed(_))),
            "{refused:?}"
        );
    }
    // Nor delete the new owner.
    let refused = fx
        .service
        .members()
        .delete_member(&fx.owner.may(use_case::DeleteMember).unwrap(), &ann);
    assert!(
        matches!(refused, Err(ServiceError::WrongState(_))),
        "{refused:?}"
    );
    assert_eq!(owners(&fx), [ann]);
    assert_eq!(fx.member(&bob).role, Role::Reader);
}

#[test]
fn nobody_gives_a_role_above_their_own() {
    let fx = Fixture::new();
    let ann = fx.invite("ann@example.com", "admin");
    let wes = fx.invite("wes@example.com", "writer");
    let rae = fx.invite("rae@example.com", "reader");
    let admin = fx.caller_for(&ann, Role::Admin);
    // A writer's admin token acts as a writer: it manages no members at all.
    let writer = fx.caller_for(&wes, Role::Admin);
    assert_eq!(writer.role(), Role::Writer);

    let to_admin = json_patch(json!([{"op": "replace", "path": "/role", "value": "admin"}]));
    let refused = writer
        .may(use_case::PatchMember)
        .and_then(|permit| fx.service.members().patch_member(&permit, &rae, &to_admin));
    assert!(
        matches!(refused, Err(ServiceError::NotPermitted(_))),
        "{refused:?}"
    );
    let form =
        serde_json::from_value(json!({"email": "new@example.com", "role": "reader"})).unwrap();
    let refused = writer
        .may(use_case::InviteMembers)
        .and_then(|permit| fx.service.members().invite_members(&permit, vec![form]));
    assert!(
        matches!(refused, Err(ServiceError::NotPermitted(_))),
        "{refused:?}"
    );
    assert_eq!(fx.member(&rae).role, Role::Reader);

    // An admin may raise a reader up to admin, its own role.
    let permit = admin.may(use_case::PatchMember).unwrap();
    let raised = fx
        .service
        .members()
        .patch_member(&permit, &rae, &to_admin)
        .unwrap();
    assert_eq!(raised.role, Role::Admin);
    assert_eq!(fx.member(&rae).role, Role::Admin);
}

#[test]
fn a_demoted_member_s_tokens_are_capped_at_once() {
    let fx = Fixture::new();
    fx.service
        .projects()
        .create_project(
            &fx.owner.may(use_case::CreateProject).unwrap(),
            serde_json::from_value(json!({"key": "p", "name": "P"})).unwrap(),
        )
        .unwrap();
    let ann = fx.invite("ann@example.com", "writer");
    let secret = fx.token_for(&ann, Role::Admin);
    let flag = |key: &str| serde_json::from_value(json!({"key": key, "name": key})).unwrap();
    let writer = fx.service.authentication().authenticate(&secret).unwrap();
    assert_eq!(writer.role(), Role::Writer);
    let permit = writer.may(use_case::CreateFlag).unwrap();
    fx.service
        .flags()
        .create_flag(&permit, "p", flag("f"))
        .unwrap();

    let to_reader = json_patch(json!([{"op": "replace", "path": "/role", "value": "reader"}]));
    let permit = fx.owner.may(use_case::PatchMember).unwrap();
    fx.service
        .members()
        .patch_member(&permit, &ann, &to_reader)
        .unwrap();
    assert_eq!(fx.member(&ann).role, Role::Reader);

    // The next request with the same token acts as a reader: the demotion dropped what the
    // service remembered of the member's tokens. (A caller authenticated before the demotion
    // keeps its role for flag writes: only the member and token use cases re-read the role
    // under lock.)
    let reader = fx.service.authentication().authenticate(&secret).unwrap();
    assert_eq!(reader.role(), Role::Reader);
    let refused = reader
        .may(use_case::CreateFlag)
        .and_then(|permit| fx.service.flags().create_flag(&permit, "p", flag("g")));
    assert!(
        matches!(refused, Err(ServiceError::NotPermitted(_))),
        "{refused:?}"
    );
    let project = fx
        .read(|repo| repo.get_project(&ProjectKey::parse("p").unwrap()))
        .unwrap();
    let [g, f] = ["g", "f"].map(|key| FlagKey::parse(key).unwrap());
    assert!(fx.read(|repo| repo.get_flag(&project.id, &g)).is_none());
    assert!(fx.read(|repo| repo.get_flag(&project.id, &f)).is_some());
}

#[test]
fn deleting_a_member_deletes_its_personal_tokens_and_hands_on_its_service_tokens() {
    let fx = Fixture::new();
    let ann = fx.invite("ann@example.com", "admin");
    let admin = fx.caller_for(&ann, Role::Admin);
    let post = |service_token: bool| {
        serde_json::from_value(
            json!({"name": "t", "role": "reader", "serviceToken": service_token}),
        )
        .unwrap()
    };
    let permit = admin.may(use_case::CreateToken).unwrap();
    let personal = fx
        .service
        .tokens()
        .create_token(&permit, post(false))
        .unwrap()
        .token;
    let shared = fx
        .service
        .tokens()
        .create_token(&permit, post(true))
        .unwrap()
        .token;

    fx.service
        .members()
        .delete_member(&fx.owner.may(use_case::DeleteMember).unwrap(), &ann)
        .unwrap();

    let ann = MemberId::parse(&ann).unwrap();
    assert!(fx.read(|repo| repo.get_member(&ann)).is_none());
    assert!(fx.read(|repo| repo.get_token(&personal.id)).is_none());
    assert!(fx
        .read(|repo| repo.get_token(admin.token_id().unwrap()))
        .is_none());
    let handed_on = fx.read(|repo| repo.get_token(&shared.id)).unwrap();
    assert_eq!(handed_on.member_id, fx.owner.member_id());
}
