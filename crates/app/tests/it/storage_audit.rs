//! The audit log's storage: a listing reads the small listing fields only, never an entry's
//! detail (`delta`, `previousVersion`, `currentVersion`), which can be two resources of up to
//! 1 MiB each; the detail view reads both. Entries written before the detail was stored apart
//! (everything in one row) still list and read in detail.

use domain::audit::{Access, AuditEntry, AuditQuery, AuditTarget};
use domain::id::AuditEntryId;
use ports::{StoreError, StoreExt};
use serde_json::json;

use crate::common::{open, Backend};

type Result<T> = std::result::Result<T, StoreError>;

fn entry(n: i64, version_bytes: usize) -> AuditEntry {
    AuditEntry {
        id: AuditEntryId::parse(&format!("{n:024x}")).unwrap(),
        account_id: "a".repeat(24),
        date: 1_700_000_000_000 + n,
        kind: "flag".into(),
        name: format!("f{n}"),
        description: format!("changed flag f{n}"),
        short_description: "updated flag".into(),
        title_verb: "updated the flag".into(),
        title: format!("someone updated the flag f{n}"),
        comment: Some("why".into()),
        accesses: vec![Access {
            action: "updateFlag".into(),
            resource: format!("proj/web:env/*:flag/f{n}"),
        }],
        member: None,
        token: None,
        target: AuditTarget {
            name: format!("f{n}"),
            resources: vec![format!("proj/web:env/*:flag/f{n}")],
            href: None,
        },
        delta: Some(json!([{"op": "replace", "path": "/description", "value": n}])),
        previous_version: Some(json!({"description": "p".repeat(version_bytes)}).into()),
        current_version: Some(json!({"description": "c".repeat(version_bytes)}).into()),
    }
}

fn query(limit: &str, spec: Option<&str>) -> AuditQuery {
    AuditQuery::parse(None, None, None, spec, Some(limit)).unwrap()
}

fn audit_listings_carry_no_detail(backend: Backend) {
    let db = open(backend);
    let entries: Vec<AuditEntry> = (0..20).map(|n| entry(n, 1 << 20)).collect();
    db.store
        .write_tx(|repo| -> Result<()> {
            for e in &entries {
                repo.insert_audit_entry(e)?;
            }
            Ok(())
        })
        .unwrap();

    let listed = db
        .store
        .read_tx(|repo| repo.list_audit_entries(&query("20", None)))
        .unwrap();
    let expected: Vec<AuditEntry> = entries.iter().rev().map(AuditEntry::listing).collect();
    assert_eq!(listed.len(), 20);
    for (got, want) in listed.iter().zip(&expected) {
        assert!(got.delta.is_none() && got.previous_version.is_none());
        assert!(got.current_version.is_none());
        assert_eq!(got, want);
    }
    // A filtered listing too.
    let filtered = db
        .store
        .read_tx(|repo| repo.list_audit_entries(&query("5", Some("proj/web:env/*:flag/f7"))))
        .unwrap();
    assert_eq!(filtered, vec![entries[7].listing()]);

    // The detail view has everything.
    for e in [&entries[0], &entries[19]] {
        let got = db
            .store
            .read_tx(|repo| repo.get_audit_entry(&e.id))
            .unwrap()
            .unwrap();
        assert_eq!(&got, e);
    }
    assert_eq!(
        db.store
            .read_tx(
                |repo| repo.get_audit_entry(&AuditEntryId::parse(&format!("{:024x}", 99)).unwrap())
            )
            .unwrap(),
        None
    );
}

fn audit_entries_in_the_former_format_still_read(backend: Backend) {
    let db = open(backend);
    let new = entry(2, 100);
    db.store
        .write_tx(|repo| repo.insert_audit_entry(&new))
        .unwrap();
    // As the store wrote entries before: the whole entry, detail included, in one row.
    let old = entry(1, 100);
    let json = serde_json::to_string(&old).unwrap().replace('\'', "''");
    db.execute_sql(&format!(
        "INSERT INTO audit_log (id, date, kind, search, entry) \
         VALUES ('{id}', {date}, 'flag', 'f1', '{json}'); \
         INSERT INTO audit_resources (entry_id, resource) VALUES ('{id}', 'proj/web:env/*:flag/f1');",
        id = old.id,
        date = old.date,
    ));

    let listed = db
        .store
        .read_tx(|repo| repo.list_audit_entries(&query("20", None)))
        .unwrap();
    assert_eq!(listed, vec![new.listing(), old.listing()]);
    let filtered = db
        .store
        .read_tx(|repo| repo.list_audit_entries(&query("20", Some("proj/*:env/*:flag/f1"))))
        .unwrap();
    assert_eq!(filtered, vec![old.listing()]);
    for e in [&old, &new] {
        let got = db
            .store
            .read_tx(|repo| repo.get_audit_entry(&e.id))
            .unwrap()
            .unwrap();
        assert_eq!(&got, e);
    }
}

