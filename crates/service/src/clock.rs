//! [`SystemClock`]: the time, strictly increasing within the process.

use ports::Clock;

/// The system clock, made strictly increasing within the process: two calls never return the
/// same millisecond, so creation times order everything created through one replica.
#[derive(Debug, Default)]
pub struct SystemClock {
    last: std::sync::atomic::AtomicI64,
}

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        use std::sync::atomic::Ordering;
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let wall = i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX);
        let previous = self
            .last
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| {
                Some(wall.max(last + 1))
            })
            .unwrap_or(wall);
        wall.max(previous + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clock_never_repeats() {
        let clock = SystemClock::default();
        let mut last = clock.now_ms();
        for _ in 0..10_000 {
            let now = clock.now_ms();
            assert!(now > last);
            last = now;
        }
    }
}
