//! Webhook deliveries over HTTP: [`HttpSender`], the [`WebhookSender`] that the background job
//! (`background::WebhookDeliveries`) sends the outbox's due deliveries with, so that no API
//! request ever waits for a receiver.
//!
//! Every delivery resolves its host once ([`HostResolver`], by default [`SystemResolver`]),
//! refuses it when any address is not public (unless configuration allows it, see
//! `domain::webhook::target`), and connects only to the addresses it checked: ureq is handed
//! them through a resolver of its own, so no second lookup can answer differently (DNS
//! rebinding). No proxy from the environment is used.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use domain::webhook::target::{TargetHost, WebhookTarget};
use ports::{HostResolver, SendError, WebhookSender};
use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

/// Resolves host names with the operating system's resolver, giving up after a timeout.
#[derive(Debug, Clone)]
pub struct SystemResolver {
    timeout: Duration,
}

impl SystemResolver {
    /// A resolver that waits at most `timeout` for an answer.
    pub fn new(timeout: Duration) -> Self {
        Self { timeout }
    }
}

impl HostResolver for SystemResolver {
    fn resolve(&self, host: &str) -> Result<Vec<IpAddr>, String> {
        // The system call has no timeout of its own: it runs on a thread that is abandoned
        // (and ends when the system resolver gives up) if it takes too long.
        let (tx, rx) = mpsc::sync_channel(1);
        let name = host.to_owned();
        std::thread::Builder::new()
            .name("webhook-dns".into())
            .spawn(move || {
                let found = (name.as_str(), 0)
                    .to_socket_addrs()
                    .map(|addresses| addresses.map(|a| a.ip()).collect::<Vec<_>>());
                let _ = tx.send(found);
            })
            .map_err(|e| format!("cannot start a lookup: {e}"))?;
        match rx.recv_timeout(self.timeout) {
            Ok(Ok(mut addresses)) => {
                addresses.sort_unstable();
                addresses.dedup();
                if addresses.is_empty() {
                    Err(format!("'{host}' has no address"))
                } else {
                    Ok(addresses)
                }
            }
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {} ms", self.timeout.as_millis())),
        }
    }
}

/// POSTs with a timeout, without following redirects (a redirect is a failed delivery), and only
/// to addresses that passed the target's check.
#[derive(Debug)]
pub struct HttpSender {
    config: Config,
    resolver: Arc<dyn HostResolver>,
}

impl HttpSender {
    /// A sender whose requests give up after `timeout`, resolving names with the system.
    pub fn new(timeout: Duration) -> Self {
        Self::with_resolver(timeout, Arc::new(SystemResolver::new(timeout)))
    }

    /// A sender whose requests give up after `timeout`, resolving names with `resolver`.
    pub fn with_resolver(timeout: Duration, resolver: Arc<dyn HostResolver>) -> Self {
        let config = ureq::Agent::config_builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .proxy(None)
            .build();
        Self { config, resolver }
    }
}

/// Hands ureq the addresses that were checked: it connects to these and looks nothing up.
#[derive(Debug)]
struct CheckedAddresses(Vec<SocketAddr>);

impl Resolver for CheckedAddresses {
    fn resolve(
        &self,
        _uri: &Uri,
        _config: &Config,
        _timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let mut addresses = self.empty();
        for address in &self.0 {
            // At most 16 are kept; the rest are not needed to connect.
            if addresses.try_push(*address).is_err() {
                break;
            }
        }
        if addresses.is_empty() {
            Err(ureq::Error::HostNotFound)
        } else {
            Ok(addresses)
        }
    }
}

impl WebhookSender for HttpSender {
    fn post(
        &self,
        target: &WebhookTarget,
        body: &[u8],
        headers: &[(String, String)],
    ) -> Result<u16, SendError> {
        let url = target.url();
        let addresses = match target.host() {
            TargetHost::Ip(ip) => vec![ip],
            TargetHost::Name(name) => self.resolver.resolve(&name).map_err(|reason| {
                log::warn!("webhook delivery to {url}: cannot resolve '{name}': {reason}");
                SendError::Failed
            })?,
        };
        target.check_addresses(&addresses).map_err(|reason| {
            log::warn!("webhook delivery to {url} refused: {reason} ({addresses:?})");
            SendError::Refused(reason)
        })?;
        let checked = addresses
            .iter()
            .map(|ip| SocketAddr::new(*ip, target.port()))
            .collect();
        // One agent per delivery: its resolver knows only this delivery's checked addresses.
        let agent = ureq::Agent::with_parts(
            self.config.clone(),
            DefaultConnector::new(),
            CheckedAddresses(checked),
        );
        let mut request = agent.post(url);
        for (name, value) in headers {
            request = request.header(name.as_str(), value.as_str());
        }
        request
            .send(body)
            .map(|response| response.status().as_u16())
            .map_err(|e| {
                log::warn!("webhook delivery to {url} failed: {e}");
                SendError::Failed
            })
    }
}