/// Entries appended together (a batch of changes) read back as appended one by one: each with
/// its detail (or none), its resources for the `spec` filter, in date order.
fn entries_appended_together_read_back_each(backend: Backend) {
    let db = open(backend);
    let mut entries: Vec<AuditEntry> = (0..5).map(|n| entry(n, 100)).collect();
    // One without a detail, one with two resources.
    entries[1].delta = None;
    entries[1].previous_version = None;
    entries[1].current_version = None;
    entries[3]
        .target
        .resources
        .push("proj/web:env/*:flag/other".into());
    let webhooks = db
        .store
        .write_tx(|repo| repo.append_audit_entries(&entries))
        .unwrap();
    assert_eq!(webhooks, vec![]);
    let listed = db
        .store
        .read_tx(|repo| repo.list_audit_entries(&query("20", None)))
        .unwrap();
    let expected: Vec<_> = entries.iter().rev().map(AuditEntry::listing).collect();
    assert_eq!(listed, expected);
    for e in &entries {
        let got = db
            .store
            .read_tx(|repo| repo.get_audit_entry(&e.id))
            .unwrap()
            .unwrap();
        assert_eq!(&got, e);
    }
    let filtered = db
        .store
        .read_tx(|repo| repo.list_audit_entries(&query("20", Some("proj/*:env/*:flag/other"))))
        .unwrap();
    assert_eq!(filtered, vec![entries[3].listing()]);
    // Nothing to append appends nothing.
    db.store
        .write_tx(|repo| repo.append_audit_entries(&[]))
        .unwrap();
    let listed = db
        .store
        .read_tx(|repo| repo.list_audit_entries(&query("20", None)))
        .unwrap();
    assert_eq!(listed.len(), entries.len());
}

/// One account per database: the first `create_account` wins, later ones change nothing.
fn the_account_is_created_once(backend: Backend) {
    let db = open(backend);
    let read = || db.store.read_tx(|repo| repo.account_id());
    assert_eq!(read().unwrap(), None);
    db.store
        .write_tx(|repo| repo.create_account("0123456789abcdef01234567"))
        .unwrap();
    db.store
        .write_tx(|repo| repo.create_account("ffffffffffffffffffffffff"))
        .unwrap();
    assert_eq!(read().unwrap().as_deref(), Some("0123456789abcdef01234567"));
}

/// Issue 32, item 2: a listing reads at most `MAX_AUDIT_ENTRIES_READ` entries whatever its
/// filters leave, and says where the next one starts; paging on reaches every match once.
fn a_listing_reads_a_bounded_window_and_pages_on(backend: Backend) {
    use domain::audit::MAX_AUDIT_ENTRIES_READ;
    let db = open(backend);
    let total = 2 * MAX_AUDIT_ENTRIES_READ + 500;
    let entries: Vec<AuditEntry> = (0..i64::try_from(total).unwrap())
        .map(|n| {
            let mut e = entry(n, 0);
            if n < 10 {
                let other = format!("proj/other:env/*:flag/f{n}");
                e.accesses[0].resource.clone_from(&other);
                e.target.resources = vec![other];
            }
            e
        })
        .collect();
    db.store
        .write_tx(|repo| repo.append_audit_entries(&entries).map(|_| ()))
        .unwrap();
    let mut before: Option<(i64, String)> = None;
    let mut found = Vec::new();
    let mut pages = 0;
    loop {
        let mut q = query("20", Some("proj/other:env/*:flag/*"));
        if let Some((date, id)) = &before {
            q.before = Some(*date);
            q.before_id = Some(id.clone());
        }
        let page = db
            .store
            .read_tx(|repo| repo.page_audit_entries(&q))
            .unwrap();
        pages += 1;
        found.extend(page.entries.iter().map(|e| e.name.clone()));
        match page.next_before {
            Some(next) => before = Some(next),
            None => break,
        }
        assert!(pages < 10, "paging ends");
    }
    assert_eq!(
        pages, 3,
        "three windows of at most {MAX_AUDIT_ENTRIES_READ} entries"
    );
    let expected: Vec<String> = (0..10).rev().map(|n| format!("f{n}")).collect();
    assert_eq!(found, expected);
    // A project-level specifier does not match the flags inside it (parts line up).
    let project = db
        .store
        .read_tx(|repo| repo.page_audit_entries(&query("20", Some("proj/web*"))))
        .unwrap();
    assert!(project.entries.is_empty());
    assert!(project.next_before.is_some());
    // A full page says where the next starts: at its last entry.
    let full = db
        .store
        .read_tx(|repo| repo.page_audit_entries(&query("20", None)))
        .unwrap();
    assert_eq!(full.entries.len(), 20);
    assert_eq!(
        full.next_before,
        Some((full.entries[19].date, full.entries[19].id.to_string()))
    );
}

/// Entries of one millisecond (two replicas writing at once) are each listed once, whatever
/// the page size: the `next` cursor is the last entry's date and `_id`.
fn entries_of_one_millisecond_page_without_loss(backend: Backend) {
    let db = open(backend);
    let entries: Vec<AuditEntry> = (0..7)
        .map(|n| {
            let mut e = entry(n, 0);
            e.date = 1_700_000_000_000;
            e
        })
        .collect();
    db.store
        .write_tx(|repo| repo.append_audit_entries(&entries).map(|_| ()))
        .unwrap();
    for limit in ["1", "3"] {
        let mut before: Option<(i64, String)> = None;
        let mut names = Vec::new();
        loop {
            let mut q = query(limit, None);
            if let Some((date, id)) = &before {
                q.before = Some(*date);
                q.before_id = Some(id.clone());
            }
            let page = db
                .store
                .read_tx(|repo| repo.page_audit_entries(&q))
                .unwrap();
            names.extend(page.entries.iter().map(|e| e.name.clone()));
            match page.next_before {
                Some(next) => before = Some(next),
                None => break,
            }
        }
        names.sort();
        let expected: Vec<String> = (0..7).map(|n| format!("f{n}")).collect();
        assert_eq!(names, expected, "limit {limit}");
    }
}

storage_on_every_store!(
    entries_of_one_millisecond_page_without_loss,
    a_listing_reads_a_bounded_window_and_pages_on,
    audit_listings_carry_no_detail,
    entries_appended_together_read_back_each,
    the_account_is_created_once;
    // Writes rows in the SQL stores' former format, past the port.
    sql_only: audit_entries_in_the_former_format_still_read,
);
