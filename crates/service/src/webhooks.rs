//! Webhooks and the delivery of audit entries to them (a transactional outbox).

use std::time::Instant;

use domain::audit::AuditEntry;
use domain::id::WebhookId;
use domain::patch::JsonPatchBody;
use domain::policy::Resource;
use domain::webhook::target::{TargetHost, TargetPolicy, WebhookTarget};
use domain::webhook::{DeliveryAttempt, Webhook, WebhookPost};
use domain::{IdSource, ValidationError};
use hmac::{Hmac, Mac};
use ports::{
    ClaimedDelivery, DeliveryOutcome, QueuedDelivery, Repository, StoreExt, WebhookSender,
};
use rand::Rng;
use sha2::Sha256;

use crate::audit::Change;
use crate::error::{Cause, Detail};
use crate::{
    object_id, use_case, ApiResource, Permit, RandomIds, Representations, Service, ServiceError,
    ServiceResult, WebhookSettings,
};

/// Webhooks, and delivering what the outbox holds. The use cases of `Service::webhooks`; they work with the service's data
/// ([`Service`], which this derefs to).
#[derive(Debug, Clone, Copy)]
pub struct Webhooks<'a>(&'a Service);

impl Service {
    /// Webhooks, and delivering what the outbox holds.
    pub fn webhooks(&self) -> Webhooks<'_> {
        Webhooks(self)
    }
}

impl std::ops::Deref for Webhooks<'_> {
    type Target = Service;

    fn deref(&self) -> &Service {
        self.0
    }
}

/// How long a claimed delivery is reserved for the worker that claimed it (ms).
const LEASE_MS: i64 = 60_000;

/// The signature header: hex HMAC-SHA256 of the body, keyed by the webhook's secret.
pub const SIGNATURE_HEADER: &str = "X-Svc-Signature";

/// The hex HMAC-SHA256 of `body` under `secret`.
pub fn sign(secret: &str, body: &[u8]) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return String::new();
    };
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

fn not_found(id: &str) -> ServiceError {
    ServiceError::NotFound(format!("no webhook with id '{id}'"))
}

/// The webhook id a request names (in its path): text that is not a webhook id names no
/// webhook, and gets the same `NotFound` as an id that names none.
fn webhook_id(id: &str) -> ServiceResult<WebhookId> {
    WebhookId::parse(id).map_err(|_| not_found(id))
}

fn url_refused(reason: String) -> ServiceError {
    ValidationError::single("url", reason).into()
}

impl WebhookSettings {
    fn policy(&self) -> TargetPolicy {
        TargetPolicy {
            allow_private_networks: self.allow_private_networks,
            allowed_hosts: self.allowed_hosts.clone(),
        }
    }

    /// Checks a webhook URL being stored: its syntax, the allow-list, its host as written, and
    /// (for a name, with a resolver) the addresses the name resolves to now. A name that does
    /// not resolve yet is accepted: every delivery resolves and checks it again.
    fn check_url(&self, url: &str) -> ServiceResult<WebhookTarget> {
        let target = self.policy().check(url).map_err(url_refused)?;
        if let (TargetHost::Name(name), Some(resolver)) = (target.host(), &self.resolver) {
            if !target.private_allowed() {
                match resolver.resolve(&name) {
                    Ok(addresses) => target.check_addresses(&addresses).map_err(url_refused)?,
                    Err(reason) => log::info!(
                        "webhook host '{name}' does not resolve now ({reason}); it is checked at delivery"
                    ),
                }
            }
        }
        Ok(target)
    }
}

/// `webhook/{id}`, with the webhook's tags.
fn webhook_resource(webhook: &Webhook) -> Resource {
    Resource::webhook(&webhook.id).with_tags(&webhook.tags)
}

fn webhook_change(
    shown: &dyn Representations,
    webhook: &Webhook,
    verb: &'static str,
    action: &str,
) -> Change {
    Change::new(
        "webhook",
        webhook.name.as_deref().unwrap_or(&webhook.url),
        verb,
        action,
        webhook_resource(webhook),
    )
    .href(shown.href(ApiResource::Webhook { id: &webhook.id }))
}

