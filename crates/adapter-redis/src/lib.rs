//! Rate limits counted in Redis, shared by every replica that uses the same Redis
//! (`--rate-limit-redis-url`).
//!
//! The buckets are the HTTP adapter's ([`adapter_http::limits`], whose [`SharedRateLimits`]
//! this implements): per (token, route) and per token,
//! refilled over the same 10-second window, as GCRA (a token bucket kept as one timestamp per
//! key). One Lua script counts a request against both keys atomically, in one round trip, on
//! Redis's clock (so replicas whose clocks differ still agree), and answers what the headers
//! need. Keys name the token by its `_id`, never its secret, and expire when their bucket is
//! full again, so Redis holds a key only for a token that made a request in the last window.
//!
//! Redis is a dependency the service must not fall over with: each call has a short timeout,
//! and a replica whose call fails or times out counts that request in its own memory (as
//! without Redis), asks Redis again at most once a second until it answers, and warns at most
//! once a minute. While Redis is away the limit is per replica again (N replicas allow N times
//! it); nothing is refused for Redis's sake.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use actix_web::rt::time::timeout;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use adapter_http::limits::{
    self, Limited, RateLimits, Remaining, SharedBuckets, SharedRateLimits, WINDOW,
};

/// How long a request waits for Redis before it is counted by this replica alone.
pub const REDIS_TIMEOUT: Duration = Duration::from_millis(100);

/// What Redis keys start with unless told otherwise.
pub const DEFAULT_KEY_PREFIX: &str = "flagsvc:rl:";

/// How long a replica counts on its own after Redis failed before it asks Redis again: one
/// request then tries, the others keep counting locally, so a Redis that does not answer costs
/// at most one request a second its timeout.
const RETRY_INTERVAL_MS: u64 = 1_000;

/// At most one warning per this interval while Redis fails (not one per request).
const WARN_INTERVAL_MS: u64 = 60_000;

/// How long a connection to Redis may take to open: past the request's own timeout, so a slow
/// connect still completes in the background for the requests after it.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Counts one request against both buckets, atomically: either both take it or neither does.
///
/// KEYS[1]: the token's bucket, KEYS[2]: the token's bucket on the route.
/// ARGV[1]: the window in microseconds; ARGV[2]: the token's limit; ARGV[3]: the route's limit.
/// A key holds its bucket's theoretical arrival time (TAT, microseconds on Redis's clock): the
/// bucket is full when it is in the past (or the key is gone), empty when it is a whole window
/// ahead.
///
/// Answers {taken (1 or 0), left on the route, left for the token, ms}: `ms` is, when taken,
/// the time until both buckets are full again, else the time until the request would be taken.
/// When the token's bucket refuses, both counts are 0 (as the local limiter says).
const SCRIPT: &str = r"
local window = tonumber(ARGV[1])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])

local function bucket(key, limit)
  local interval = math.max(math.floor(window / limit), 1)
  local span = interval * limit
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  local after = tat + interval
  local b = { after = after, wait = 0, left = 0 }
  if after - now > span then
    b.wait = after - now - span
  else
    b.left = math.floor((span - (after - now)) / interval)
  end
  -- What is left without this request: what a refused request leaves.
  b.spare = math.floor((span - (tat - now)) / interval)
  return b
end

local function ms(us) return math.ceil(us / 1000) end

local token = bucket(KEYS[1], tonumber(ARGV[2]))
local route = bucket(KEYS[2], tonumber(ARGV[3]))
if token.wait > 0 or route.wait > 0 then
  local token_left = 0
  if token.wait == 0 then token_left = token.spare end
  return { 0, 0, token_left, ms(math.max(token.wait, route.wait)) }
end
-- '%.0f': a TAT has 16 digits, more than Lua's default number format keeps.
redis.call('SET', KEYS[1], string.format('%.0f', token.after), 'PX', math.max(ms(token.after - now), 1))
redis.call('SET', KEYS[2], string.format('%.0f', route.after), 'PX', math.max(ms(route.after - now), 1))
return { 1, route.left, token.left, ms(math.max(token.after, route.after) - now) }
";

