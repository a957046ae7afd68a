//! Role caps on tokens: no token above your own role or its member's, and acting on another
//! member's token needs a role above theirs.

use domain::id::TokenId;
use domain::role::Role;
use domain::token::Token;
use serde_json::json;
use service::{use_case, Caller, ServiceError};

use crate::{json_patch, Fixture};

fn token_post(role: &str, service_token: bool) -> domain::token::TokenPost {
    serde_json::from_value(json!({"name": "t", "role": role, "serviceToken": service_token}))
        .unwrap()
}

/// Every way of acting on token `id` that must be refused to `caller`, and the token unchanged.
fn assert_hands_off(fx: &Fixture, caller: &Caller, id: &TokenId) {
    let before: Token = fx.read(|repo| repo.get_token(id)).unwrap();
    let rename = json_patch(json!([{"op": "replace", "path": "/name", "value": "mine"}]));
    let refusals = [
        caller
            .may(use_case::PatchToken)
            .and_then(|permit| fx.service.tokens().patch_token(&permit, id, &rename))
            .map(|_| ()),
        fx.service
            .tokens()
            .reset_token(&caller.may(use_case::ResetToken).unwrap(), id, None)
            .map(|_| ()),
        fx.service
            .tokens()
            .delete_token(&caller.may(use_case::DeleteToken).unwrap(), id),
    ];
    for refused in refusals {
        assert!(
            matches!(refused, Err(ServiceError::NotPermitted(_))),
            "{refused:?}"
        );
    }
    assert_eq!(fx.read(|repo| repo.get_token(id)), Some(before));
}

#[test]
fn an_admin_cannot_touch_the_owners_tokens() {
    let fx = Fixture::new();
    let ann = fx.invite("ann@example.com", "admin");
    let admin = fx.caller_for(&ann, Role::Admin);
    let permit = fx.owner.may(use_case::CreateToken).unwrap();
    let service_admin = fx
        .service
        .tokens()
        .create_token(&permit, token_post("admin", true))
        .unwrap();
    let service_admin = fx
        .service
        .authentication()
        .authenticate(&service_admin.secret)
        .unwrap();
    for caller in [&admin, &service_admin] {
        assert_hands_off(&fx, caller, fx.owner.token_id().unwrap());
    }
    assert_eq!(fx.member(fx.owner.member_id()).role, Role::Owner);
}

#[test]
fn acting_on_another_member_s_token_needs_a_role_above_theirs() {
    let fx = Fixture::new();
    let ann = fx.invite("ann@example.com", "admin");
    let eve = fx.invite("eve@example.com", "admin");
    let wes = fx.invite("wes@example.com", "writer");
    let admin = fx.caller_for(&ann, Role::Admin);
    let other_admin = fx.caller_for(&eve, Role::Admin);
    // Stored with `admin` for a member who is only a writer (demoted since, say).
    let writer = fx.caller_for(&wes, Role::Admin);

    // Another admin's token: hands off for an admin, not for the owner.
    assert_hands_off(&fx, &admin, other_admin.token_id().unwrap());
    fx.service
        .tokens()
        .reset_token(
            &fx.owner.may(use_case::ResetToken).unwrap(),
            other_admin.token_id().unwrap(),
            None,
        )
        .unwrap();

    // A writer's token stored with `admin`: the admin outranks the writer but not the token's
    // role (a member demoted a moment ago keeps its tokens from whoever outranks it then), so
    // only the owner resets it. The new secret acts as the writer it belongs to.
    assert_hands_off(&fx, &admin, writer.token_id().unwrap());
    let reset = fx
        .service
        .tokens()
        .reset_token(
            &fx.owner.may(use_case::ResetToken).unwrap(),
            writer.token_id().unwrap(),
            None,
        )
        .unwrap();
    let as_writer = fx
        .service
        .authentication()
        .authenticate(&reset.secret)
        .unwrap();
    assert_eq!(as_writer.role(), Role::Writer);
    let refused = as_writer
        .may(use_case::ListTokens)
        .and_then(|permit| fx.service.tokens().list_tokens(&permit, page(), false));
    assert!(
        matches!(refused, Err(ServiceError::NotPermitted(_))),
        "{refused:?}"
    );

    // Its own tokens are the admin's to manage.
    let rename = json_patch(json!([{"op": "replace", "path": "/name", "value": "renamed"}]));
    let permit = admin.may(use_case::PatchToken).unwrap();
    fx.service
        .tokens()
        .patch_token(&permit, admin.token_id().unwrap(), &rename)
        .unwrap();
    assert_eq!(
        fx.read(|repo| repo.get_token(admin.token_id().unwrap()))
            .unwrap()
            .name,
        "renamed"
    );
}

