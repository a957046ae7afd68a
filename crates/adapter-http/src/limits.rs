//! Rate limits: token buckets per (token, route) and per token, over a 10-second window.
//!
//! [`RateLimits`] keeps the buckets in this replica's memory; [`Limiter`] is what the middleware
//! asks, and counts either there or in buckets shared by every replica ([`SharedRateLimits`],
//! which this adapter owns and crate `adapter-redis` implements on Redis).

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Rate-limit buckets kept outside this replica, shared by every replica that uses them: the
/// same buckets as [`RateLimits`] (per token and route, and per token), counted elsewhere.
pub trait SharedRateLimits: Send + Sync + std::fmt::Debug {
    /// Buckets of `route_limit` requests per [`WINDOW`] per (token, route), and
    /// [`per_token`]`(route_limit)` per token.
    fn buckets(&self, route_limit: u32) -> Box<dyn SharedBuckets>;
}

/// One set of shared buckets (see [`SharedRateLimits::buckets`]).
pub trait SharedBuckets: Send + Sync + std::fmt::Debug {
    /// Counts one request of token `token_id` (its `_id`) on `route` (method and path pattern)
    /// in the shared buckets or, when they fail or are slow to answer, in `fallback` (this
    /// replica's own): a request is never refused because the shared store is away.
    fn check<'a>(
        &'a self,
        token_id: &'a str,
        route: &'a str,
        fallback: &'a RateLimits,
    ) -> Pin<Box<dyn Future<Output = Result<Remaining, Limited>> + 'a>>;
}

/// The window the limits are expressed over.
pub const WINDOW: Duration = Duration::from_secs(10);

type Keyed<K> = RateLimiter<K, DefaultKeyedStateStore<K>, DefaultClock, StateInformationMiddleware>;

/// The state of both buckets after a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remaining {
    /// Requests left for this token on this route.
    pub route: u32,
    /// Requests left for this token overall.
    pub global: u32,
    /// When both buckets are full again (epoch ms).
    pub reset_ms: i64,
}

/// Over the limit: when to come back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limited {
    /// Seconds until a request may succeed (at least 1).
    pub retry_after_secs: u64,
    /// Epoch ms of the same moment.
    pub reset_ms: i64,
    /// Remaining counts (the exhausted one is 0).
    pub remaining: Remaining,
}

/// Both limiters.
pub struct RateLimits {
    per_route: Keyed<(String, String)>,
    per_token: Keyed<String>,
    route_burst: u32,
    token_burst: u32,
    checks: AtomicU64,
    clock: DefaultClock,
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits")
            .field("route_burst", &self.route_burst)
            .finish_non_exhaustive()
    }
}

fn quota(per_window: NonZeroU32) -> Quota {
    let period = WINDOW / per_window.get();
    Quota::with_period(period.max(Duration::from_nanos(1)))
        .unwrap_or_else(|| Quota::per_second(per_window))
        .allow_burst(per_window)
}

/// The wall clock in epoch ms (what `X-Ratelimit-Reset` is expressed in).
/// Now, in epoch milliseconds (what `reset_ms` counts in).
pub fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

fn refill_ms(used: u32, burst: u32) -> i64 {
    let per_cell = WINDOW.as_millis() / u128::from(burst.max(1));
    i64::try_from(per_cell * u128::from(used)).unwrap_or(i64::MAX)
}

impl RateLimits {
    /// Limits of `per_route` requests per window per (token, route) and five times that per
    /// token; `None` when `per_route` is 0 (limiting off).
    pub fn new(per_route: u32) -> Option<Self> {
        let route = NonZeroU32::new(per_route)?;
        let token = NonZeroU32::new(per_token(per_route)).unwrap_or(route);
        Some(Self {
            per_route: RateLimiter::keyed(quota(route))
                .with_middleware::<StateInformationMiddleware>(),
            per_token: RateLimiter::keyed(quota(token))
                .with_middleware::<StateInformationMiddleware>(),
            route_burst: route.get(),
            token_burst: token.get(),
            checks: AtomicU64::new(0),
            clock: DefaultClock::default(),
        })
    }