/// What can go wrong with shared rate limits.
#[derive(Debug, thiserror::Error)]
pub enum RedisLimitError {
    /// The URL is not one the Redis client reads.
    #[error(
        "not a Redis URL: expected redis://[[user]:password@]host[:port][/db] \
         (or unix:///path/to/socket; TLS (rediss://) is not supported)"
    )]
    InvalidUrl(#[source] redis::RedisError),
    /// Redis did not answer in time.
    #[error("Redis did not answer within {} ms", .0.as_millis())]
    Timeout(Duration),
    /// Redis could not be reached or answered with an error.
    #[error("Redis failed")]
    Redis(#[source] redis::RedisError),
    /// The client could not be set up to talk to Redis.
    #[error("cannot set up the connection to Redis: {0}")]
    Connection(String),
    /// The rate-limit script answered something it never answers.
    #[error("unexpected answer from the rate-limit script: {0}")]
    UnexpectedReply(String),
}

impl RedisLimitError {
    /// The error and its causes on one line, for a log (a cause the text already says, as the
    /// Redis client's errors repeat their I/O error, is left out).
    pub fn describe(&self) -> String {
        let mut text = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            let said = cause.to_string();
            if !text.contains(&said) {
                text.push_str(": ");
                text.push_str(&said);
            }
            source = cause.source();
        }
        text
    }
}

/// Shared rate limits: where Redis is, and how its keys are named.
///
/// Build it with [`RedisRateLimits::new`] (which checks the URL); put it in
/// [`crate::HttpConfig::rate_limit_redis`].
#[derive(Clone)]
pub struct RedisRateLimits {
    client: redis::Client,
    /// The URL as given, only to compare configurations: it may hold a password, so it is
    /// never shown.
    url: String,
    key_prefix: String,
    timeout: Duration,
}

impl PartialEq for RedisRateLimits {
    fn eq(&self, other: &Self) -> bool {
        self.url == other.url
            && self.key_prefix == other.key_prefix
            && self.timeout == other.timeout
    }
}

impl Eq for RedisRateLimits {}

impl std::fmt::Debug for RedisRateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisRateLimits")
            .field("address", &self.address())
            .field("key_prefix", &self.key_prefix)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl RedisRateLimits {
    /// Shared rate limits in the Redis at `url` (`redis://[[user]:password@]host[:port][/db]`),
    /// with keys under [`DEFAULT_KEY_PREFIX`] and calls limited to [`REDIS_TIMEOUT`]. Nothing
    /// is connected yet.
    ///
    /// # Errors
    /// [`RedisLimitError::InvalidUrl`] for a URL the Redis client cannot read.
    ///
    /// ```
    /// use adapter_redis::RedisRateLimits;
    /// assert!(RedisRateLimits::new("redis://127.0.0.1:6379/2").is_ok());
    /// assert!(RedisRateLimits::new("127.0.0.1:6379").is_err());
    /// ```
    pub fn new(url: &str) -> Result<Self, RedisLimitError> {
        let client = redis::Client::open(url).map_err(RedisLimitError::InvalidUrl)?;
        Ok(Self {
            client,
            url: url.to_owned(),
            key_prefix: DEFAULT_KEY_PREFIX.to_owned(),
            timeout: REDIS_TIMEOUT,
        })
    }

    /// The same with keys under `prefix` (so that services, or test runs, sharing a Redis keep
    /// their counts apart).
    #[must_use]
    pub fn with_key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }

    /// The same, with each call to Redis limited to `timeout` (past it, the request is counted
    /// by the replica alone).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// What Redis keys start with.
    pub fn key_prefix(&self) -> &str {
        &self.key_prefix
    }

    /// Where Redis is, for logs: address and database, without credentials.
    pub fn address(&self) -> String {
        let info = self.client.get_connection_info();
        format!("{}/{}", info.addr(), info.redis_settings().db())
    }

    /// Connects to Redis and loads the rate-limit script, within `within`: whether this Redis
    /// can count (reachable, the credentials work, scripts are allowed). The connection is
    /// closed afterwards.
    ///
    /// # Errors
    /// [`RedisLimitError::Timeout`] or [`RedisLimitError::Redis`] when it cannot.
    pub async fn ping(&self, within: Duration) -> Result<(), RedisLimitError> {
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(within))
            .set_response_timeout(Some(within));
        let attempt = async {
            let mut connection = self
                .client
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            redis::Script::new(SCRIPT)
                .prepare_invoke()
                .load_async(&mut connection)
                .await
        };
        match timeout(within, attempt).await {
            Ok(Ok(_sha)) => Ok(()),
            Ok(Err(err)) => Err(RedisLimitError::Redis(err)),
            Err(_) => Err(RedisLimitError::Timeout(within)),
        }
    }
}

