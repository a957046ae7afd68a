//! Webhooks and the outbox of their deliveries.

use domain::id::{AuditEntryId, WebhookId};
use domain::webhook::{DeliveryAttempt, Webhook};

use crate::{Locked, StoreResult};

/// Webhooks, and the outbox of deliveries queued for them: a delivery is queued in the
/// transaction that writes its audit entry, and claimed later by a worker of any replica.
pub trait WebhookRepository {
    /// Stores a new webhook created at `now`.
    fn insert_webhook(&mut self, webhook: &Webhook, now: i64) -> StoreResult<()>;
    /// A webhook by `_id`.
    fn get_webhook(&mut self, id: &WebhookId) -> StoreResult<Option<Webhook>>;
    /// A webhook by `_id`, locked until the transaction ends.
    fn lock_webhook(&mut self, id: &WebhookId) -> StoreResult<Option<Locked<Webhook>>>;
    /// Every webhook, oldest first.
    fn list_webhooks(&mut self) -> StoreResult<Vec<Webhook>>;
    /// Saves a webhook.
    fn update_webhook(&mut self, webhook: &Locked<Webhook>) -> StoreResult<()>;
    /// Deletes a webhook with its deliveries.
    fn delete_webhook(&mut self, webhook: &Locked<Webhook>) -> StoreResult<()>;
    /// Queues the delivery of an audit entry (`payload`, its JSON) to a webhook.
    fn enqueue_delivery(&mut self, delivery: &QueuedDelivery) -> StoreResult<()>;
    /// Claims up to `limit` pending deliveries due at `now`, leasing them until `lease_until`
    /// so that no other worker (of any replica) takes them meanwhile.
    fn claim_deliveries(
        &mut self,
        now: i64,
        lease_until: i64,
        limit: u32,
    ) -> StoreResult<Vec<ClaimedDelivery>>;
    /// Records an attempt and its outcome: delivered, retry at a time, or given up.
    fn record_attempt(
        &mut self,
        attempt: &DeliveryAttempt,
        webhook_id: &WebhookId,
        outcome: DeliveryOutcome,
    ) -> StoreResult<()>;
    /// The deliveries waiting to be made (due or scheduled for a retry), counted up to
    /// [`OUTBOX_COUNT_CAP`], and when the oldest of them was queued (epoch ms).
    fn outbox_depth(&mut self) -> StoreResult<OutboxDepth>;
    /// A webhook's most recent attempts, newest first.
    fn list_attempts(
        &mut self,
        webhook_id: &WebhookId,
        limit: u32,
    ) -> StoreResult<Vec<DeliveryAttempt>>;
}

/// The most pending deliveries [`WebhookRepository::outbox_depth`] counts: beyond it the count
/// says "at least this many" (the count stays cheap, however far behind deliveries are).
pub const OUTBOX_COUNT_CAP: u64 = 100_000;

/// What waits in the webhook outbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutboxDepth {
    /// Pending deliveries, at most [`OUTBOX_COUNT_CAP`].
    pub pending: u64,
    /// When the oldest pending delivery was queued (epoch ms); `None` when none is.
    pub oldest_queued_at: Option<i64>,
}

/// A delivery to queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedDelivery {
    /// 24 hex.
    pub id: String,
    /// The webhook.
    pub webhook_id: WebhookId,
    /// The audit entry.
    pub entry_id: AuditEntryId,
    /// The request body (the entry's JSON).
    pub payload: String,
    /// When it was queued (and is first due), epoch ms.
    pub created_at: i64,
    /// The id of the request whose change queued it, if a request did.
    pub request_id: Option<String>,
}

/// A delivery claimed by a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedDelivery {
    /// The delivery.
    pub id: String,
    /// The webhook.
    pub webhook_id: WebhookId,
    /// The audit entry.
    pub entry_id: AuditEntryId,
    /// The webhook's URL and secret at claim time.
    pub webhook: Webhook,
    /// The request body.
    pub payload: String,
    /// Attempts made so far.
    pub attempts: u32,
    /// The id of the request whose change queued it, if a request did.
    pub request_id: Option<String>,
}

/// What became of a delivery after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// The receiver answered 2xx.
    Delivered,
    /// Try again at this time (epoch ms).
    RetryAt(i64),
    /// No more attempts.
    GaveUp,
}
