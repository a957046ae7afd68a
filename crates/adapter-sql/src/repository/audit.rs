//! [`AuditRepository`] on diesel.

use diesel::prelude::*;
use diesel::sql_types::Text;
use domain::audit::{
    read_window, specifier_matches, AuditEntry, AuditPage, AuditQuery, MAX_AUDIT_ENTRIES_READ,
};
use domain::id::AuditEntryId;
use domain::webhook::Webhook;
use ports::{AuditRepository, StoreResult, WebhookRepository};

use crate::schema::{audit_details, audit_log, audit_resources};
use crate::stored;

use super::fixed::{statement, Bind, Fixed};
use super::query::*;
use super::{changes_channel, SqlRepository};
use crate::DbConnection;

statement!(
    /// The entries (one, or those of a batch of flag changes), their details and their
    /// resources, the notifications of what the transaction announced so far (sent when it
    /// commits), and the webhooks: what every change does, in one round trip. Each column is an
    /// array; a detail of `''` stands for none (a stored detail is a JSON object).
    AppendAuditEntries = concat!(
        "WITH entry AS (\
       INSERT INTO audit_log (id, date, kind, search, entry) \
       SELECT * FROM unnest(?::text[], ?::bigint[], ?::text[], ?::text[], ?::text[])), \
     detail AS (\
       INSERT INTO audit_details (entry_id, detail) \
       SELECT d.id, d.detail FROM unnest(?::text[], ?::text[]) AS d (id, detail) \
       WHERE d.detail <> ''), \
     resources AS (\
       INSERT INTO audit_resources (entry_id, resource) \
       SELECT * FROM unnest(?::text[], ?::text[])), \
     notified AS (\
       SELECT pg_notify('",
        changes_channel!(),
        "', payload) FROM unnest(?::text[]) AS payload) \
     SELECT doc FROM webhooks WHERE (SELECT count(*) FROM notified) >= 0 \
     ORDER BY creation_date, id"
    )
);

/// A webhook's stored document, as a raw query returns it.
#[derive(QueryableByName)]
struct WebhookDoc {
    #[diesel(sql_type = Text)]
    doc: String,
}

/// An audit entry as its three tables hold it.
struct AuditRows {
    /// What `audit_log.search` matches against: name and description, lower case.
    search: String,
    /// The listing fields (what a listing reads).
    listing: String,
    /// The detail fields, stored apart (a listing never reads them); none when all are empty.
    detail: Option<String>,
    /// The resources the entry touched, distinct and sorted (what the `spec` filter matches).
    resources: Vec<String>,
}

/// The rows of several entries, column by column (the arrays [`AppendAuditEntries`] binds).
#[derive(Default)]
struct AuditColumns {
    ids: Vec<String>,
    dates: Vec<i64>,
    kinds: Vec<String>,
    searches: Vec<String>,
    listings: Vec<String>,
    /// `''` for an entry without detail.
    details: Vec<String>,
    /// One per resource row: the entry's id, and the resource.
    resource_ids: Vec<String>,
    resources: Vec<String>,
}

impl AuditRows {
    fn of(entry: &AuditEntry) -> StoreResult<Self> {
        let detail = if entry.delta.is_some()
            || entry.previous_version.is_some()
            || entry.current_version.is_some()
        {
            Some(stored::audit::detail_json(entry)?)
        } else {
            None
        };
        let mut resources: Vec<String> = entry
            .accesses
            .iter()
            .map(|a| &a.resource)
            .chain(&entry.target.resources)
            .cloned()
            .collect();
        resources.sort();
        resources.dedup();
        Ok(Self {
            search: format!(
                "{}\n{}",
                entry.name.to_lowercase(),
                entry.description.to_lowercase()
            ),
            listing: stored::audit::listing_json(entry)?,
            detail,
            resources,
        })
    }
}

