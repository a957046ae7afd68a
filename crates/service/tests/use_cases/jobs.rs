//! Background jobs as callers: a job acts as the member who asked for the work, as that member
//! is when the job runs, and is admitted only to reading and changing flags and segments.

use domain::audit::AuditQuery;
use domain::id::MemberId;
use domain::instruction::SemanticPatch;
use serde_json::json;
use service::{use_case, Caller, FlagChange, Principal, ServiceError};

use crate::{json_patch, Fixture};

const JOB: &str = "scheduled change";

/// A fixture with project `web` and flag `beta`, and a writer; the writer's `_id`.
fn with_flag() -> (Fixture, String) {
    let fx = Fixture::new();
    let post = serde_json::from_value(json!({"key": "web", "name": "Web"})).unwrap();
    let permit = fx.owner.may(use_case::CreateProject).unwrap();
    fx.service.projects().create_project(&permit, post).unwrap();
    let post = serde_json::from_value(json!({"key": "beta", "name": "Beta"})).unwrap();
    let permit = fx.owner.may(use_case::CreateFlag).unwrap();
    fx.service
        .flags()
        .create_flag(&permit, "web", post)
        .unwrap();
    let writer = fx.invite("writer@example.com", "writer");
    (fx, writer)
}

/// The job doing work that `member` asked for as a person (without a token).
fn job_for(fx: &Fixture, member: &str) -> Result<Caller, ServiceError> {
    fx.service
        .authentication()
        .act_for((&MemberId::parse(member).unwrap(), None), JOB)
}

fn turn_on() -> FlagChange {
    FlagChange::Semantic(
        SemanticPatch::parse(json!({
            "environmentKey": "test",
            "instructions": [{"kind": "turnFlagOn"}],
        }))
        .unwrap(),
    )
}

#[test]
fn a_job_changes_a_flag_as_its_member_and_its_entry_names_no_token() {
    let (fx, writer) = with_flag();
    let job = job_for(&fx, &writer).unwrap();
    assert_eq!(
        job.principal(),
        &Principal::Job {
            name: JOB,
            token: None
        }
    );
    assert_eq!(job.token_id(), None);
    assert_eq!(job.member_id().as_str(), writer);

    let permit = job.may(use_case::PatchFlag).unwrap();
    let view = fx
        .service
        .flags()
        .patch_flag(&permit, "web", "beta", &turn_on())
        .unwrap();
    assert!(view.flag.environments["test"].on);

    let query = AuditQuery {
        before: None,
        before_id: None,
        after: None,
        q: None,
        spec: Some("proj/web:env/*:flag/*".into()),
        limit: 1,
    };
    let entries = fx
        .service
        .audit_log()
        .list_audit_log_in_detail(&fx.owner.may(use_case::ReadAuditLog).unwrap(), &query)
        .unwrap()
        .entries;
    let entry = &entries[0];
    assert_eq!(entry.member.as_ref().map(|m| m.id.as_str()), Some(&*writer));
    assert_eq!(entry.token, None);
    assert_eq!(
        entry
            .accesses
            .iter()
            .map(|a| a.action.as_str())
            .collect::<Vec<_>>(),
        ["updateOn"]
    );
}

#[test]
fn a_job_is_admitted_only_to_reading_and_changing_flags_and_segments() {
    let (fx, writer) = with_flag();
    let job = job_for(&fx, &writer).unwrap();
    assert!(job.may(use_case::GetFlag).is_ok());
    assert!(job.may(use_case::PatchSegment).is_ok());
    for refused in [
        job.may(use_case::DeleteFlag).map(|_| ()),
        job.may(use_case::CreateFlag).map(|_| ()),
        job.may(use_case::ListMembers).map(|_| ()),
    ] {
        let Err(ServiceError::NotPermitted(message)) = refused else {
            panic!("{refused:?}");
        };
        assert_eq!(
            message,
            "a scheduled change may only read and change flags and segments"
        );
    }
    // Even an owner's job creates no token.
    let owners = job_for(&fx, fx.owner.member_id().as_str()).unwrap();
    assert!(matches!(
        owners.may(use_case::CreateToken),
        Err(ServiceError::NotPermitted(_))
    ));
}

