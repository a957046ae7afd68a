//! Custom roles: created, read, listed, changed and deleted by admins, read by readers, each
//! change in the audit log.

use domain::audit::AuditQuery;
use domain::custom_role::{BasePermissions, CustomRolePost};
use domain::query::CustomRoleQuery;
use domain::role::Role;
use serde_json::json;
use service::{use_case, CustomRoleChange, ServiceError};

use crate::{json_patch, Fixture};

fn post(key: &str) -> CustomRolePost {
    serde_json::from_value(json!({
        "key": key,
        "name": format!("Role {key}"),
        "policy": [{"effect": "allow", "resources": ["proj/shop:env/staging:flag/*"], "actions": ["updateOn"]}]
    }))
    .unwrap()
}

fn role_entries(f: &Fixture) -> Vec<(String, String)> {
    let query = AuditQuery::parse(None, None, None, Some("role/*"), None).unwrap();
    let mut entries: Vec<(String, String)> = f
        .read(|repo| repo.list_audit_entries(&query))
        .into_iter()
        .map(|e| (e.accesses[0].action.clone(), e.accesses[0].resource.clone()))
        .collect();
    entries.reverse();
    entries
}

#[test]
fn an_admin_manages_custom_roles_and_each_change_is_audited() {
    let f = Fixture::new();
    let admin = f.caller_for(&f.invite("admin@example.com", "admin"), Role::Admin);
    let create = admin.may(use_case::CreateCustomRole).unwrap();
    let created = f
        .service
        .custom_roles()
        .create_custom_role(&create, post("ops"))
        .unwrap();
    assert_eq!(created.base_permissions, BasePermissions::Reader);
    f.service
        .custom_roles()
        .create_custom_role(&create, post("dev"))
        .unwrap();
    let taken = f
        .service
        .custom_roles()
        .create_custom_role(&create, post("ops"))
        .unwrap_err();
    assert!(matches!(taken, ServiceError::KeyTaken(_)), "{taken:?}");

    let page = f
        .service
        .custom_roles()
        .list_custom_roles(
            &admin.may(use_case::ListCustomRoles).unwrap(),
            &CustomRoleQuery::parse(None, None, None, None).unwrap(),
        )
        .unwrap();
    let keys: Vec<&str> = page.items.iter().map(|r| r.key.as_str()).collect();
    assert_eq!((keys, page.total), (vec!["dev", "ops"], 2));

    let patch = admin.may(use_case::PatchCustomRole).unwrap();
    let renamed = f
        .service
        .custom_roles()
        .patch_custom_role(
            &patch,
            "ops",
            &CustomRoleChange::JsonPatch(json_patch(
                json!([{"op": "replace", "path": "/name", "value": "Operations"}]),
            )),
        )
        .unwrap();
    assert_eq!(renamed.name, "Operations");
    let merged = f
        .service
        .custom_roles()
        .patch_custom_role(
            &patch,
            "ops",
            &CustomRoleChange::MergePatch {
                comment: Some("no base".into()),
                merge: json!({"basePermissions": "no_access"}),
            },
        )
        .unwrap();
    assert_eq!(merged.base_permissions, BasePermissions::NoAccess);
    let unchanged = f
        .service
        .custom_roles()
        .patch_custom_role(
            &patch,
            "ops",
            &CustomRoleChange::MergePatch {
                comment: None,
                merge: json!({"name": "Operations"}),
            },
        )
        .unwrap();
    assert_eq!(unchanged, merged, "nothing changed, nothing audited");
    let bad = f
        .service
        .custom_roles().patch_custom_role(
            &patch,
            "ops",
            &CustomRoleChange::JsonPatch(json_patch(json!([
                {"op": "add", "path": "/policy/-", "value": {"effect": "allow", "resources": ["proj/*"], "actions": ["updatOn"]}}
            ]))),
        )
        .unwrap_err();
    assert!(
        matches!(
            bad,
            ServiceError::PatchFailed(_) | ServiceError::Invalid { .. }
        ),
        "{bad:?}"
    );
    assert_eq!(
        f.service
            .custom_roles()
            .get_custom_role(&admin.may(use_case::GetCustomRole).unwrap(), "ops")
            .unwrap(),
        merged,
        "a refused patch changes nothing"
    );

    f.service
        .custom_roles()
        .delete_custom_role(&admin.may(use_case::DeleteCustomRole).unwrap(), "dev")
        .unwrap();
    let gone = f
        .service
        .custom_roles()
        .get_custom_role(&admin.may(use_case::GetCustomRole).unwrap(), "dev")
        .unwrap_err();
    assert!(matches!(gone, ServiceError::NotFound(_)), "{gone:?}");
    let again = f
        .service
        .custom_roles()
        .delete_custom_role(&admin.may(use_case::DeleteCustomRole).unwrap(), "dev")
        .unwrap_err();
    assert!(matches!(again, ServiceError::NotFound(_)), "{again:?}");

    let entries = role_entries(&f);
    let expected: Vec<(String, String)> = [
        ("createRole", "role/ops"),
        ("createRole", "role/dev"),
        ("updateRole", "role/ops"),
        ("updateRole", "role/ops"),
        ("deleteRole", "role/dev"),
    ]
    .iter()
    .map(|(a, r)| ((*a).to_owned(), (*r).to_owned()))
    .collect();
    assert_eq!(entries, expected);
}

#[test]
fn readers_read_custom_roles_and_only_admins_change_them() {
    let f = Fixture::new();
    let create = f.owner.may(use_case::CreateCustomRole).unwrap();
    f.service
        .custom_roles()
        .create_custom_role(&create, post("ops"))
        .unwrap();
    let reader = f.caller_for(&f.invite("reader@example.com", "reader"), Role::Reader);
    let writer = f.caller_for(&f.invite("writer@example.com", "writer"), Role::Writer);
    assert_eq!(
        f.service
            .custom_roles()
            .get_custom_role(&reader.may(use_case::GetCustomRole).unwrap(), "ops")
            .unwrap()
            .key,
        "ops"
    );
    for caller in [&reader, &writer] {
        assert!(matches!(
            caller.may(use_case::CreateCustomRole),
            Err(ServiceError::NotPermitted(_))
        ));
        assert!(matches!(
            caller.may(use_case::PatchCustomRole),
            Err(ServiceError::NotPermitted(_))
        ));
        assert!(matches!(
            caller
                .may(use_case::DeleteCustomRole)
                .and_then(|permit| f.service.custom_roles().delete_custom_role(&permit, "ops")),
            Err(ServiceError::NotPermitted(_))
        ));
    }
    let nobody = f.caller_for(&f.invite("none@example.com", "no_access"), Role::NoAccess);
    assert!(matches!(
        nobody
            .may(use_case::GetCustomRole)
            .and_then(|permit| f.service.custom_roles().get_custom_role(&permit, "ops")),
        Err(ServiceError::NotPermitted(_))
    ));
    assert_eq!(
        f.service
            .custom_roles()
            .get_custom_role(&f.owner.may(use_case::GetCustomRole).unwrap(), "ops")
            .unwrap()
            .key,
        "ops",
        "still there"
    );
}
