//! Webhook deliveries over HTTP ([`HttpSender`]), and the [`Worker`] that sends what the outbox
//! holds: it claims due deliveries, POSTs them, and records the outcome, in a loop of its own so
//! that no API request ever waits for a receiver.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ports::WebhookSender;
use service::Service;

/// POSTs with a timeout and without following redirects (a redirect is a failed delivery).
#[derive(Debug)]
pub struct HttpSender {
    agent: ureq::Agent,
}

impl HttpSender {
    /// A sender whose requests give up after `timeout`.
    pub fn new(timeout: Duration) -> Self {
        let agent = ureq::Agent::config_builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .build()
            .into();
        Self { agent }
    }
}

impl WebhookSender for HttpSender {
    fn post(&self, url: &str, body: &[u8], headers: &[(String, String)]) -> Result<u16, String> {
        let mut request = self.agent.post(url);
        for (name, value) in headers {
            request = request.header(name.as_str(), value.as_str());
        }
        request
            .send(body)
            .map(|response| response.status().as_u16())
            .map_err(|e| e.to_string())
    }
}

/// The background delivery loop; stopped (after the batch in hand) when dropped.
#[derive(Debug)]
pub struct Worker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Deliveries claimed per round.
    const BATCH: u32 = 20;

    /// Starts delivering: every `interval`, everything due, in batches of [`Self::BATCH`].
    ///
    /// # Errors
    /// The delivery thread could not be spawned.
    pub fn start(
        service: Arc<Service>,
        sender: Arc<dyn WebhookSender>,
        interval: Duration,
    ) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("webhook-deliveries".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    match service.deliver_due(sender.as_ref(), Self::BATCH) {
                        // A full batch: more may be due at once.
                        Ok(delivered) if u32::try_from(delivered) == Ok(Self::BATCH) => continue,
                        Ok(_) => {}
                        Err(err) => log::warn!("webhook deliveries: {err}"),
                    }
                    std::thread::sleep(interval);
                }
            })?;
        Ok(Self {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