    /// Counts one request of `token` on `route`.
    ///
    /// # Errors
    /// [`Limited`] when either bucket is empty.
    pub fn check(&self, token: &str, route: &str) -> Result<Remaining, Limited> {
        // Forget idle keys now and then so memory stays bounded by active callers.
        if self.checks.fetch_add(1, Ordering::Relaxed) % 4096 == 4095 {
            self.per_route.retain_recent();
            self.per_token.retain_recent();
        }
        let now = now_ms();
        let global = match self.per_token.check_key(&token.to_owned()) {
            Ok(snapshot) => snapshot.remaining_burst_capacity(),
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.clock.now());
                return Err(limited(
                    wait,
                    now,
                    Remaining {
                        route: 0,
                        global: 0,
                        reset_ms: now,
                    },
                ));
            }
        };
        match self
            .per_route
            .check_key(&(token.to_owned(), route.to_owned()))
        {
            Ok(snapshot) => {
                let route_left = snapshot.remaining_burst_capacity();
                let reset_ms = now
                    + refill_ms(self.route_burst - route_left, self.route_burst)
                        .max(refill_ms(self.token_burst - global, self.token_burst));
                Ok(Remaining {
                    route: route_left,
                    global,
                    reset_ms,
                })
            }
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.clock.now());
                Err(limited(
                    wait,
                    now,
                    Remaining {
                        route: 0,
                        global,
                        reset_ms: now,
                    },
                ))
            }
        }
    }
}

/// The per-token limit that goes with `per_route` per (token, route): five times it.
pub fn per_token(per_route: u32) -> u32 {
    per_route.saturating_mul(5)
}

/// Over the limit at `now` (epoch ms) until `wait` has passed: `Retry-After` is `wait` in whole
/// seconds, rounded up and at least 1 (a client told 0 would retry at once, and be refused
/// again); the reset is the moment it may retry.
pub fn limited(wait: Duration, now: i64, remaining: Remaining) -> Limited {
    let wait_ms = i64::try_from(wait.as_millis()).unwrap_or(i64::MAX);
    let reset_ms = now.saturating_add(wait_ms);
    Limited {
        retry_after_secs: wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
        reset_ms,
        remaining: Remaining {
            reset_ms,
            ..remaining
        },
    }
    .at_least_one_second()
}

/// The rate limiter the middleware asks, whichever counts: one path in the middleware for both.
#[derive(Debug)]
pub(crate) struct Limiter {
    /// This replica's own buckets: N replicas allow N times the limit. With Redis, they count
    /// the requests Redis could not.
    local: RateLimits,
    /// Buckets shared by every replica that uses them (Redis).
    shared: Option<Box<dyn SharedBuckets>>,
}

impl Limiter {
    /// `per_route` requests per window per (token, route), five times that per token, counted
    /// in Redis when `shared` is given, else in this replica; `None` when `per_route` is 0.
    pub(crate) fn new(per_route: u32, shared: Option<&Arc<dyn SharedRateLimits>>) -> Option<Self> {
        Some(Self {
            local: RateLimits::new(per_route)?,
            shared: shared.map(|shared| shared.buckets(per_route)),
        })
    }

    /// Counts one request of the token whose `_id` is `token_id` on `route` (method and path
    /// pattern). Runs on actix's async thread: Redis is asked without blocking, within its
    /// timeout.
    ///
    /// # Errors
    /// [`Limited`] when either bucket is empty.
    pub(crate) async fn check(&self, token_id: &str, route: &str) -> Result<Remaining, Limited> {
        match &self.shared {
            Some(shared) => shared.check(token_id, route, &self.local).await,
            None => self.local.check(token_id, route),
        }
    }
}

impl Limited {
    fn at_least_one_second(mut self) -> Self {
        self.retry_after_secs = self.retry_after_secs.max(1);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_limit_then_429() {
        let limits = RateLimits::new(3).unwrap_or_else(|| unreachable!());
        for left in [2, 1, 0] {
            assert_eq!(limits.check("t", "GET /a").map(|r| r.route), Ok(left));
        }
        let limited = limits.check("t", "GET /a").unwrap_err();
        assert!(limited.retry_after_secs >= 1);
        // Another route and another token have their own buckets.
        assert!(limits.check("t", "GET /b").is_ok());
        assert!(limits.check("u", "GET /a").is_ok());
    }

    #[test]
    fn token_limit_is_five_times_the_route_limit() {
        let limits = RateLimits::new(1).unwrap_or_else(|| unreachable!());
        for route in 0..5 {
            assert!(limits.check("t", &format!("GET /{route}")).is_ok());
        }
        assert!(limits.check("t", "GET /5").is_err());
    }

    #[test]
    fn zero_turns_limiting_off() {
        assert!(RateLimits::new(0).is_none());
    }
}
