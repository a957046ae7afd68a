//! Webhooks and the delivery of audit entries to them (a transactional outbox).

use std::time::Instant;

use domain::audit::{resource, AuditEntry};
use domain::patch::JsonPatchBody;
use domain::role::Action;
use domain::webhook::{url_host, DeliveryAttempt, RetryPolicy, Webhook, WebhookPost};
use domain::IdSource;
use hmac::{Hmac, Mac};
use ports::{
    ClaimedDelivery, DeliveryOutcome, QueuedDelivery, Repository, StoreExt, WebhookSender,
};
use rand::Rng;
use sha2::Sha256;

use crate::audit::{json, Change};
use crate::{object_id, Caller, RandomIds, Service, ServiceError, ServiceResult};

/// How webhooks are delivered.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WebhookSettings {
    /// Hosts webhooks may point at; `None` allows any host.
    pub allowed_hosts: Option<Vec<String>>,
    /// Retries of failed deliveries.
    pub retry: RetryPolicy,
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

impl WebhookSettings {
    fn check_host(&self, url: &str) -> Result<(), String> {
        let host = url_host(url)?;
        match &self.allowed_hosts {
            Some(hosts) if !hosts.iter().any(|h| h.eq_ignore_ascii_case(&host)) => Err(format!(
                "webhooks may not point at host '{host}' (allowed: {})",
                hosts.join(", ")
            )),
            _ => Ok(()),
        }
    }
}

fn webhook_change(webhook: &Webhook, verb: &'static str, action: &str) -> Change {
    Change::new(
        "webhook",
        webhook.name.clone().unwrap_or_else(|| webhook.url.clone()),
        verb,
        action,
        resource::webhook(&webhook.id),
    )
    .links(format!("/api/v2/webhooks/{}", webhook.id))
}

impl Service {
    /// Queues `entry` for every webhook that wants it, in the current transaction.
    pub(crate) fn enqueue_deliveries(
        &self,
        repo: &mut dyn Repository,
        entry: &AuditEntry,
    ) -> ServiceResult<()> {
        let webhooks = repo.list_webhooks()?;
        let wanted: Vec<&Webhook> = webhooks.iter().filter(|w| w.selects(entry)).collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let payload = serde_json::to_string(&entry.listing())
            .map_err(|e| ServiceError::Internal(e.to_string()))?;
        for webhook in wanted {
            repo.enqueue_delivery(&QueuedDelivery {
                id: object_id(),
                webhook_id: webhook.id.clone(),
                entry_id: entry.id.clone(),
                payload: payload.clone(),
                created_at: entry.date,
            })?;
        }
        Ok(())
    }

    /// Lists the webhooks.
    ///
    /// # Errors
    /// 403 below admin.
    pub fn list_webhooks(&self, caller: &Caller) -> ServiceResult<Vec<Webhook>> {
        caller.require(Action::ManageWebhooks)?;
        self.store
            .read_tx(|repo| -> ServiceResult<_> { Ok(repo.list_webhooks()?) })
    }

    /// Creates a webhook; with `sign` and no secret, a secret is generated.
    ///
    /// # Errors
    /// 400 for a bad URL, a host outside the allow-list, bad statements; 403 below admin.
    pub fn create_webhook(&self, caller: &Caller, post: WebhookPost) -> ServiceResult<Webhook> {
        caller.require(Action::ManageWebhooks)?;
        let webhook = Webhook::create(object_id(), post, RandomIds.hex(32))?;
        self.webhooks
            .check_host(&webhook.url)
            .map_err(ServiceError::invalid)?;
        let now = self.now();
        self.store.write_tx(|repo| -> ServiceResult<_> {
            repo.insert_webhook(&webhook, now)?;
            self.audit(
                repo,
                caller,
                webhook_change(&webhook, "created", "createWebhook")
                    .versions(None, json(&webhook.masked())),
            )?;
            Ok(webhook.clone())
        })
    }

