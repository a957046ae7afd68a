//! [`WebhookDeliveries`]: the outbox's due deliveries, sent.

use std::sync::Arc;

use ports::WebhookSender;
use service::Service;

use crate::Job;

/// Claims due webhook deliveries (for a lease, so that no other replica sends them too), POSTs
/// them with the sender, and records each outcome: [`Webhooks::deliver_due`].
#[derive(Clone)]
pub struct WebhookDeliveries {
    service: Arc<Service>,
    sender: Arc<dyn WebhookSender>,
}

impl std::fmt::Debug for WebhookDeliveries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookDeliveries").finish_non_exhaustive()
    }
}

impl WebhookDeliveries {
    /// Deliveries of `service`'s outbox, sent by `sender`.
    pub fn new(service: Arc<Service>, sender: Arc<dyn WebhookSender>) -> Self {
        Self { service, sender }
    }
}

impl Job for WebhookDeliveries {
    fn name(&self) -> &'static str {
        "webhook delivery"
    }

    fn run_due(&self, batch: u32) -> Result<u32, String> {
        self.service
            .webhooks()
            .deliver_due(self.sender.as_ref(), batch)
            .map(|sent| u32::try_from(sent).unwrap_or(u32::MAX))
            .map_err(|err| err.to_string())
    }
}