#[test]
fn no_token_above_your_own_role_or_its_member_s() {
    let fx = Fixture::new();
    let ann = fx.invite("ann@example.com", "admin");
    let admin = fx.caller_for(&ann, Role::Admin);
    let wes = fx.invite("wes@example.com", "writer");
    let writer = fx.caller_for(&wes, Role::Admin);

    // A writer manages no tokens at all.
    let refused = writer.may(use_case::CreateToken).and_then(|permit| {
        fx.service
            .tokens()
            .create_token(&permit, token_post("reader", false))
    });
    assert!(
        matches!(refused, Err(ServiceError::NotPermitted(_))),
        "{refused:?}"
    );

    // Ann's personal token, then Ann demoted to writer: the token cannot become admin, even by
    // the owner, but may become writer.
    let permit = admin.may(use_case::CreateToken).unwrap();
    let mine = fx
        .service
        .tokens()
        .create_token(&permit, token_post("reader", false))
        .unwrap()
        .token;
    let to_writer = json_patch(json!([{"op": "replace", "path": "/role", "value": "writer"}]));
    let permit = fx.owner.may(use_case::PatchMember).unwrap();
    fx.service
        .members()
        .patch_member(&permit, &ann, &to_writer)
        .unwrap();
    let to_admin = json_patch(json!([{"op": "replace", "path": "/role", "value": "admin"}]));
    let permit = fx.owner.may(use_case::PatchToken).unwrap();
    let refused = fx
        .service
        .tokens()
        .patch_token(&permit, &mine.id, &to_admin);
    assert!(
        matches!(refused, Err(ServiceError::PatchFailed(_))),
        "{refused:?}"
    );
    assert_eq!(
        fx.read(|repo| repo.get_token(&mine.id)).unwrap().role,
        Role::Reader
    );
    let raised = fx
        .service
        .tokens()
        .patch_token(&permit, &mine.id, &to_writer)
        .unwrap();
    assert_eq!(raised.role, Role::Writer);
    assert_eq!(
        fx.read(|repo| repo.get_token(&mine.id)).unwrap().role,
        Role::Writer
    );
}

#[test]
fn a_service_token_makes_only_service_tokens_within_its_role() {
    let fx = Fixture::new();
    let permit = fx.owner.may(use_case::CreateToken).unwrap();
    let created = fx
        .service
        .tokens()
        .create_token(&permit, token_post("writer", true))
        .unwrap();
    let service_writer = fx
        .service
        .authentication()
        .authenticate(&created.secret)
        .unwrap();
    assert_eq!(service_writer.role(), Role::Writer);
    let service_admin = fx
        .service
        .tokens()
        .create_token(&permit, token_post("admin", true))
        .unwrap();
    let service_admin = fx
        .service
        .authentication()
        .authenticate(&service_admin.secret)
        .unwrap();

    let permit = service_admin.may(use_case::CreateToken).unwrap();
    let refused = fx
        .service
        .tokens()
        .create_token(&permit, token_post("reader", false));
    assert!(
        matches!(refused, Err(ServiceError::NotPermitted(_))),
        "{refused:?}"
    );
    let made = fx
        .service
        .tokens()
        .create_token(&permit, token_post("admin", true))
        .unwrap()
        .token;
    assert!(made.service_token);
    assert_eq!(
        fx.read(|repo| repo.get_token(&made.id)).map(|t| t.role),
        Some(Role::Admin)
    );
}

fn page() -> domain::query::Page {
    domain::query::Page {
        limit: 25,
        offset: 0,
    }
}
