//! [`WebhookRepository`] on diesel: webhooks and the outbox of their deliveries.

use diesel::prelude::*;
use domain::id::{AuditEntryId, WebhookId};
use domain::webhook::{DeliveryAttempt, Webhook};
use ports::{
    ClaimedDelivery, DeliveryOutcome, Locked, QueuedDelivery, StoreResult, WebhookRepository,
};

use crate::schema::{webhook_attempts, webhook_deliveries, webhooks};
use crate::DbConnection;

use super::query::*;
use super::SqlRepository;
use crate::stored;

#[derive(Queryable, Selectable)]
#[diesel(table_name = webhook_attempts)]
struct AttemptRow {
    delivery_id: String,
    entry_id: String,
    attempt: i32,
    date: i64,
    status_code: Option<i32>,
    error: Option<String>,
    duration_ms: i64,
}

impl WebhookRepository for SqlRepository<'_> {
    fn insert_webhook(&mut self, webhook: &Webhook, now: i64) -> StoreResult<()> {
        let doc = stored::webhook::doc_json(webhook)?;
        diesel::insert_into(webhooks::table)
            .values((
                webhooks::id.eq(webhook.id.as_str()),
                webhooks::creation_date.eq(now),
                webhooks::doc.eq(doc),
            ))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn get_webhook(&mut self, id: &WebhookId) -> StoreResult<Option<Webhook>> {
        let doc: Option<String> = webhooks::table
            .find(id.as_str())
            .select(webhooks::doc)
            .first(self.conn)
            .optional()
            .store()?;
        doc.map(|d| stored::webhook::read_doc(&d)).transpose()
    }

    fn lock_webhook(&mut self, id: &WebhookId) -> StoreResult<Option<Locked<Webhook>>> {
        if lock_rows!(
            self.conn,
            webhooks::table.find(id.as_str()).select(webhooks::id)
        )
        .is_empty()
        {
            return Ok(None);
        }
        Ok(self.get_webhook(id)?.map(Locked::assume_locked))
    }

    fn list_webhooks(&mut self) -> StoreResult<Vec<Webhook>> {
        let docs: Vec<String> = webhooks::table
            .order((webhooks::creation_date, webhooks::id))
            .select(webhooks::doc)
            .load(self.conn)
            .store()?;
        docs.iter().map(|d| stored::webhook::read_doc(d)).collect()
    }

    fn update_webhook(&mut self, webhook: &Locked<Webhook>) -> StoreResult<()> {
        let webhook: &Webhook = webhook;
        let doc = stored::webhook::doc_json(webhook)?;
        diesel::update(webhooks::table.find(webhook.id.as_str()))
            .set(webhooks::doc.eq(doc))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn delete_webhook(&mut self, webhook: &Locked<Webhook>) -> StoreResult<()> {
        diesel::delete(webhooks::table.find(webhook.id.as_str()))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn enqueue_delivery(&mut self, delivery: &QueuedDelivery) -> StoreResult<()> {
        diesel::insert_into(webhook_deliveries::table)
            .values((
                webhook_deliveries::id.eq(&delivery.id),
                webhook_deliveries::webhook_id.eq(delivery.webhook_id.as_str()),
                webhook_deliveries::entry_id.eq(delivery.entry_id.as_str()),
                webhook_deliveries::payload.eq(&delivery.payload),
                webhook_deliveries::state.eq("pending"),
                webhook_deliveries::attempts.eq(0),
                webhook_deliveries::next_attempt_at.eq(delivery.created_at),
                webhook_deliveries::created_at.eq(delivery.created_at),
                webhook_deliveries::request_id.eq(delivery.request_id.as_deref()),
            ))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn outbox_depth(&mut self) -> StoreResult<ports::OutboxDepth> {
        #[derive(QueryableByName)]
        struct Depth {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            pending: i64,
            #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::BigInt>)]
            oldest: Option<i64>,
        }
        // Both read the pending entries of the (state, next_attempt_at) index, and the count
        // stops at the cap: a long backlog costs no more than that.
        let depth: Depth = diesel::sql_query(format!(
            "SELECT (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries \
             WHERE state = 'pending' LIMIT {}) AS p) AS pending, \
             (SELECT min(created_at) FROM webhook_deliveries WHERE state = 'pending') AS oldest",
            ports::OUTBOX_COUNT_CAP
        ))
        .get_result(self.conn)
        .store()?;
        Ok(ports::OutboxDepth {
            pending: u64::try_from(depth.pending).unwrap_or(0),
            oldest_queued_at: depth.oldest,
        })
    }

    fn claim_deliveries(
        &mut self,
        now: i64,
        lease_until: i64,
        limit: u32,
    ) -> StoreResult<Vec<ClaimedDelivery>> {
        let due = webhook_deliveries::table
            .filter(webhook_deliveries::state.eq("pending"))
            .filter(webhook_deliveries::next_attempt_at.le(now))
            .order((webhook_deliveries::next_attempt_at, webhook_deliveries::id))
            .limit(i64::from(limit))
            .select(webhook_deliveries::id);
        // On PostgreSQL several replicas may claim at once: each skips rows another one holds.
        // SQLite has one writer at a time, so a plain read is enough.
        let ids: Vec<String> = match &mut *self.conn {
            DbConnection::Pg(conn) => due.for_update().skip_locked().load(conn),
            DbConnection::Sqlite(conn) => due.load(conn),
        }
        .store()?;
        if ids.is_empty() {
            return Ok(vec![]);
        }
        diesel::update(webhook_deliveries::table.filter(webhook_deliveries::id.eq_any(&ids)))
            .set(webhook_deliveries::next_attempt_at.eq(lease_until))
            .execute(self.conn)
            .store()?;
        type Row = (String, String, String, String, i32, String, Option<String>);
        let rows: Vec<Row> = webhook_deliveries::table
            .inner_join(webhooks::table)
            .filter(webhook_deliveries::id.eq_any(&ids))
            .order((webhook_deliveries::created_at, webhook_deliveries::id))
            .select((
                webhook_deliveries::id,
                webhook_deliveries::webhook_id,
                webhook_deliveries::entry_id,
                webhook_deliveries::payload,
                webhook_deliveries::attempts,
                webhooks::doc,
                webhook_deliveries::request_id,
            ))
            .load(self.conn)
            .store()?;
        rows.into_iter()
            .map(
                |(id, webhook_id, entry_id, payload, attempts, doc, request_id)| {
                    Ok(ClaimedDelivery {
                        id,
                        webhook_id: WebhookId::from_stored(webhook_id),
                        entry_id: AuditEntryId::from_stored(entry_id),
                        webhook: stored::webhook::read_doc(&doc)?,
                        payload,
                        attempts: u32::try_from(attempts).unwrap_or(0),
                        request_id,
                    })
                },
            )
            .collect()
    }

    fn record_attempt(
        &mut self,
        attempt: &DeliveryAttempt,
        webhook_id: &WebhookId,
        outcome: DeliveryOutcome,
    ) -> StoreResult<()> {
        diesel::insert_into(webhook_attempts::table)
            .values((
                webhook_attempts::delivery_id.eq(&attempt.delivery_id),
                webhook_attempts::webhook_id.eq(webhook_id.as_str()),
                webhook_attempts::entry_id.eq(&attempt.entry_id),
                webhook_attempts::attempt.eq(i32::try_from(attempt.attempt).unwrap_or(i32::MAX)),
                webhook_attempts::date.eq(attempt.date),
                webhook_attempts::status_code.eq(attempt.status_code.map(i32::from)),
                webhook_attempts::error.eq(&attempt.error),
                webhook_attempts::duration_ms.eq(attempt.duration_ms),
            ))
            .execute(self.conn)
            .store()?;
        let (state, next) = match outcome {
            DeliveryOutcome::Delivered => ("delivered", attempt.date),
            DeliveryOutcome::RetryAt(at) => ("pending", at),
            DeliveryOutcome::GaveUp => ("failed", attempt.date),
        };
        diesel::update(webhook_deliveries::table.find(&attempt.delivery_id))
            .set((
                webhook_deliveries::state.eq(state),
                webhook_deliveries::attempts.eq(i32::try_from(attempt.attempt).unwrap_or(i32::MAX)),
                webhook_deliveries::next_attempt_at.eq(next),
            ))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn list_attempts(
        &mut self,
        webhook_id: &WebhookId,
        limit: u32,
    ) -> StoreResult<Vec<DeliveryAttempt>> {
        let rows: Vec<AttemptRow> = webhook_attempts::table
            .filter(webhook_attempts::webhook_id.eq(webhook_id.as_str()))
            .order((
                webhook_attempts::date.desc(),
                webhook_attempts::attempt.desc(),
            ))
            .limit(i64::from(limit))
            .select(AttemptRow::as_select())
            .load(self.conn)
            .store()?;
        Ok(rows
            .into_iter()
            .map(|row| DeliveryAttempt {
                delivery_id: row.delivery_id,
                entry_id: row.entry_id,
                attempt: u32::try_from(row.attempt).unwrap_or(0),
                date: row.date,
                status_code: row.status_code.and_then(|s| u16::try_from(s).ok()),
                error: row.error,
                duration_ms: row.duration_ms,
            })
            .collect())
    }
}