    /// One webhook.
    ///
    /// # Errors
    /// 403, 404.
    pub fn get_webhook(&self, caller: &Caller, id: &str) -> ServiceResult<Webhook> {
        caller.require(Action::ManageWebhooks)?;
        self.store.read_tx(|repo| -> ServiceResult<_> {
            repo.get_webhook(id)?.ok_or_else(|| not_found(id))
        })
    }

    /// Changes a webhook by JSON Patch (`/on`, `/url`, `/name`, `/secret`, `/tags`, `/statements`).
    ///
    /// # Errors
    /// 400 for a host outside the allow-list, 403, 404, 409 for a failed `test`, 422.
    pub fn patch_webhook(
        &self,
        caller: &Caller,
        id: &str,
        patch: &JsonPatchBody,
    ) -> ServiceResult<Webhook> {
        caller.require(Action::ManageWebhooks)?;
        self.store.write_tx(|repo| -> ServiceResult<_> {
            let mut held = repo.lock_webhook(id)?.ok_or_else(|| not_found(id))?;
            let next = held.apply_patch(&patch.operations)?;
            self.webhooks
                .check_host(&next.url)
                .map_err(ServiceError::invalid)?;
            if next != *held {
                let webhook = held.replace(next);
                repo.update_webhook(&held)?;
                let change = webhook_change(&held, "updated", "updateWebhook")
                    .comment(patch.comment.clone())
                    .versions(json(&webhook.masked()), json(&held.masked()));
                self.audit(repo, caller, change)?;
            }
            Ok(held.into_inner())
        })
    }

    /// Deletes a webhook and its pending deliveries.
    ///
    /// # Errors
    /// 403, 404.
    pub fn delete_webhook(&self, caller: &Caller, id: &str) -> ServiceResult<()> {
        caller.require(Action::ManageWebhooks)?;
        self.store.write_tx(|repo| -> ServiceResult<()> {
            let webhook = repo.lock_webhook(id)?.ok_or_else(|| not_found(id))?;
            repo.delete_webhook(&webhook)?;
            self.audit(
                repo,
                caller,
                webhook_change(&webhook, "deleted", "deleteWebhook")
                    .versions(json(&webhook.masked()), None),
            )?;
            Ok(())
        })
    }

    /// A webhook's recent delivery attempts, newest first.
    ///
    /// # Errors
    /// 403, 404.
    pub fn webhook_deliveries(
        &self,
        caller: &Caller,
        id: &str,
    ) -> ServiceResult<Vec<DeliveryAttempt>> {
        caller.require(Action::ManageWebhooks)?;
        self.store.read_tx(|repo| -> ServiceResult<_> {
            repo.get_webhook(id)?.ok_or_else(|| not_found(id))?;
            Ok(repo.list_attempts(id, 50)?)
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
        let claimed = self.store.write_tx(|repo| -> ServiceResult<_> {
            Ok(repo.claim_deliveries(now, now + LEASE_MS, limit)?)
        })?;
        for delivery in &claimed {
            self.attempt(sender, delivery)?;
        }
        Ok(claimed.len())
    }

    fn attempt(&self, sender: &dyn WebhookSender, delivery: &ClaimedDelivery) -> ServiceResult<()> {
        let attempt_number = delivery.attempts + 1;
        let started = Instant::now();
        let date = self.now();
        let result = match self.webhooks.check_host(&delivery.webhook.url) {
            Err(reason) => Err(reason),
            Ok(()) => {
                let body = delivery.payload.as_bytes();
                let mut headers = vec![
                    ("Content-Type".to_owned(), "application/json".to_owned()),
                    ("User-Agent".to_owned(), "flagsvc-webhooks".to_owned()),
                    ("X-Svc-Delivery".to_owned(), delivery.id.clone()),
                ];
                if let Some(secret) = &delivery.webhook.secret {
                    headers.push((SIGNATURE_HEADER.to_owned(), sign(secret, body)));
                }
                sender.post(&delivery.webhook.url, body, &headers)
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
        let attempt = DeliveryAttempt {
            delivery_id: delivery.id.clone(),
            entry_id: delivery.entry_id.clone(),
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
