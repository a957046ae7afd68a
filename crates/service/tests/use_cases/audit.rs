//! Reading the audit log: the listing view, and the same page in detail.

use domain::audit::AuditQuery;
use serde_json::json;
use service::use_case;

use crate::Fixture;

#[test]
fn a_page_in_detail_is_the_listing_with_each_entrys_detail() {
    let fx = Fixture::new();
    let post = serde_json::from_value(json!({"key": "web", "name": "Web"})).unwrap();
    let permit = fx.owner.may(use_case::CreateProject).unwrap();
    fx.service.projects().create_project(&permit, post).unwrap();
    for key in ["a", "b", "c"] {
        let post = serde_json::from_value(json!({"key": key, "name": key})).unwrap();
        let permit = fx.owner.may(use_case::CreateFlag).unwrap();
        fx.service
            .flags()
            .create_flag(&permit, "web", post)
            .unwrap();
    }
    let query = AuditQuery {
        before: None,
        before_id: None,
        after: None,
        q: None,
        spec: Some("proj/web:env/*:flag/*".into()),
        limit: 2,
    };
    let listed = fx
        .service
        .audit_log()
        .list_audit_log(&fx.owner.may(use_case::ReadAuditLog).unwrap(), &query)
        .unwrap();
    let detailed = fx
        .service
        .audit_log()
        .list_audit_log_in_detail(&fx.owner.may(use_case::ReadAuditLog).unwrap(), &query)
        .unwrap()
        .entries;
    assert_eq!(listed.len(), 2, "the page's limit");
    assert!(
        listed.iter().all(|e| e.current_version.is_none()),
        "the listing view"
    );
    let one_by_one: Vec<_> = listed
        .iter()
        .map(|e| {
            fx.service
                .audit_log()
                .get_audit_entry(
                    &fx.owner.may(use_case::ReadAuditLog).unwrap(),
                    e.id.as_str(),
                )
                .unwrap()
        })
        .collect();
    assert_eq!(detailed, one_by_one);
    assert!(detailed.iter().all(|e| e.current_version.is_some()));
}