/// The two keys of a request: the token's bucket and the token's bucket on the route.
///
/// Both carry the token's `_id` as a hash tag (`{...}`), so that on a Redis Cluster they live
/// in one slot, as a script that touches both needs; the route is its pattern
/// (the method and the route's path template, `{projectKey}` as written), so keys are bounded by tokens times
/// routes, whatever paths are requested.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Keys {
    token: String,
    route: String,
}

impl Keys {
    fn new(prefix: &str, token_id: &str, route: &str) -> Self {
        let token = format!("{prefix}{{{token_id}}}:token");
        let route = format!("{prefix}{{{token_id}}}:route:{route}");
        Self { token, route }
    }
}

/// The script's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Answer {
    taken: bool,
    route_left: u32,
    token_left: u32,
    /// Until both buckets are full again (taken), or until the request would be taken.
    ms: u64,
}

impl Answer {
    /// Reads the script's reply.
    ///
    /// # Errors
    /// A reply of another shape (a script of another version under the same name, a proxy
    /// that answers something else): the request is then counted locally.
    fn read(reply: &[i64]) -> Result<Self, RedisLimitError> {
        let unexpected = || RedisLimitError::UnexpectedReply(format!("{reply:?}"));
        let &[taken, route_left, token_left, ms] = reply else {
            return Err(unexpected());
        };
        let taken = match taken {
            1 => true,
            0 => false,
            _ => return Err(unexpected()),
        };
        Ok(Self {
            taken,
            route_left: u32::try_from(route_left).map_err(|_| unexpected())?,
            token_left: u32::try_from(token_left).map_err(|_| unexpected())?,
            ms: u64::try_from(ms).map_err(|_| unexpected())?,
        })
    }

    /// The decision, as the local limiter states it, at `now` (epoch ms on this replica's
    /// clock: the reset is this replica's now plus what Redis said is left).
    fn decision(self, now: i64) -> Result<Remaining, Limited> {
        let wait = Duration::from_millis(self.ms);
        let remaining = Remaining {
            route: self.route_left,
            global: self.token_left,
            reset_ms: now.saturating_add(i64::try_from(self.ms).unwrap_or(i64::MAX)),
        };
        if self.taken {
            Ok(remaining)
        } else {
            Err(limits::limited(wait, now, remaining))
        }
    }
}

/// Whether Redis is to be asked, and when to say it is not answering.
#[derive(Debug)]
struct Health {
    started: Instant,
    /// 0 while Redis answers; else when (ms since `started`, at least 1) to ask it again.
    retry_at: AtomicU64,
    /// When the last warning was logged (ms since `started`), `u64::MAX` before the first.
    warned_at: AtomicU64,
    /// Requests counted locally since the last warning.
    counted_locally: AtomicU64,
}

