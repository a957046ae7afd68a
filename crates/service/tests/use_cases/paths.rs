//! Keys and ids as a request's path names them: text that is not a key or id of the kind names
//! nothing, and gets exactly the `NotFound` an unknown key or id gets (never an input error).

use serde_json::json;
use service::{use_case, ServiceError};

use crate::{json_patch, Fixture};

/// The message of the `NotFound` a call answered.
fn not_found<T: std::fmt::Debug>(answer: Result<T, ServiceError>) -> String {
    match answer {
        Err(ServiceError::NotFound(message)) => message.to_string(),
        other => panic!("expected NotFound, got {other:?}"),
    }
}

/// A fixture with project `web` (environments `test` and `production`).
fn with_project() -> Fixture {
    let fx = Fixture::new();
    let post = serde_json::from_value(json!({"key": "web", "name": "Web"})).unwrap();
    let permit = fx.owner.may(use_case::CreateProject).unwrap();
    fx.service.projects().create_project(&permit, post).unwrap();
    fx
}

#[test]
fn text_that_is_no_key_names_no_project_environment_flag_or_segment() {
    let fx = with_project();
    let owner = &fx.owner;
    let s = &fx.service;
    assert_eq!(
        not_found(s.projects().get_project(
            &owner.may(use_case::GetProject).unwrap(),
            "no such key",
            false
        )),
        "no project with key 'no such key'"
    );
    assert_eq!(
        not_found(s.environments().get_environment(
            &owner.may(use_case::GetEnvironment).unwrap(),
            "web",
            "-prod"
        )),
        "no environment with key '-prod' in project 'web'"
    );
    // The project is looked up first, as for a well-formed key.
    assert_eq!(
        not_found(s.environments().get_environment(
            &owner.may(use_case::GetEnvironment).unwrap(),
            "-web",
            "-prod"
        )),
        "no project with key '-web'"
    );
    assert_eq!(
        not_found(
            s.flags()
                .get_flag(&owner.may(use_case::GetFlag).unwrap(), "web", "a/b", &[])
        ),
        "no flag with key 'a/b' in project 'web'"
    );
    assert_eq!(
        not_found(
            s.flags()
                .get_flag(&owner.may(use_case::GetFlag).unwrap(), "w b", "a/b", &[])
        ),
        "no project with key 'w b'"
    );
    assert_eq!(
        not_found(
            s.flags()
                .delete_flag(&owner.may(use_case::DeleteFlag).unwrap(), "web", "")
        ),
        "no flag with key '' in project 'web'"
    );
    assert_eq!(
        not_found(s.flags().dependent_flags(
            &owner.may(use_case::DependentFlags).unwrap(),
            "web",
            "a b"
        )),
        "no flag with key 'a b' in project 'web'"
    );
    assert_eq!(
        not_found(s.flag_statuses().flag_status(
            &owner.may(use_case::ReadFlagStatuses).unwrap(),
            "web",
            "test",
            "a b"
        )),
        "no flag with key 'a b' in project 'web'"
    );
    assert_eq!(
        not_found(s.flag_statuses().flag_status_across_environments(
            &owner.may(use_case::ReadFlagStatuses).unwrap(),
            "web",
            "a b",
            &[]
        )),
        "no flag with key 'a b' in project 'web'"
    );
    assert_eq!(
        not_found(s.segments().get_segment(
            &owner.may(use_case::GetSegment).unwrap(),
            "web",
            "test",
            "_s"
        )),
        "no segment with key '_s' in web/test"
    );
    assert_eq!(
        not_found(s.segments().get_segment(
            &owner.may(use_case::GetSegment).unwrap(),
            "web",
            "te st",
            "_s"
        )),
        "no environment with key 'te st' in project 'web'"
    );
    let permit = owner.may(use_case::PatchFlag).unwrap();
    let change = service::FlagChange::JsonPatch(json_patch(json!([])));
    assert_eq!(
        not_found(s.flags().patch_flag(&permit, "web", "é", &change)),
        "no flag with key 'é' in project 'web'"
    );
}

#[test]
fn text_that_is_no_id_names_no_member_token_webhook_or_audit_entry() {
    let fx = Fixture::new();
    let owner = &fx.owner;
    let s = &fx.service;
    for id in [
        "nope",
        "65F1C0FFEE0123456789ABCD",
        "65f1c0ffee0123456789abc",
    ] {
        assert_eq!(
            not_found(
                s.members()
                    .get_member(&owner.may(use_case::GetMember).unwrap(), id)
            ),
            format!("no member with id '{id}'")
        );
        let permit = owner.may(use_case::PatchMember).unwrap();
        assert_eq!(
            not_found(
                s.members()
                    .patch_member(&permit, id, &json_patch(json!([])))
            ),
            format!("no member with id '{id}'")
        );
        assert_eq!(
            not_found(
                s.members()
                    .delete_member(&owner.may(use_case::DeleteMember).unwrap(), id)
            ),
            format!("no member with id '{id}'")
        );
        assert_eq!(
            not_found(
                s.tokens()
                    .get_token(&owner.may(use_case::GetToken).unwrap(), id)
            ),
            format!("no access token with id '{id}'")
        );
        assert_eq!(
            not_found(
                s.tokens()
                    .delete_token(&owner.may(use_case::DeleteToken).unwrap(), id)
            ),
            format!("no access token with id '{id}'")
        );
        assert_eq!(
            not_found(
                s.webhooks()
                    .get_webhook(&owner.may(use_case::GetWebhook).unwrap(), id)
            ),
            format!("no webhook with id '{id}'")
        );
        assert_eq!(
            not_found(
                s.webhooks()
                    .webhook_deliveries(&owner.may(use_case::GetWebhook).unwrap(), id)
            ),
            format!("no webhook with id '{id}'")
        );
        assert_eq!(
            not_found(
                s.audit_log()
                    .get_audit_entry(&owner.may(use_case::ReadAuditLog).unwrap(), id)
            ),
            format!("no audit entry with id '{id}'")
        );
    }
    // `me` is still the caller's member.
    assert_eq!(
        s.members()
            .get_member(&owner.may(use_case::GetMember).unwrap(), "me")
            .unwrap()
            .id,
        *owner.member_id()
    );
}
