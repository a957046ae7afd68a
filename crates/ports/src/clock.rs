//! [`Clock`]: the time, so that use cases and tests agree on "now".

/// The time.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}