impl Service {
    /// Queues `entry` for every webhook that wants it, in the current transaction.
    pub(crate) fn enqueue_deliveries(
        &self,
        repo: &mut dyn Repository,
        entry: &AuditEntry,
        webhooks: &[Webhook],
        request_id: Option<&str>,
    ) -> ServiceResult<()> {
        let wanted: Vec<&Webhook> = webhooks.iter().filter(|w| w.selects(entry)).collect();
        if wanted.is_empty() {
            return Ok(());
        }
        // What `GET /auditlog` shows of the entry.
        let payload = self.shown.audit_entry_json(&entry.listing()).map_err(|e| {
            ServiceError::Internal(Detail::caused_by(
                "a webhook payload could not be serialized",
                Cause::Serialization(e.to_string()),
            ))
        })?;
        for webhook in wanted {
            repo.enqueue_delivery(&QueuedDelivery {
                id: object_id(),
                webhook_id: webhook.id.clone(),
                entry_id: entry.id.clone(),
                payload: payload.clone(),
                created_at: entry.date,
                request_id: request_id.map(str::to_owned),
            })?;
        }
        Ok(())
    }

    fn attempt(&self, sender: &dyn WebhookSender, delivery: &ClaimedDelivery) -> ServiceResult<()> {
        let attempt_number = delivery.attempts + 1;
        let started = Instant::now();
        let date = self.now();
        // Checked again: the configuration may have changed since the URL was stored, and the
        // sender checks the addresses the host resolves to now.
        let result = match self.webhooks.policy().check(&delivery.webhook.url) {
            Err(reason) => Err(format!("url: {reason}")),
            Ok(target) => {
                let body = delivery.payload.as_bytes();
                let mut headers = vec![
                    ("Content-Type".to_owned(), "application/json".to_owned()),
                    ("User-Agent".to_owned(), "flagsvc-webhooks".to_owned()),
                    ("X-Svc-Delivery".to_owned(), delivery.id.clone()),
                ];
                if let Some(request_id) = &delivery.request_id {
                    headers.push(("X-Svc-Request-Id".to_owned(), request_id.clone()));
                }
                if let Some(secret) = &delivery.webhook.secret {
                    headers.push((SIGNATURE_HEADER.to_owned(), sign(secret, body)));
                }
                sender
                    .post(&target, body, &headers)
                    .map_err(|e| e.to_string())
            }
        };
        let duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let (status_code, error) = match result {
            Ok(status) if (200..300).contains(&status) => (Some(status), None),
            Ok(status) => (
                Some(status),
                Some(format!("the receiver answered {status}")),
            ),
            Err(reason) => (None, Some(reason)),
        };
        let outcome = if error.is_none() {
            DeliveryOutcome::Delivered
        } else {
            match self
                .webhooks
                .retry
                .delay_after(attempt_number, rand::rng().random::<f64>())
            {
                Some(delay) => DeliveryOutcome::RetryAt(self.now() + delay),
                None => DeliveryOutcome::GaveUp,
            }
        };
        let counted = match outcome {
            DeliveryOutcome::Delivered => "delivered",
            DeliveryOutcome::RetryAt(_) => "failed_will_retry",
            DeliveryOutcome::GaveUp => "failed_gave_up",
        };
        metrics::counter!("flagsvc_webhook_delivery_attempts_total", "outcome" => counted)
            .increment(1);
        // The delivery log: one line per attempt, naming the request whose change queued it.
        let request_id = delivery.request_id.as_deref().unwrap_or("-");
        // At `warn` when it failed (a level must be known where the line is written).
        macro_rules! delivery_line {
            ($level:ident) => {
                tracing::$level!(
                    delivery_id = %delivery.id,
                    entry_id = %delivery.entry_id,
                    webhook_id = %delivery.webhook_id,
                    request_id,
                    attempt = attempt_number,
                    duration_ms,
                    outcome = counted,
                    reason = error.as_deref().unwrap_or("-"),
                    "webhook delivery"
                )
            };
        }
        if error.is_none() {
            delivery_line!(info);
        } else {
            delivery_line!(warn);
        }
        let attempt = DeliveryAttempt {
            delivery_id: delivery.id.clone(),
            entry_id: delivery.entry_id.to_string(),
            attempt: attempt_number,
            date,
            status_code,
            error,
            duration_ms,
        };
        self.store.write_tx(|repo| -> ServiceResult<()> {
            repo.record_attempt(&attempt, &delivery.webhook_id, outcome)?;
            Ok(())
        })
    }
}

