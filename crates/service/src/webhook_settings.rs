//! [`WebhookSettings`]: how webhooks are delivered, and where they may point.

use std::sync::Arc;

use domain::webhook::RetryPolicy;
use ports::HostResolver;

/// How webhooks are delivered, and where they may point.
#[derive(Debug, Clone, Default)]
pub struct WebhookSettings {
    /// Hosts webhooks may point at; `None` allows any host. A listed host may be private.
    pub allowed_hosts: Option<Vec<String>>,
    /// Allow webhooks to private, loopback, link-local and other non-public addresses and to
    /// local names (`localhost`, `*.internal`, ...). Off: only public addresses.
    pub allow_private_networks: bool,
    /// Resolves a webhook's host name when it is created or its URL changes, so that a name of
    /// a private address is refused at once. Without one, names are checked at delivery only
    /// (where the sender always resolves and checks them).
    pub resolver: Option<Arc<dyn HostResolver>>,
    /// Retries of failed deliveries.
    pub retry: RetryPolicy,
}