impl Health {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            retry_at: AtomicU64::new(0),
            warned_at: AtomicU64::new(u64::MAX),
            counted_locally: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether this request asks Redis: always while it answers; after a failure, one request
    /// once the retry interval has passed (it pushes the next retry on, so that the others do
    /// not all wait on a Redis that may still not answer).
    fn ask_redis(&self) -> bool {
        let retry_at = self.retry_at.load(Ordering::Relaxed);
        if retry_at == 0 {
            return true;
        }
        let now = self.now();
        let asks = now >= retry_at
            && self
                .retry_at
                .compare_exchange(
                    retry_at,
                    now.saturating_add(RETRY_INTERVAL_MS).max(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok();
        if !asks {
            self.counted_locally.fetch_add(1, Ordering::Relaxed);
        }
        asks
    }

    /// Redis answered: say so if it had not.
    fn answered(&self, address: &str) {
        // Read first: while Redis answers, no request writes this shared word.
        if self.retry_at.load(Ordering::Relaxed) != 0
            && self.retry_at.swap(0, Ordering::Relaxed) != 0
        {
            self.counted_locally.store(0, Ordering::Relaxed);
            self.warned_at.store(u64::MAX, Ordering::Relaxed);
            log::info!("shared rate limits: Redis at {address} answers again; counting there");
        }
    }

    /// Redis failed this request: count locally for a while, and warn unless warned recently.
    fn failed(&self, address: &str, err: &RedisLimitError) {
        let now = self.now();
        self.retry_at.store(
            now.saturating_add(RETRY_INTERVAL_MS).max(1),
            Ordering::Relaxed,
        );
        let local = self.counted_locally.fetch_add(1, Ordering::Relaxed) + 1;
        let warned_at = self.warned_at.load(Ordering::Relaxed);
        let due = warned_at == u64::MAX || now.saturating_sub(warned_at) >= WARN_INTERVAL_MS;
        if due
            && self
                .warned_at
                .compare_exchange(warned_at, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.counted_locally.store(0, Ordering::Relaxed);
            log::warn!(
                "shared rate limits: Redis at {address} failed ({}); this replica counts requests \
                 on its own (limits are per replica) and asks Redis again every {} ms; {local} \
                 request(s) counted locally since the last warning",
                err.describe(),
                RETRY_INTERVAL_MS
            );
        }
    }
}

/// Rate limits counted in Redis.
pub struct SharedLimits {
    config: RedisRateLimits,
    /// Made on first use, on the async runtime the first request runs on (the connection's
    /// background task needs one), and made anew after it failed.
    connection: Mutex<Option<Slot>>,
    generations: AtomicU64,
    script: redis::Script,
    route_limit: u32,
    token_limit: u32,
    window_us: u64,
    health: Health,
    address: String,
}

impl std::fmt::Debug for SharedLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedLimits")
            .field("config", &self.config)
            .field("route_limit", &self.route_limit)
            .finish_non_exhaustive()
    }
}

impl SharedLimits {
    /// `route_limit` requests per window per (token, route), five times that per token,
    /// counted in `config`'s Redis.
    fn new(config: RedisRateLimits, route_limit: u32) -> Self {
        let address = config.address();
        Self {
            config,
            connection: Mutex::new(None),
            generations: AtomicU64::new(0),
            script: redis::Script::new(SCRIPT),
            route_limit,
            token_limit: limits::per_token(route_limit),
            window_us: u64::try_from(WINDOW.as_micros()).unwrap_or(u64::MAX),
            health: Health::new(),
            address,
        }
    }

    /// Counts one request in Redis, or (when Redis fails or is slow) in this replica's
    /// `fallback`.
    async fn check_here(
        &self,
        token_id: &str,
        route: &str,
        fallback: &RateLimits,
    ) -> Result<Remaining, Limited> {
        if self.health.ask_redis() {
            match self.count(token_id, route).await {
                Ok(answer) => {
                    self.health.answered(&self.address);
                    return answer.decision(limits::now_ms());
                }
                Err(err) => self.health.failed(&self.address, &err),
            }
        }
        fallback.check(token_id, route)
    }

