//! The audit log, webhooks and their delivery outbox.

use std::sync::Arc;

use domain::audit::{
    read_window, specifier_matches, AuditEntry, AuditPage, AuditQuery, MAX_AUDIT_ENTRIES_READ,
};
use domain::id::WebhookId;
use domain::webhook::{DeliveryAttempt, Webhook};
use ports::{ClaimedDelivery, DeliveryOutcome, QueuedDelivery, StoreResult};

use crate::{
    duplicate, matches_search, missing, rows, search_text, AttemptRow, DeliveryRow, DeliveryState,
    Tables,
};

/// Whether one of the resources `entry` touches matches the specifier pattern `spec`.
fn touches(entry: &AuditEntry, spec: &str) -> bool {
    entry
        .accesses
        .iter()
        .map(|a| &a.resource)
        .chain(&entry.target.resources)
        .any(|resource| specifier_matches(spec, resource))
}

impl Tables {
    pub(crate) fn insert_audit_entry(&mut self, entry: &AuditEntry) -> StoreResult<()> {
        if self.audit.contains_key(&entry.id) {
            return Err(duplicate("audit_log.id"));
        }
        rows(&mut self.audit).insert(entry.id.clone(), Arc::new(entry.clone()));
        Ok(())
    }

    /// Newest first (by date, then `_id`), in the listing view: at most
    /// [`MAX_AUDIT_ENTRIES_READ`] entries read, as the SQL stores do.
    pub(crate) fn page_audit_entries(&self, q: &AuditQuery) -> AuditPage {
        let mut window: Vec<&AuditEntry> = self
            .audit
            .values()
            .map(|entry| &**entry)
            .filter(|e| {
                q.before.is_none_or(|before| {
                    domain::audit::before_cursor(
                        e.date,
                        e.id.as_str(),
                        before,
                        q.before_id.as_deref(),
                    )
                })
            })
            .filter(|e| q.after.is_none_or(|after| e.date > after))
            .collect();
        window.sort_by(|a, b| (b.date, &b.id).cmp(&(a.date, &a.id)));
        window.truncate(MAX_AUDIT_ENTRIES_READ + 1);
        let window = read_window(window, |e| (e.date, e.id.to_string()));
        let limit = usize::try_from(q.limit).unwrap_or(10);
        let mut page = AuditPage::default();
        for entry in &window.rows {
            let matches = q.q.as_ref().is_none_or(|text| {
                matches_search(&search_text(&[&entry.name, &entry.description]), text)
            }) && q.spec.as_ref().is_none_or(|spec| touches(entry, spec));
            if matches {
                page.entries.push(AuditEntry::listing(entry));
                if page.entries.len() == limit {
                    page.next_before = Some((entry.date, entry.id.to_string()));
                    return page;
                }
            }
        }
        page.next_before = window.next_before;
        page
    }

    pub(crate) fn get_audit_entry(&self, id: &str) -> Option<AuditEntry> {
        self.audit.get(id).map(|entry| AuditEntry::clone(entry))
    }

    pub(crate) fn insert_webhook(&mut self, webhook: &Webhook, now: i64) -> StoreResult<()> {
        if self.webhooks.contains_key(&webhook.id) {
            return Err(duplicate("webhooks.id"));
        }
        rows(&mut self.webhooks).insert(webhook.id.clone(), (now, webhook.clone()));
        Ok(())
    }

    pub(crate) fn get_webhook(&self, id: &str) -> Option<Webhook> {
        self.webhooks.get(id).map(|(_, webhook)| webhook.clone())
    }

    /// Every webhook, oldest first.
    pub(crate) fn list_webhooks(&self) -> Vec<Webhook> {
        let mut all: Vec<&(i64, Webhook)> = self.webhooks.values().collect();
        all.sort_by(|(a_date, a), (b_date, b)| (a_date, &a.id).cmp(&(b_date, &b.id)));
        all.into_iter()
            .map(|(_, webhook)| webhook.clone())
            .collect()
    }

    pub(crate) fn update_webhook(&mut self, webhook: &Webhook) {
        if let Some((_, stored)) = rows(&mut self.webhooks).get_mut(&webhook.id) {
            *stored = webhook.clone();
        }
    }

    /// Deletes a webhook and, as the schema cascades, its deliveries and their attempts.
    pub(crate) fn delete_webhook(&mut self, id: &str) {
        if rows(&mut self.webhooks).remove(id).is_none() {
            return;
        }
        rows(&mut self.deliveries).retain(|_, delivery| delivery.webhook_id != id);
        let deliveries = &self.deliveries;
        rows(&mut self.attempts).retain(|(delivery_id, _), _| deliveries.contains_key(delivery_id));
    }

