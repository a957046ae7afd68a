//! Throttling of failed authentication per client address: a bounded, time-windowed counter.
//!
//! Each client address (an IPv4 address, or the /64 network of an IPv6 address) gets a window
//! of [`AUTH_FAILURE_WINDOW`] that starts at its first failed authentication. Once it has failed
//! `limit` times in its window, attempts with a token this replica has not verified recently are
//! answered 429 without a token lookup until the window ends. Requests with a verified (cached)
//! token never reach the counter.
//!
//! Memory is bounded: at most [`AuthThrottle::CAPACITY`] addresses are tracked; when that many
//! have live windows, further addresses share one overflow counter until windows expire.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The window failed authentications are counted over.
pub const AUTH_FAILURE_WINDOW: Duration = Duration::from_secs(60);

/// Whom failures are counted for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientKey {
    /// An IPv4 address (IPv4-mapped IPv6 addresses included).
    V4(Ipv4Addr),
    /// The /64 network of an IPv6 address (one host usually has a whole /64).
    V6(u64),
    /// No address is known (in-process test requests).
    Unknown,
    /// Every address that finds the table full.
    Overflow,
}

impl ClientKey {
    /// The key of a client address.
    ///
    /// ```
    /// use adapter_http::ClientKey;
    /// let a: std::net::IpAddr = "2001:db8::1".parse().unwrap();
    /// let b: std::net::IpAddr = "2001:db8::ffff".parse().unwrap();
    /// assert_eq!(ClientKey::of(Some(a)), ClientKey::of(Some(b)));
    /// let mapped: std::net::IpAddr = "::ffff:192.0.2.1".parse().unwrap();
    /// assert_eq!(ClientKey::of(Some(mapped)), ClientKey::V4([192, 0, 2, 1].into()));
    /// assert_eq!(ClientKey::of(None), ClientKey::Unknown);
    /// ```
    pub fn of(address: Option<IpAddr>) -> Self {
        match address {
            None => ClientKey::Unknown,
            Some(IpAddr::V4(v4)) => ClientKey::V4(v4),
            Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
                Some(v4) => ClientKey::V4(v4),
                None => ClientKey::V6((v6.to_bits() >> 64) as u64),
            },
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    failures: u32,
}

#[derive(Debug, Default)]
struct Table {
    windows: HashMap<ClientKey, Window>,
    last_purge: Option<Instant>,
}

/// Counts failed authentications per client address; see the module documentation.
#[derive(Debug)]
pub struct AuthThrottle {
    limit: u32,
    window: Duration,
    capacity: usize,
    table: Mutex<Table>,
}

impl AuthThrottle {
    /// How many addresses are tracked at most.
    pub const CAPACITY: usize = 100_000;

    /// A throttle allowing `limit` failures per address per [`AUTH_FAILURE_WINDOW`]; `None` when
    /// `limit` is 0 (throttling off).
    ///
    /// ```
    /// use adapter_http::{AuthThrottle, ClientKey};
    /// use std::time::Instant;
    /// let throttle = AuthThrottle::new(2).unwrap();
    /// let client = ClientKey::V4([192, 0, 2, 1].into());
    /// let now = Instant::now();
    /// throttle.record_failure(client, now);
    /// assert_eq!(throttle.blocked(client, now), None);
    /// throttle.record_failure(client, now);
    /// assert!(throttle.blocked(client, now).is_some());
    /// assert!(AuthThrottle::new(0).is_none());
    /// ```
    pub fn new(limit: u32) -> Option<Self> {
        Self::with_window(limit, AUTH_FAILURE_WINDOW, Self::CAPACITY)
    }

    fn with_window(limit: u32, window: Duration, capacity: usize) -> Option<Self> {
        (limit > 0).then(|| Self {
            limit,
            window,
            capacity: capacity.max(1),
            table: Mutex::new(Table::default()),
        })
    }

