//! [`SdkDelivery`]: the SDK streams' channels that changes made due, stepped; their heartbeats.

use std::sync::Arc;

use service::Service;

use crate::{Job, Wake};

/// Steps the channels of SDK streams that committed changes made due (`service::Sdk` streams),
/// woken by the changes themselves: a change reaches the streams without waiting for the
/// job's pause, which only paces heartbeats and retries.
#[derive(Debug, Clone)]
pub struct SdkDelivery {
    service: Arc<Service>,
}

impl SdkDelivery {
    /// The delivery of `service`'s SDK streams.
    pub fn new(service: Arc<Service>) -> Self {
        Self { service }
    }
}

impl Job for SdkDelivery {
    fn name(&self) -> &'static str {
        "sdk delivery"
    }

    fn run_due(&self, batch: u32) -> Result<u32, String> {
        self.service
            .deliver_due(usize::try_from(batch).unwrap_or(usize::MAX))
            .map(|stepped| u32::try_from(stepped).unwrap_or(u32::MAX))
            .map_err(|err| err.to_string())
    }

    fn woken_by(&self, wake: Wake) {
        self.service
            .wake_delivery_with(Box::new(move || wake.wake()));
    }
}
