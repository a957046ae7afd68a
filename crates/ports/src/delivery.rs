//! What webhook delivery needs from the network: a sender and a resolver.

use std::net::IpAddr;

use domain::webhook::target::WebhookTarget;

/// Why a webhook delivery got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The target's host is or resolves to an address the policy refuses (see
    /// [`WebhookTarget::check_addresses`]); nothing was sent.
    #[error("{0}")]
    Refused(String),
    /// The host could not be resolved, or the connection was refused, reset or timed out. Which
    /// of these is not told (it would make webhooks a port scanner); the sender logs it.
    #[error("connection failed")]
    Failed,
}

/// Sends webhook deliveries: an HTTP POST that follows no redirect.
pub trait WebhookSender: Send + Sync {
    /// POSTs `body` to `target` with `headers`; the receiver's status, or why there is none.
    /// The sender resolves the target's host once, checks every address with
    /// [`WebhookTarget::check_addresses`], and connects only to the addresses it checked.
    ///
    /// # Errors
    /// [`SendError::Refused`] for a host that resolves to a refused address, else
    /// [`SendError::Failed`].
    fn post(
        &self,
        target: &WebhookTarget,
        body: &[u8],
        headers: &[(String, String)],
    ) -> Result<u16, SendError>;
}

/// Looks host names up (DNS): used to check a webhook's host when it is created or changed.
pub trait HostResolver: Send + Sync + std::fmt::Debug {
    /// The addresses `host` resolves to (at least one).
    ///
    /// # Errors
    /// A description when the name does not resolve, or not in time.
    fn resolve(&self, host: &str) -> Result<Vec<IpAddr>, String>;
}
