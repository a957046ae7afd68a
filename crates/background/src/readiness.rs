//! [`DatabaseReadiness`]: the database asked, on a loop of its own, whether it can serve.

use std::sync::Arc;

use service::Service;

use crate::Job;

/// Asks the store whether it can serve ([`Service::refresh_readiness`]) and keeps the answer,
/// which `/readyz` reads: a flood of probes costs the database nothing more, and a database that
/// stops answering shows as a check that grows old. Each run does one check and reports no
/// items (so the loop waits its interval between checks).
#[derive(Debug, Clone)]
pub struct DatabaseReadiness {
    service: Arc<Service>,
}

impl DatabaseReadiness {
    /// Checks `service`'s store.
    pub fn new(service: Arc<Service>) -> Self {
        Self { service }
    }
}

impl Job for DatabaseReadiness {
    fn name(&self) -> &'static str {
        "database readiness"
    }

    fn run_due(&self, _batch: u32) -> Result<u32, String> {
        // A database that is not ready is an outcome to keep, not a failed run.
        let _outcome = self.service.refresh_readiness();
        Ok(0)
    }
}
