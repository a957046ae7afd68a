//! Configuration and wiring of the `flagsvc` binary: which store, which address, which limits.

use std::sync::Arc;
use std::time::Duration;

use adapter_redis::RedisRateLimits;
use anyhow::Context;
use ports::Store;

pub mod cli;

/// The API's throttle of failed authentications, which the console's failed sign-ins feed and
/// obey too: guessing tokens is as slow through either door.
#[derive(Debug, Clone)]
pub struct SharedAuthThrottle(pub actix_web::web::Data<adapter_http::AppState>);

impl adapter_web::SignInThrottle for SharedAuthThrottle {
    fn blocked(&self, req: &actix_web::HttpRequest) -> Option<Duration> {
        self.0.authentication_blocked(req)
    }

    fn failed(&self, req: &actix_web::HttpRequest) {
        self.0.record_failed_authentication(req);
    }
}

/// The API's limits as the SDK routes see them: their failed authentications count with the
/// API's (per client address), and their requests in the API's rate limiter (per environment,
/// with `--sdk-rate-limit`).
#[derive(Debug, Clone)]
pub struct SdkGate(pub actix_web::web::Data<adapter_http::AppState>);

impl adapter_sdk::Gate for SdkGate {
    fn blocked(&self, req: &actix_web::HttpRequest) -> Option<Duration> {
        self.0.authentication_blocked(req)
    }

    fn failed(&self, req: &actix_web::HttpRequest) {
        self.0.record_failed_authentication(req);
    }

    fn count<'a>(
        &'a self,
        client: &'a str,
        route: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<Duration>> + 'a>> {
        Box::pin(self.0.count_sdk_request(client, route))
    }
}

/// How long start-up waits for Redis to answer before it starts without it.
pub const REDIS_STARTUP_TIMEOUT: Duration = Duration::from_secs(2);

/// Where the data lives, from `--database-url` / `DATABASE_URL`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// `postgres://...` or `postgresql://...`.
    Postgres(String),
    /// A file path, or `sqlite://path`.
    Sqlite(String),
}

impl StoreUrl {
    /// Reads a database URL: `postgres://` selects PostgreSQL; anything else is a SQLite path.
    ///
    /// ```
    /// use app::StoreUrl;
    /// assert_eq!(StoreUrl::parse("flagsvc.db"), StoreUrl::Sqlite("flagsvc.db".into()));
    /// assert_eq!(StoreUrl::parse("sqlite:///tmp/f.db"), StoreUrl::Sqlite("/tmp/f.db".into()));
    /// assert!(matches!(StoreUrl::parse("postgres://localhost/db"), StoreUrl::Postgres(_)));
    /// ```
    pub fn parse(url: &str) -> Self {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            StoreUrl::Postgres(url.to_owned())
        } else {
            let path = url
                .strip_prefix("sqlite://")
                .or_else(|| url.strip_prefix("sqlite:"))
                .unwrap_or(url);
            StoreUrl::Sqlite(path.to_owned())
        }
    }

    /// Applies pending migrations; returns the versions applied.
    ///
    /// # Errors
    /// When the database cannot be reached, opened or migrated.
    pub fn migrate(&self) -> anyhow::Result<Vec<String>> {
        match self {
            StoreUrl::Postgres(url) => {
                adapter_postgres::migrate(&adapter_postgres::with_connect_timeout(url))
                    .context("migrating the PostgreSQL database")
            }
            StoreUrl::Sqlite(path) => adapter_sqlite::migrate(path)
                .with_context(|| format!("migrating the SQLite database {path}")),
        }
    }

    /// Opens the store with up to `pool_size` connections, migrating it first when `migrate`.
    ///
    /// # Errors
    /// When the database cannot be reached, opened or migrated.
    pub fn open(&self, pool_size: u32, migrate: bool) -> anyhow::Result<Arc<dyn Store>> {
        if migrate {
            let applied = self.migrate()?;
            if !applied.is_empty() {
                log::info!("applied migrations {}", applied.join(", "));
            }
        }
        Ok(match self {
            StoreUrl::Postgres(url) => Arc::new(
                adapter_postgres::open(url, pool_size).context("opening the PostgreSQL store")?,
            ),
            StoreUrl::Sqlite(path) => Arc::new(
                adapter_sqlite::open_unmigrated(path, pool_size)
                    .with_context(|| format!("opening the SQLite store {path}"))?,
            ),
        })
    }
}

/// The shared rate limits of `--rate-limit-redis-url`: `None` without a URL, or when limiting
/// is off (`rate_limit` 0, which is then warned about). An unreachable Redis is a warning, not
/// an error: the service starts, each replica counting on its own, and uses Redis once it
/// answers (so replicas need not wait for Redis to start).
///
/// # Errors
/// A URL the Redis client cannot read: a configuration mistake, better refused at start-up than
/// served per replica forever.
pub async fn shared_rate_limits(
    url: Option<&str>,
    rate_limit: u32,
) -> anyhow::Result<Option<RedisRateLimits>> {
    let Some(url) = url else {
        return Ok(None);
    };
    let redis = RedisRateLimits::new(url).context("reading --rate-limit-redis-url")?;
    if rate_limit == 0 {
        log::warn!("--rate-limit-redis-url is not used: --rate-limit 0 turns rate limiting off");
        return Ok(None);
    }
    match redis.ping(REDIS_STARTUP_TIMEOUT).await {
        Ok(()) => log::info!(
            "rate limits are counted in Redis at {}, shared with every replica that uses it",
            redis.address()
        ),
        Err(err) => log::warn!(
            "Redis at {} for --rate-limit-redis-url does not answer ({}); starting anyway: \
             this replica counts rate limits on its own until Redis answers",
            redis.address(),
            err.describe()
        ),
    }
    Ok(Some(redis))
}

/// Folds the metrics' histograms between scrapes (`adapter_http::run_metrics_upkeep`), as a
/// background job.
#[derive(Debug, Clone, Copy)]
pub struct MetricsUpkeep;

impl background::Job for MetricsUpkeep {
    fn name(&self) -> &'static str {
        "metrics upkeep"
    }

    fn run_due(&self, _batch: u32) -> Result<u32, String> {
        adapter_http::run_metrics_upkeep();
        Ok(0)
    }
}