    pub(crate) fn enqueue_delivery(&mut self, delivery: &QueuedDelivery) -> StoreResult<()> {
        if self.deliveries.contains_key(&delivery.id) {
            return Err(duplicate("webhook_deliveries.id"));
        }
        if !self.webhooks.contains_key(&delivery.webhook_id) {
            return Err(missing("webhook_deliveries.webhook_id"));
        }
        let row = DeliveryRow {
            webhook_id: delivery.webhook_id.clone(),
            entry_id: delivery.entry_id.clone(),
            payload: delivery.payload.clone(),
            state: DeliveryState::Pending,
            attempts: 0,
            next_attempt_at: delivery.created_at,
            created_at: delivery.created_at,
            request_id: delivery.request_id.clone(),
        };
        rows(&mut self.deliveries).insert(delivery.id.clone(), row);
        Ok(())
    }

    /// The pending deliveries (counted up to the cap) and when the oldest was queued.
    pub(crate) fn outbox_depth(&self) -> ports::OutboxDepth {
        let pending = self
            .deliveries
            .iter()
            .filter(|(_, d)| d.state == DeliveryState::Pending);
        let (count, oldest) = pending.fold((0u64, None::<i64>), |(n, oldest), (_, d)| {
            (
                n + 1,
                Some(oldest.map_or(d.created_at, |o| o.min(d.created_at))),
            )
        });
        ports::OutboxDepth {
            pending: count.min(ports::OUTBOX_COUNT_CAP),
            oldest_queued_at: oldest,
        }
    }

    /// Up to `limit` pending deliveries due at `now` (earliest due first), leased until
    /// `lease_until`; returned oldest first.
    pub(crate) fn claim_deliveries(
        &mut self,
        now: i64,
        lease_until: i64,
        limit: u32,
    ) -> Vec<ClaimedDelivery> {
        let mut due: Vec<(i64, String)> = self
            .deliveries
            .iter()
            .filter(|(_, d)| d.state == DeliveryState::Pending && d.next_attempt_at <= now)
            .map(|(id, d)| (d.next_attempt_at, id.clone()))
            .collect();
        due.sort();
        due.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        let mut claimed = Vec::with_capacity(due.len());
        for (_, id) in due {
            let Some(delivery) = rows(&mut self.deliveries).get_mut(&id) else {
                continue;
            };
            delivery.next_attempt_at = lease_until;
            let Some((_, webhook)) = self.webhooks.get(&delivery.webhook_id) else {
                continue;
            };
            claimed.push((
                delivery.created_at,
                ClaimedDelivery {
                    id,
                    webhook_id: delivery.webhook_id.clone(),
                    entry_id: delivery.entry_id.clone(),
                    webhook: webhook.clone(),
                    payload: delivery.payload.clone(),
                    attempts: delivery.attempts,
                    request_id: delivery.request_id.clone(),
                },
            ));
        }
        claimed.sort_by(|(a_at, a), (b_at, b)| (a_at, &a.id).cmp(&(b_at, &b.id)));
        claimed.into_iter().map(|(_, delivery)| delivery).collect()
    }

    pub(crate) fn record_attempt(
        &mut self,
        attempt: &DeliveryAttempt,
        webhook_id: &WebhookId,
        outcome: DeliveryOutcome,
    ) -> StoreResult<()> {
        let id = (attempt.delivery_id.clone(), attempt.attempt);
        if self.attempts.contains_key(&id) {
            return Err(duplicate(
                "webhook_attempts.delivery_id, webhook_attempts.attempt",
            ));
        }
        let Some(delivery) = rows(&mut self.deliveries).get_mut(&attempt.delivery_id) else {
            return Err(missing("webhook_attempts.delivery_id"));
        };
        let (state, next) = match outcome {
            DeliveryOutcome::Delivered => (DeliveryState::Delivered, attempt.date),
            DeliveryOutcome::RetryAt(at) => (DeliveryState::Pending, at),
            DeliveryOutcome::GaveUp => (DeliveryState::Failed, attempt.date),
        };
        delivery.state = state;
        delivery.attempts = attempt.attempt;
        delivery.next_attempt_at = next;
        let row = AttemptRow {
            webhook_id: webhook_id.clone(),
            attempt: attempt.clone(),
        };
        rows(&mut self.attempts).insert(id, row);
        Ok(())
    }

    /// A webhook's most recent attempts, newest first.
    pub(crate) fn list_attempts(&self, webhook_id: &str, limit: u32) -> Vec<DeliveryAttempt> {
        let mut found: Vec<&DeliveryAttempt> = self
            .attempts
            .values()
            .filter(|row| row.webhook_id == webhook_id)
            .map(|row| &row.attempt)
            .collect();
        found.sort_by_key(|a| std::cmp::Reverse((a.date, a.attempt)));
        found
            .into_iter()
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .cloned()
            .collect()
    }
}