impl AuditRepository for SqlRepository<'_> {
    fn insert_audit_entry(&mut self, entry: &AuditEntry) -> StoreResult<()> {
        let rows = AuditRows::of(entry)?;
        diesel::insert_into(audit_log::table)
            .values((
                audit_log::id.eq(entry.id.as_str()),
                audit_log::date.eq(entry.date),
                audit_log::kind.eq(&entry.kind),
                audit_log::search.eq(&rows.search),
                audit_log::entry.eq(&rows.listing),
            ))
            .execute(self.conn)
            .store()?;
        if let Some(detail) = &rows.detail {
            diesel::insert_into(audit_details::table)
                .values((
                    audit_details::entry_id.eq(entry.id.as_str()),
                    audit_details::detail.eq(detail),
                ))
                .execute(self.conn)
                .store()?;
        }
        let resources: Vec<_> = rows
            .resources
            .iter()
            .map(|r| {
                (
                    audit_resources::entry_id.eq(entry.id.as_str()),
                    audit_resources::resource.eq(r),
                )
            })
            .collect();
        insert_rows!(self.conn, audit_resources, resources);
        Ok(())
    }

    fn append_audit_entry(&mut self, entry: &AuditEntry) -> StoreResult<Vec<Webhook>> {
        self.append_audit_entries(std::slice::from_ref(entry))
    }

    fn append_audit_entries(&mut self, entries: &[AuditEntry]) -> StoreResult<Vec<Webhook>> {
        // Sent with the entries on PostgreSQL (SQLite has no other process to tell).
        let unsent = self.unsent_payloads();
        let DbConnection::Pg(conn) = &mut *self.conn else {
            // SQLite: no round trips to save.
            for entry in entries {
                self.insert_audit_entry(entry)?;
            }
            return self.list_webhooks();
        };
        let mut columns = AuditColumns::default();
        for entry in entries {
            let rows = AuditRows::of(entry)?;
            let id = entry.id.as_str();
            columns.ids.push(id.to_owned());
            columns.dates.push(entry.date);
            columns.kinds.push(entry.kind.clone());
            columns.searches.push(rows.search);
            columns.listings.push(rows.listing);
            columns.details.push(rows.detail.unwrap_or_default());
            for resource in rows.resources {
                columns.resource_ids.push(id.to_owned());
                columns.resources.push(resource);
            }
        }
        let docs: Vec<WebhookDoc> = Fixed::<AppendAuditEntries>::new(vec![
            Bind::TextArray(&columns.ids),
            Bind::BigIntArray(&columns.dates),
            Bind::TextArray(&columns.kinds),
            Bind::TextArray(&columns.searches),
            Bind::TextArray(&columns.listings),
            Bind::TextArray(&columns.ids),
            Bind::TextArray(&columns.details),
            Bind::TextArray(&columns.resource_ids),
            Bind::TextArray(&columns.resources),
            Bind::TextArray(&unsent),
        ])
        .load(conn)
        .store()?;
        docs.iter()
            .map(|d| stored::webhook::read_doc(&d.doc))
            .collect()
    }

    fn announce(&mut self, changed: &ports::Changed) -> StoreResult<()> {
        self.announced.push(changed.clone());
        Ok(())
    }

    fn page_audit_entries(&mut self, q: &AuditQuery) -> StoreResult<AuditPage> {
        // The window: at most MAX_AUDIT_ENTRIES_READ rows by date alone, newest first, on the
        // (date, id) index; `q` and `spec` are decided inside it, so no filter makes a listing
        // read the whole log.
        let mut window_query = audit_log::table.into_boxed::<Backend>();
        match (q.before, &q.before_id) {
            (Some(before), Some(id)) => {
                window_query = window_query.filter(
                    audit_log::date
                        .lt(before)
                        .or(audit_log::date.eq(before).and(audit_log::id.lt(id.clone()))),
                );
            }
            (Some(before), None) => {
                window_query = window_query.filter(audit_log::date.lt(before));
            }
            (None, _) => {}
        }
        if let Some(after) = q.after {
            window_query = window_query.filter(audit_log::date.gt(after));
        }
        let bound = i64::try_from(MAX_AUDIT_ENTRIES_READ + 1).unwrap_or(i64::MAX);
        let rows: Vec<(i64, String)> = window_query
            .order((audit_log::date.desc(), audit_log::id.desc()))
            .limit(bound)
            .select((audit_log::date, audit_log::id))
            .load(self.conn)
            .store()?;
        let window = read_window(rows, |(date, id)| (*date, id.clone()));
        let mut ids: Vec<&str> = window.rows.iter().map(|(_, id)| id.as_str()).collect();
        if let Some(spec) = &q.spec {
            // The window's resources by their primary key (entry, resource): a few rows per
            // entry, matched here exactly. A LIKE on the resource index instead let PostgreSQL
            // read every resource of a project (some 350 ms of its CPU per search).
            let resources: Vec<(String, String)> = audit_resources::table
                .filter(audit_resources::entry_id.eq_any(&ids))
                .select((audit_resources::entry_id, audit_resources::resource))
                .load(self.conn)
                .store()?;
            let matching: std::collections::HashSet<&str> = resources
                .iter()
                .filter(|(_, resource)| specifier_matches(spec, resource))
                .map(|(id, _)| id.as_str())
                .collect();
            ids.retain(|id| matching.contains(id));
        }
        if q.q.is_none() {
            // Every id left matches: the page is its first ones.
            ids.truncate(usize::try_from(q.limit).unwrap_or(10));
        }
        if ids.is_empty() {
            return Ok(AuditPage {
                entries: Vec::new(),
                next_before: window.next_before,
            });
        }
        let mut query = audit_log::table
            .filter(audit_log::id.eq_any(ids))
            .into_boxed::<Backend>();
        if let Some(text) = &q.q {
            query = query.filter(audit_log::search.like(search_pattern(text)).escape('\\'));
        }
        // Only a page's worth of entries is read whole.
        let want = usize::try_from(q.limit).unwrap_or(10);
        let rows: Vec<(i64, String, String)> = query
            .order((audit_log::date.desc(), audit_log::id.desc()))
            .limit(i64::from(q.limit))
            .select((audit_log::date, audit_log::id, audit_log::entry))
            .load(self.conn)
            .store()?;
        let full = rows.len() == want;
        let last = rows.last().map(|(date, id, _)| (*date, id.clone()));
        let mut page = AuditPage::default();
        for (_, _, json) in rows {
            let mut entry = stored::audit::read_listing(&json)?;
            // Only entries written before the detail was stored apart still carry it.
            entry.delta = None;
            entry.previous_version = None;
            entry.current_version = None;
            let matches = q.spec.as_ref().is_none_or(|spec| {
                entry
                    .accesses
                    .iter()
                    .map(|a| &a.resource)
                    .chain(&entry.target.resources)
                    .any(|r| specifier_matches(spec, r))
            });
            if matches {
                page.entries.push(entry);
            }
        }
        page.next_before = if full { last } else { window.next_before };
        Ok(page)
    }

    fn get_audit_entry(&mut self, id: &AuditEntryId) -> StoreResult<Option<AuditEntry>> {
        let row: Option<(String, Option<String>)> = audit_log::table
            .left_join(audit_details::table)
            .filter(audit_log::id.eq(id.as_str()))
            .select((audit_log::entry, audit_details::detail.nullable()))
            .first(self.conn)
            .optional()
            .store()?;
        let Some((json, detail)) = row else {
            return Ok(None);
        };
        let mut entry = stored::audit::read_listing(&json)?;
        // Without a detail row, the entry was written with its detail inside.
        if let Some(detail) = detail {
            stored::audit::read_detail(&detail, &mut entry)?;
        }
        Ok(Some(entry))
    }
}
