//! Connections to either engine, and their pool.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use diesel::connection::SimpleConnection;
use diesel::r2d2::{ManageConnection, Pool, R2D2Connection};
use diesel::{Connection, PgConnection, SqliteConnection};

/// A connection to either engine.
#[derive(diesel::MultiConnection)]
pub enum DbConnection {
    /// PostgreSQL.
    Pg(PgConnection),
    /// SQLite.
    Sqlite(SqliteConnection),
}

impl std::fmt::Debug for DbConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DbConnection::Pg(_) => "DbConnection::Pg",
            DbConnection::Sqlite(_) => "DbConnection::Sqlite",
        })
    }
}

/// Which engine a pool connects to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// PostgreSQL, by `postgres://` URL.
    Postgres,
    /// SQLite, by file path.
    Sqlite,
}

/// Opens connections of one engine for the pool, running `setup` (e.g. SQLite pragmas) on each.
///
/// Unlike diesel's generic manager, it never guesses the engine from the URL: a PostgreSQL URL
/// whose server is down must fail, not open a SQLite file of that name.
#[derive(Debug, Clone)]
pub struct DbConnectionManager {
    url: String,
    engine: Engine,
    setup: &'static str,
    /// How many times a connection was found closed by the server: a connection opened or
    /// checked before the last such loss is checked again before its next use.
    losses: Arc<AtomicU64>,
}

impl DbConnectionManager {
    /// A manager for `url` on `engine`; `setup` is SQL run on every new connection.
    pub fn new(url: impl Into<String>, engine: Engine, setup: &'static str) -> Self {
        Self {
            url: url.into(),
            engine,
            setup,
            losses: Arc::new(AtomicU64::new(0)),
        }
    }
}

impl ManageConnection for DbConnectionManager {
    type Connection = PoolConnection;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<PoolConnection, Self::Error> {
        let mut conn = match self.engine {
            Engine::Postgres => PgConnection::establish(&self.url).map(DbConnection::Pg),
            Engine::Sqlite => SqliteConnection::establish(&self.url).map(DbConnection::Sqlite),
        }
        .map_err(diesel::r2d2::Error::ConnectionError)?;
        if !self.setup.is_empty() {
            conn.batch_execute(self.setup)
                .map_err(diesel::r2d2::Error::QueryError)?;
        }
        Ok(PoolConnection {
            conn,
            lost: false,
            checked_at: self.losses.load(Ordering::Acquire),
        })
    }

    fn is_valid(&self, conn: &mut PoolConnection) -> Result<(), Self::Error> {
        conn.conn.ping().map_err(diesel::r2d2::Error::QueryError)
    }

    fn has_broken(&self, conn: &mut PoolConnection) -> bool {
        conn.lost || conn.conn.is_broken()
    }
}

/// A pooled connection, and whether it was found dead (then the pool drops it instead of handing
/// it out again).
#[derive(Debug)]
pub struct PoolConnection {
    pub(crate) conn: DbConnection,
    pub(crate) lost: bool,
    /// The number of losses when this connection was opened or last checked.
    pub(crate) checked_at: u64,
}

/// A pool of connections, and the count of connections found closed by the server.
#[derive(Debug)]
pub struct DbPool {
    pub(crate) pool: Pool<DbConnectionManager>,
    pub(crate) losses: Arc<AtomicU64>,
    /// Opens the readiness probe's connection (the pool's settings, outside the pool).
    pub(crate) prober: DbConnectionManager,
    /// The readiness probe's connection, kept between probes (none after a failure).
    pub(crate) probe: Mutex<Option<PoolConnection>>,
}

impl DbPool {
    /// Records how long a connection took to get, and the pool's size and idle connections now
    /// (`/metrics`: `flagsvc_db_pool_*`).
    pub(crate) fn observe(&self, waited: std::time::Duration) {
        let state = self.pool.state();
        metrics::histogram!("flagsvc_db_pool_wait_seconds").record(waited.as_secs_f64());
        metrics::gauge!("flagsvc_db_pool_connections").set(f64::from(state.connections));
        metrics::gauge!("flagsvc_db_pool_idle_connections").set(f64::from(state.idle_connections));
        metrics::gauge!("flagsvc_db_pool_max_connections").set(f64::from(self.pool.max_size()));
    }
}

/// Builds the pool over `manager`: up to `max_size` connections, a request waits at most
/// `connection_timeout` for one. Connections are not pinged when handed out (that would cost
/// every transaction a round trip): a connection found dead by a failing statement is dropped,
/// and the work retried on another where that is safe (see [`SqlStore`]).
///
/// # Errors
/// When the first connection cannot be opened.
pub fn build_pool(
    manager: DbConnectionManager,
    max_size: u32,
    connection_timeout: std::time::Duration,
) -> Result<DbPool, diesel::r2d2::PoolError> {
    let losses = Arc::clone(&manager.losses);
    let prober = manager.clone();
    let pool = Pool::builder()
        .max_size(max_size.max(1))
        .connection_timeout(connection_timeout)
        .test_on_check_out(false)
        .build(manager)?;
    Ok(DbPool {
        pool,
        losses,
        prober,
        probe: Mutex::new(None),
    })
}