    /// The failures allowed per window.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// When `client` has used up its failures at `now`: how long until its window ends.
    pub fn blocked(&self, client: ClientKey, now: Instant) -> Option<Duration> {
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let key = if table.windows.contains_key(&client) || table.windows.len() < self.capacity {
            client
        } else {
            ClientKey::Overflow
        };
        let window = table.windows.get(&key)?;
        let ends = window.start + self.window;
        (window.failures >= self.limit && now < ends).then(|| ends - now)
    }

    /// Counts one failed authentication of `client` at `now`.
    pub fn record_failure(&self, client: ClientKey, now: Instant) {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let mut key = client;
        if !table.windows.contains_key(&client) && table.windows.len() >= self.capacity {
            // Forget ended windows, at most once a second (a full table of live windows must
            // not make every failure scan it).
            let due = table
                .last_purge
                .is_none_or(|at| now.saturating_duration_since(at) >= Duration::from_secs(1));
            if due {
                let span = self.window;
                table
                    .windows
                    .retain(|_, w| now.saturating_duration_since(w.start) < span);
                table.last_purge = Some(now);
            }
            if table.windows.len() >= self.capacity {
                key = ClientKey::Overflow;
            }
        }
        let span = self.window;
        let window = table.windows.entry(key).or_insert(Window {
            start: now,
            failures: 0,
        });
        if now.saturating_duration_since(window.start) >= span {
            *window = Window {
                start: now,
                failures: 0,
            };
        }
        window.failures = window.failures.saturating_add(1);
    }

    /// How many addresses (and the overflow counter) are tracked now.
    pub fn tracked(&self) -> usize {
        self.table
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .windows
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(last: u8) -> ClientKey {
        ClientKey::V4(Ipv4Addr::new(192, 0, 2, last))
    }

    #[test]
    fn blocks_after_the_limit_until_the_window_ends() {
        let throttle = AuthThrottle::with_window(3, Duration::from_secs(60), 10).unwrap();
        let start = Instant::now();
        for _ in 0..3 {
            assert_eq!(throttle.blocked(v4(1), start), None);
            throttle.record_failure(v4(1), start);
        }
        let later = start + Duration::from_secs(20);
        assert_eq!(
            throttle.blocked(v4(1), later),
            Some(Duration::from_secs(40))
        );
        // Other addresses have their own window.
        assert_eq!(throttle.blocked(v4(2), later), None);
        // The window ends; a new one starts with the next failure.
        let after = start + Duration::from_secs(60);
        assert_eq!(throttle.blocked(v4(1), after), None);
        throttle.record_failure(v4(1), after);
        assert_eq!(throttle.blocked(v4(1), after), None);
    }

    #[test]
    fn memory_is_bounded_and_a_full_table_shares_one_counter() {
        let throttle = AuthThrottle::with_window(2, Duration::from_secs(60), 4).unwrap();
        let now = Instant::now();
        for last in 0..100 {
            throttle.record_failure(v4(last), now);
        }
        // 4 addresses and the overflow counter, which the other 96 filled.
        assert_eq!(throttle.tracked(), 5);
        assert_eq!(throttle.blocked(v4(0), now), None);
        assert!(throttle.blocked(v4(50), now).is_some());
        assert!(throttle.blocked(v4(200), now).is_some());
        // Once the windows ended, the table makes room again.
        let later = now + Duration::from_secs(61);
        throttle.record_failure(v4(7), later);
        assert_eq!(throttle.tracked(), 1);
        assert_eq!(throttle.blocked(v4(50), later), None);
    }

    #[test]
    fn ipv6_addresses_count_per_64_network() {
        let a = ClientKey::of(Some("2001:db8:1:2::1".parse().unwrap()));
        let b = ClientKey::of(Some("2001:db8:1:2:ffff::9".parse().unwrap()));
        let c = ClientKey::of(Some("2001:db8:1:3::1".parse().unwrap()));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