    /// The connection to ask Redis on, and its generation.
    fn connection(&self) -> Result<(ConnectionManager, u64), RedisLimitError> {
        let mut slot = self
            .connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(current) = slot.as_ref() {
            return Ok((current.manager.clone(), current.generation));
        }
        let config = ConnectionManagerConfig::new()
            // No retries inside the manager: a request waits at most the timeout anyway, and
            // a failed connection is replaced by the next request that asks Redis.
            .set_number_of_retries(0)
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            // A response that never comes fails its call rather than holding its place on the
            // connection forever (requests gave up on it long before).
            .set_response_timeout(Some(CONNECT_TIMEOUT));
        let manager = ConnectionManager::new_lazy_with_config(self.config.client.clone(), config)
            .map_err(|err| RedisLimitError::Connection(err.to_string()))?;
        // Connect in the background (a task on actix's runtime, which every request runs on):
        // a connection slower to open than a request's timeout still opens, for the requests
        // after it (a lazy connection only makes progress while someone waits on it).
        let mut opening = manager.clone();
        actix_web::rt::spawn(async move {
            let _: redis::RedisResult<()> = redis::cmd("PING").query_async(&mut opening).await;
        });
        let generation = self.generations.fetch_add(1, Ordering::Relaxed);
        *slot = Some(Slot {
            manager: manager.clone(),
            generation,
            made: Instant::now(),
        });
        Ok((manager, generation))
    }

    /// Drops the connection of `generation` after it failed, so that the next request that asks
    /// Redis makes a new one. The manager reconnects by itself only after some I/O errors; a
    /// refused handshake (wrong password) or a connection that went silent would be used
    /// forever. A timeout drops a connection only once it had the time to open.
    fn drop_connection(&self, generation: u64, timed_out: bool) {
        let mut slot = self
            .connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let failed = slot.as_ref().is_some_and(|current| {
            current.generation == generation
                && (!timed_out || current.made.elapsed() >= CONNECT_TIMEOUT)
        });
        if failed {
            *slot = None;
        }
    }

    /// Runs the script within the timeout.
    async fn count(&self, token_id: &str, route: &str) -> Result<Answer, RedisLimitError> {
        let keys = Keys::new(&self.config.key_prefix, token_id, route);
        let (mut connection, generation) = self.connection()?;
        let mut invocation = self.script.key(&keys.token);
        invocation
            .key(&keys.route)
            .arg(self.window_us)
            .arg(self.token_limit)
            .arg(self.route_limit);
        match timeout(
            self.config.timeout,
            invocation.invoke_async::<Vec<i64>>(&mut connection),
        )
        .await
        {
            Ok(Ok(reply)) => Answer::read(&reply),
            Ok(Err(err)) => {
                self.drop_connection(generation, false);
                Err(RedisLimitError::Redis(err))
            }
            Err(_) => {
                self.drop_connection(generation, true);
                Err(RedisLimitError::Timeout(self.config.timeout))
            }
        }
    }
}

/// A connection to Redis and when it was made.
struct Slot {
    manager: ConnectionManager,
    generation: u64,
    made: Instant,
}

impl SharedRateLimits for RedisRateLimits {
    fn buckets(&self, route_limit: u32) -> Box<dyn SharedBuckets> {
        Box::new(SharedLimits::new(self.clone(), route_limit))
    }
}