#[test]
fn a_job_acts_as_its_member_is_when_it_runs() {
    let (fx, writer) = with_flag();
    assert!(job_for(&fx, &writer)
        .unwrap()
        .may(use_case::PatchFlag)
        .is_ok());
    let demote = json_patch(json!([{"op": "replace", "path": "/role", "value": "reader"}]));
    let permit = fx.owner.may(use_case::PatchMember).unwrap();
    fx.service
        .members()
        .patch_member(&permit, &writer, &demote)
        .unwrap();

    // A job made now acts with the reader role.
    let refused = job_for(&fx, &writer).unwrap().may(use_case::PatchFlag);
    let Err(ServiceError::NotPermitted(message)) = refused else {
        panic!("{refused:?}");
    };
    assert!(message.starts_with("the role 'reader' cannot"), "{message}");

    // A deleted member has no jobs.
    let permit = fx.owner.may(use_case::DeleteMember).unwrap();
    fx.service
        .members()
        .delete_member(&permit, &writer)
        .unwrap();
    let gone = job_for(&fx, &writer);
    assert!(
        matches!(&gone, Err(ServiceError::Unauthenticated(m)) if m.contains(JOB)),
        "{gone:?}"
    );
}

/// A reader service token may not change a flag, so neither may the job doing work it asked
/// for (its member, the owner who created it, could); its entry names the token.
#[test]
fn a_job_does_no_more_than_the_token_that_asked_for_the_work() {
    let (fx, _) = with_flag();
    let permit = fx.owner.may(use_case::CreateToken).unwrap();
    let post =
        serde_json::from_value(json!({"name": "ci", "role": "reader", "serviceToken": true}))
            .unwrap();
    let created = fx.service.tokens().create_token(&permit, post).unwrap();
    let token = fx
        .service
        .authentication()
        .authenticate(&created.secret)
        .unwrap();
    assert!(token.may(use_case::PatchFlag).is_err());

    let job = fx
        .service
        .authentication()
        .act_for(token.asked_by(), JOB)
        .unwrap();
    assert_eq!(job.asked_by(), token.asked_by());
    let refused = job.may(use_case::PatchFlag);
    let Err(ServiceError::NotPermitted(message)) = refused else {
        panic!("{refused:?}");
    };
    assert!(message.starts_with("the role 'reader' cannot"), "{message}");
    assert!(job.may(use_case::GetFlag).is_ok());

    // The owner's own token: the job may, and its entry names the member and the token.
    let owners = fx
        .service
        .authentication()
        .act_for(fx.owner.asked_by(), JOB)
        .unwrap();
    let permit = owners.may(use_case::PatchFlag).unwrap();
    fx.service
        .flags()
        .patch_flag(&permit, "web", "beta", &turn_on())
        .unwrap();
    let query = AuditQuery {
        before: None,
        before_id: None,
        after: None,
        q: None,
        spec: Some("proj/web:env/*:flag/*".into()),
        limit: 1,
    };
    let entry = fx
        .service
        .audit_log()
        .list_audit_log_in_detail(&fx.owner.may(use_case::ReadAuditLog).unwrap(), &query)
        .unwrap()
        .entries
        .remove(0);
    assert_eq!(
        entry.token.map(|t| t.id),
        fx.owner.token_id().map(ToString::to_string)
    );

    // Deleting the token ends the work it asked for.
    let permit = fx.owner.may(use_case::DeleteToken).unwrap();
    fx.service
        .tokens()
        .delete_token(&permit, token.token_id().unwrap())
        .unwrap();
    let gone = fx.service.authentication().act_for(token.asked_by(), JOB);
    assert!(
        matches!(&gone, Err(ServiceError::Unauthenticated(m)) if m.contains("access token")),
        "{gone:?}"
    );
}
