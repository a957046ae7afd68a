//! The storage port's contract for custom roles, on every store.

use domain::custom_role::{BasePermissions, CustomRole};
use domain::id::CustomRoleId;
use domain::key::CustomRoleKey;
use domain::policy::Statement;
use domain::query::CustomRoleQuery;
use ports::{Listed, StoreError, StoreExt};

use crate::common::{open, Backend};

type Result<T> = std::result::Result<T, StoreError>;

fn role(key: &str, n: u64, name: &str) -> CustomRole {
    CustomRole {
        id: CustomRoleId::parse(&format!("{n:024x}")).unwrap(),
        key: CustomRoleKey::parse(key).unwrap(),
        name: name.into(),
        description: String::new(),
        policy: vec![Statement::allow(
            &["proj/*:env/staging:flag/*"],
            &["updateOn"],
        )],
        base_permissions: BasePermissions::Reader,
    }
}

fn keys(listed: &Listed<CustomRole>) -> Vec<&str> {
    listed.items.iter().map(|r| r.key.as_str()).collect()
}

fn custom_roles_round_trip_list_and_change(backend: Backend) {
    let db = open(backend);
    let store = &db.store;
    store
        .write_tx(|repo| -> Result<()> {
            repo.insert_custom_role(&role("ops", 1, "Zed ops"), 10)?;
            repo.insert_custom_role(&role("dev", 2, "alpha dev"), 11)?;
            repo.insert_custom_role(&role("qa_1", 3, "Beta QA"), 12)?;
            Ok(())
        })
        .unwrap();
    let duplicate = store
        .write_tx(|repo| -> Result<()> { repo.insert_custom_role(&role("ops", 4, "Again"), 13) });
    assert!(
        matches!(duplicate, Err(StoreError::Duplicate(_))),
        "{duplicate:?}"
    );
    let ops = CustomRoleKey::parse("ops").unwrap();
    let loaded = store
        .read_tx(|repo| -> Result<_> { repo.get_custom_role(&ops) })
        .unwrap();
    assert_eq!(loaded, Some(role("ops", 1, "Zed ops")));

    let list =
        |filter: Option<&str>, sort: Option<&str>, limit: Option<&str>, offset: Option<&str>| {
            let query = CustomRoleQuery::parse(filter, sort, limit, offset).unwrap();
            store
                .read_tx(|repo| -> Result<_> { repo.list_custom_roles(&query) })
                .unwrap()
        };
    let by_key = list(None, None, None, None);
    assert_eq!(
        (keys(&by_key), by_key.total),
        (vec!["dev", "ops", "qa_1"], 3)
    );
    let by_name = list(None, Some("name"), None, None);
    assert_eq!(keys(&by_name), ["dev", "qa_1", "ops"], "lower-cased names");
    let descending = list(None, Some("-key"), Some("2"), Some("1"));
    assert_eq!(
        (keys(&descending), descending.total),
        (vec!["ops", "dev"], 3)
    );
    let found = list(Some("query:BETA"), None, None, None);
    assert_eq!((keys(&found), found.total), (vec!["qa_1"], 1));
    let escaped = list(Some("query:d_v"), None, None, None);
    assert_eq!(escaped.total, 0, "LIKE wildcards are escaped");

    store
        .write_tx(|repo| -> Result<()> {
            let mut held = repo.lock_custom_role(&ops)?.expect("ops exists");
            let mut next: CustomRole = (*held).clone();
            next.name = "Aardvark".into();
            next.base_permissions = BasePermissions::NoAccess;
            held.replace(next);
            repo.update_custom_role(&held)
        })
        .unwrap();
    let changed = store
        .read_tx(|repo| -> Result<_> { repo.get_custom_role(&ops) })
        .unwrap()
        .unwrap();
    assert_eq!(
        (changed.name.as_str(), changed.base_permissions),
        ("Aardvark", BasePermissions::NoAccess)
    );
    assert_eq!(keys(&list(None, Some("name"), Some("1"), None)), ["ops"]);
    assert_eq!(
        list(Some("query:zed"), None, None, None).total,
        0,
        "search follows the name"
    );

    store
        .write_tx(|repo| -> Result<()> {
            let held = repo.lock_custom_role(&ops)?.expect("ops exists");
            repo.delete_custom_role(&held)
        })
        .unwrap();
    let gone = store
        .write_tx(|repo| -> Result<_> {
            Ok((
                repo.get_custom_role(&ops)?,
                repo.lock_custom_role(&ops)?.is_none(),
            ))
        })
        .unwrap();
    assert_eq!(gone, (None, true));
    assert_eq!(list(None, None, None, None).total, 2);
}

storage_on_every_store!(custom_roles_round_trip_list_and_change);