impl SharedBuckets for SharedLimits {
    fn check<'a>(
        &'a self,
        token_id: &'a str,
        route: &'a str,
        fallback: &'a RateLimits,
    ) -> Pin<Box<dyn Future<Output = Result<Remaining, Limited>> + 'a>> {
        Box::pin(self.check_here(token_id, route, fallback))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_the_token_id_and_the_route_pattern() {
        let keys = Keys::new(
            "flagsvc:rl:",
            "65f0c0ffee0123456789abcd",
            "GET /api/v2/flags/{projectKey}",
        );
        assert_eq!(keys.token, "flagsvc:rl:{65f0c0ffee0123456789abcd}:token");
        assert_eq!(
            keys.route,
            "flagsvc:rl:{65f0c0ffee0123456789abcd}:route:GET /api/v2/flags/{projectKey}"
        );
        // One hash tag, first in the key: both keys live in one Redis Cluster slot.
        for key in [&keys.token, &keys.route] {
            let tag = key
                .split_once('{')
                .and_then(|(_, rest)| rest.split_once('}'));
            assert_eq!(tag.map(|(tag, _)| tag), Some("65f0c0ffee0123456789abcd"));
        }
        // Other tokens, routes and prefixes are other keys.
        assert_ne!(
            Keys::new("flagsvc:rl:", "a", "GET /x"),
            Keys::new("flagsvc:rl:", "b", "GET /x")
        );
        assert_ne!(
            Keys::new("flagsvc:rl:", "a", "GET /x").route,
            Keys::new("flagsvc:rl:", "a", "POST /x").route
        );
        assert!(Keys::new("other:", "a", "GET /x")
            .token
            .starts_with("other:"));
    }

    #[test]
    fn a_taken_request_says_what_is_left_and_when_all_is_back() {
        let answer = Answer::read(&[1, 3, 24, 4_000]).unwrap();
        assert_eq!(
            answer.decision(1_700_000_000_000),
            Ok(Remaining {
                route: 3,
                global: 24,
                reset_ms: 1_700_000_004_000
            })
        );
    }

    #[test]
    fn a_refused_request_says_when_to_retry_in_whole_seconds_at_least_one() {
        let now = 1_700_000_000_000;
        for (ms, secs) in [
            (0, 1),
            (1, 1),
            (999, 1),
            (1_000, 1),
            (1_001, 2),
            (9_500, 10),
        ] {
            let limited = Answer::read(&[0, 0, 7, ms])
                .unwrap()
                .decision(now)
                .unwrap_err();
            assert_eq!(limited.retry_after_secs, secs, "{ms} ms");
            assert_eq!(limited.reset_ms, now + ms);
            assert_eq!(
                limited.remaining,
                Remaining {
                    route: 0,
                    global: 7,
                    reset_ms: now + ms
                }
            );
        }
    }

    #[test]
    fn other_replies_are_errors() {
        for reply in [
            &[][..],
            &[1, 2, 3],
            &[1, 2, 3, 4, 5],
            &[2, 0, 0, 0],
            &[1, -1, 0, 0],
            &[1, 0, 0, -5],
            &[1, 0, i64::MAX, 0],
        ] {
            assert!(
                matches!(
                    Answer::read(reply),
                    Err(RedisLimitError::UnexpectedReply(_))
                ),
                "{reply:?}"
            );
        }
    }

    #[test]
    fn urls_are_checked_and_never_shown() {
        let config = RedisRateLimits::new("redis://user:s3cret@127.0.0.1:6380/3").unwrap();
        assert_eq!(config.address(), "127.0.0.1:6380/3");
        assert!(!format!("{config:?}").contains("s3cret"));
        assert_eq!(config.key_prefix(), DEFAULT_KEY_PREFIX);
        for url in [
            "",
            "127.0.0.1:6379",
            "http://127.0.0.1:6379",
            "redis://h/not-a-db",
        ] {
            let err = RedisRateLimits::new(url).unwrap_err();
            assert!(matches!(err, RedisLimitError::InvalidUrl(_)), "{url}");
            assert!(err.to_string().contains("redis://"), "{err}");
        }
    }

    #[test]
    fn warnings_are_rate_limited_too() {
        // Started a while ago, so that "the interval is over" can be set below.
        let health = Health {
            started: Instant::now() - Duration::from_secs(5),
            ..Health::new()
        };
        let err = RedisLimitError::Timeout(REDIS_TIMEOUT);
        assert!(health.ask_redis());
        health.failed("x", &err);
        let first_warning = health.warned_at.load(Ordering::Relaxed);
        assert_ne!(first_warning, u64::MAX, "the first failure warns");
        // Within the retry interval requests count locally without asking Redis.
        assert!(!health.ask_redis());
        health.failed("x", &err);
        assert_eq!(
            health.warned_at.load(Ordering::Relaxed),
            first_warning,
            "no second warning within the interval"
        );
        // Redis is asked again once the interval is over, by one request.
        health.retry_at.store(1, Ordering::Relaxed);
        assert!(health.ask_redis());
        assert!(!health.ask_redis());
        health.answered("x");
        assert!(health.ask_redis());
        assert_eq!(health.warned_at.load(Ordering::Relaxed), u64::MAX);
    }

    /// Redis for these tests: `FLAGSVC_TEST_REDIS_URL`, else 127.0.0.1:6379; `None` (the test
    /// says it is skipped) when it does not answer.
    async fn test_redis() -> Option<RedisRateLimits> {
        let url = std::env::var("FLAGSVC_TEST_REDIS_URL")
            .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
        let config = RedisRateLimits::new(&url)
            .unwrap()
            .with_key_prefix(format!("flagsvc-test:{}:", uuid::Uuid::new_v4().simple()))
            // Generous: a loaded test machine must not fall back by accident.
            .with_timeout(Duration::from_secs(2));
        match config.ping(Duration::from_secs(1)).await {
            Ok(()) => Some(config),
            Err(err) => {
                eprintln!(
                    "SKIPPED: this test needs Redis, and none answers at {} ({}); start one \
                     there or point FLAGSVC_TEST_REDIS_URL at one",
                    config.address(),
                    err.describe()
                );
                None
            }
        }
    }

    #[actix_web::test]
    async fn the_script_counts_both_buckets_and_expires_its_keys() {
        let Some(config) = test_redis().await else {
            return;
        };
        let limits = SharedLimits::new(config.clone(), 3);
        for left in [2, 1, 0] {
            let taken = limits.count("tok", "GET /a").await.unwrap();
            assert!(taken.taken);
            assert_eq!(taken.route_left, left);
            // Both full again after the requests made: about a third of the window each.
            assert!(
                taken.ms > 3_000 * u64::from(3 - left) && taken.ms <= 10_000,
                "{taken:?}"
            );
        }
        let refused = limits.count("tok", "GET /a").await.unwrap();
        assert!(!refused.taken);
        assert_eq!(refused.route_left, 0);
        assert_eq!(refused.token_left, 12, "a refused request takes nothing");
        assert!(refused.ms > 0 && refused.ms <= 3_334, "{refused:?}");
        // Other routes and tokens have buckets of their own; the token's is 5 times larger.
        for route in ["GET /b", "GET /c", "GET /d", "GET /e"] {
            for _ in 0..3 {
                assert!(limits.count("tok", route).await.unwrap().taken);
            }
        }
        let over = limits.count("tok", "GET /f").await.unwrap();
        assert_eq!(
            (over.taken, over.route_left, over.token_left),
            (false, 0, 0)
        );
        assert!(limits.count("other", "GET /a").await.unwrap().taken);

        // Every key expires within the window.
        let client = config.client.clone();
        let mut connection = client.get_multiplexed_async_connection().await.unwrap();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}*", config.key_prefix()))
            .query_async(&mut connection)
            .await
            .unwrap();
        // "tok": its own and five routes'; "other": its own and one route's.
        assert_eq!(keys.len(), 1 + 5 + 1 + 1, "{keys:?}");
        for key in keys {
            let ttl: i64 = redis::cmd("PTTL")
                .arg(&key)
                .query_async(&mut connection)
                .await
                .unwrap();
            assert!(ttl > 0 && ttl <= 10_000, "{key}: {ttl} ms");
        }
    }

    #[actix_web::test]
    async fn through_the_limiter_the_answer_is_the_local_one_in_form() {
        let Some(config) = test_redis().await else {
            return;
        };
        let limits = SharedLimits::new(config, 2);
        let local = RateLimits::new(2).unwrap();
        let first = limits.check("tok", "GET /a", &local).await.unwrap();
        assert_eq!((first.route, first.global), (1, 9));
        assert!(first.reset_ms > limits::now_ms());
        limits.check("tok", "GET /a", &local).await.unwrap();
        let limited = limits.check("tok", "GET /a", &local).await.unwrap_err();
        assert!(limited.retry_after_secs >= 1);
        assert_eq!(limited.remaining.route, 0);
        assert_eq!(limited.remaining.global, 8);
        assert_eq!(limited.remaining.reset_ms, limited.reset_ms);
        assert_eq!(
            limits.health.retry_at.load(Ordering::Relaxed),
            0,
            "Redis answered"
        );
    }
}