impl Webhooks<'_> {
    /// Lists the webhooks.
    ///
    /// # Errors
    /// `NotPermitted` below admin.
    pub fn list_webhooks(
        &self,
        permit: &Permit<use_case::ListWebhooks>,
    ) -> ServiceResult<Vec<Webhook>> {
        let caller = permit.caller();
        caller.require_on("viewWebhooks", &Resource::webhook("*"))?;
        let mut webhooks = self
            .store
            .read_tx(|repo| -> ServiceResult<_> { Ok(repo.list_webhooks()?) })?;
        // Statements may hide some webhooks (and their secrets): the list shows what a lookup
        // by id would.
        if !caller.permissions.built_in_only() {
            webhooks.retain(|w| {
                caller
                    .require_on("viewWebhooks", &Resource::webhook(w.id.as_str()))
                    .is_ok()
            });
        }
        Ok(webhooks)
    }

    /// Creates a webhook; with `sign` and no secret, a secret is generated.
    ///
    /// # Errors
    /// `Invalid` for a bad URL, a host outside the allow-list, a host that is or resolves to a
    /// non-public address (unless allowed), bad statements.
    pub fn create_webhook(
        &self,
        permit: &Permit<use_case::CreateWebhook>,
        post: WebhookPost,
    ) -> ServiceResult<Webhook> {
        let caller = permit.caller();
        let webhook =
            Webhook::create(WebhookId::generate(&mut RandomIds), post, RandomIds.hex(32))?;
        self.webhooks.check_url(&webhook.url)?;
        let now = self.now();
        self.store.write_tx(|repo| -> ServiceResult<_> {
            repo.insert_webhook(&webhook, now)?;
            self.audit(
                repo,
                caller,
                webhook_change(&*self.shown, &webhook, "created", "createWebhook")
                    .versions(None, Some(self.shown.webhook(&webhook.masked())))
                    .authorize(caller)?,
            )?;
            Ok(webhook.clone())
        })
    }

    /// One webhook.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn get_webhook(
        &self,
        permit: &Permit<use_case::GetWebhook>,
        id: &str,
    ) -> ServiceResult<Webhook> {
        let caller = permit.caller();
        let webhook = self.store.read_tx(|repo| -> ServiceResult<_> {
            repo.get_webhook(&webhook_id(id)?)?
                .ok_or_else(|| not_found(id))
        })?;
        caller.require_on("viewWebhooks", &webhook_resource(&webhook))?;
        Ok(webhook)
    }

    /// Changes a webhook by JSON Patch (`/on`, `/url`, `/name`, `/secret`, `/tags`, `/statements`).
    ///
    /// # Errors
    /// `Invalid` for a URL to a host outside the allow-list or to a non-public address,
    /// `NotFound`, `VersionConflict` for a failed `test`, `PatchFailed`.
    pub fn patch_webhook(
        &self,
        permit: &Permit<use_case::PatchWebhook>,
        id: &str,
        patch: &JsonPatchBody,
    ) -> ServiceResult<Webhook> {
        let caller = permit.caller();
        // A new URL's host is looked up before the webhook is locked, not while it is held (a
        // lookup may take seconds). Under the lock, only a URL other than the one checked here
        // (a concurrent change made the patch land elsewhere) is looked up again.
        let preview = self.store.read_tx(|repo| -> ServiceResult<_> {
            let webhook = repo
                .get_webhook(&webhook_id(id)?)?
                .ok_or_else(|| not_found(id))?;
            let shown = self.shown.webhook(&webhook);
            Ok((
                webhook.apply_patch_as_shown(&shown, &patch.operations).ok(),
                webhook.url,
            ))
        })?;
        let checked_url = match preview {
            (Some(next), current) if next.url != current => {
                self.webhooks.check_url(&next.url)?;
                Some(next.url)
            }
            _ => None,
        };
        self.store.write_tx(|repo| -> ServiceResult<_> {
            let mut held = repo
                .lock_webhook(&webhook_id(id)?)?
                .ok_or_else(|| not_found(id))?;
            // It answers the webhook even when it changes nothing: only for who may read it.
            caller.require_on("viewWebhooks", &webhook_resource(&held))?;
            let next = held.apply_patch_as_shown(&self.shown.webhook(&held), &patch.operations)?;
            if next.url != held.url && checked_url.as_ref() != Some(&next.url) {
                self.webhooks.check_url(&next.url)?;
            }
            if next != *held {
                let webhook = held.replace(next);
                repo.update_webhook(&held)?;
                let mut change = webhook_change(&*self.shown, &held, "updated", "updateWebhook")
                    .comment(patch.comment.clone())
                    .versions(
                        Some(self.shown.webhook(&webhook.masked())),
                        Some(self.shown.webhook(&held.masked())),
                    );
                // Retagged: decided on the webhook as it was, too.
                if webhook.tags != held.tags {
                    change.accesses.push(domain::policy::Request::new(
                        "updateWebhook",
                        webhook_resource(&webhook),
                    ));
                }
                self.audit(repo, caller, change.authorize(caller)?)?;
            }
            Ok(held.into_inner())
        })
    }

    /// Deletes a webhook and its pending deliveries.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn delete_webhook(
        &self,
        permit: &Permit<use_case::DeleteWebhook>,
        id: &str,
    ) -> ServiceResult<()> {
        let caller = permit.caller();
        self.store.write_tx(|repo| -> ServiceResult<()> {
            let webhook = repo
                .lock_webhook(&webhook_id(id)?)?
                .ok_or_else(|| not_found(id))?;
            repo.delete_webhook(&webhook)?;
            self.audit(
                repo,
                caller,
                webhook_change(&*self.shown, &webhook, "deleted", "deleteWebhook")
                    .versions(Some(self.shown.webhook(&webhook.masked())), None)
                    .authorize(caller)?,
            )?;
            Ok(())
        })
    }

    /// A webhook's recent delivery attempts, newest first.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn webhook_deliveries(
        &self,
        permit: &Permit<use_case::GetWebhook>,
        id: &str,
    ) -> ServiceResult<Vec<DeliveryAttempt>> {
        let caller = permit.caller();
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let webhook = repo
                .get_webhook(&webhook_id(id)?)?
                .ok_or_else(|| not_found(id))?;
            caller.require_on("viewWebhooks", &webhook_resource(&webhook))?;
            Ok(repo.list_attempts(&webhook.id, 50)?)
        })
    }

    /// Sends the deliveries that are due (at most `limit`), each once, and records the outcome;
    /// failures are retried later with exponential backoff and jitter, up to the retry policy's
    /// attempts. Returns how many were attempted. Safe to run in several replicas at once.
    ///
    /// # Errors
    /// Storage errors.
    pub fn deliver_due(&self, sender: &dyn WebhookSender, limit: u32) -> ServiceResult<usize> {
        let now = self.now();
        let (claimed, depth) = self.store.write_tx(|repo| -> ServiceResult<_> {
            let claimed = repo.claim_deliveries(now, now + LEASE_MS, limit)?;
            Ok((claimed, repo.outbox_depth()?))
        })?;
        // The outbox as this round found it (claimed deliveries still count: not yet made).
        #[allow(clippy::cast_precision_loss)] // counts far below 2^52
        metrics::gauge!("flagsvc_webhook_outbox_pending").set(depth.pending as f64);
        #[allow(clippy::cast_precision_loss)]
        let oldest_age = depth
            .oldest_queued_at
            .map_or(0.0, |queued| (now - queued).max(0) as f64 / 1000.0);
        metrics::gauge!("flagsvc_webhook_outbox_oldest_pending_seconds").set(oldest_age);
        for delivery in &claimed {
            self.attempt(sender, delivery)?;
        }
        Ok(claimed.len())
    }
}
