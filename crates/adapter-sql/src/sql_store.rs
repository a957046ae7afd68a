//! [`SqlStore`]: transactions over the pool, with retries where they are safe.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use diesel::r2d2::{ManageConnection, PooledConnection, R2D2Connection};
use diesel::result::Error as DieselError;
use diesel::Connection;
use diesel_migrations::MigrationHarness;
use ports::{Store, StoreError, StoreResult, UnitOfWork};

use crate::{
    feed, map_error, DbConnection, DbConnectionManager, DbPool, Engine, PoolConnection,
    SqlRepository, MIGRATIONS,
};

/// A [`Store`] over a connection pool.
///
/// On PostgreSQL a read runs its statements without `BEGIN`/`COMMIT`: at the default isolation
/// level (read committed) every statement of a transaction takes its own snapshot anyway, so the
/// explicit transaction bought no consistency and cost two round trips. On SQLite a read stays in
/// one transaction (one snapshot, and no round trips to save). Writes always run in one
/// transaction.
pub struct SqlStore {
    pool: DbPool,
    /// SQLite allows one writer at a time: serialising write transactions in the process turns
    /// would-be `database is locked` errors into a short wait.
    write_lock: Option<Mutex<()>>,
    /// Whether reads run inside a transaction.
    reads_in_transaction: bool,
    /// Told of what write transactions announce, once they commit, and (through the feed) of
    /// other processes' commits.
    listeners: Arc<ports::Listeners>,
    /// Where other processes' commits are heard (PostgreSQL: `LISTEN`, see [`feed`]).
    feed_url: Option<String>,
    /// Set once the feed was started: one feed (one connection) serves every subscriber.
    feed_started: std::sync::Once,
}

impl std::fmt::Debug for SqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore")
            .field("serialised_writes", &self.write_lock.is_some())
            .field("reads_in_transaction", &self.reads_in_transaction)
            .finish()
    }
}

/// What a unit of work may do, and so how it runs and when it may run again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

impl SqlStore {
    /// A store over `pool` of `engine`: SQLite serialises write transactions in the process and
    /// reads in a transaction; PostgreSQL does neither (see [`SqlStore`]).
    pub fn new(pool: DbPool, engine: Engine) -> Self {
        Self {
            pool,
            write_lock: (engine == Engine::Sqlite).then(|| Mutex::new(())),
            reads_in_transaction: engine == Engine::Sqlite,
            listeners: Arc::new(ports::Listeners::default()),
            feed_url: None,
            feed_started: std::sync::Once::new(),
        }
    }

    /// The same store, telling its subscribers of other processes' commits too, as heard on
    /// the PostgreSQL database at `url` (see [`feed`]).
    pub fn with_change_feed(mut self, url: impl Into<String>) -> Self {
        self.feed_url = Some(url.into());
        self
    }

    /// A connection from the pool. Connections are not pinged before use, except after a
    /// connection was found closed by the server: then the others opened before are likely
    /// closed too, and each is checked once at its next use (a dead one is dropped).
    fn connection(&self) -> StoreResult<PooledConnection<DbConnectionManager>> {
        let losses = &self.pool.losses;
        // Every pooled connection at most once, then a new one.
        for _ in 0..=self.pool.pool.max_size() {
            let asked = std::time::Instant::now();
            let pooled = self.pool.pool.get();
            self.pool.observe(asked.elapsed());
            let mut pooled = pooled.map_err(|e| StoreError::Unavailable(e.to_string()))?;
            let now = losses.load(Ordering::Acquire);
            if pooled.checked_at == now {
                return Ok(pooled);
            }
            if pooled.conn.ping().is_ok() {
                pooled.checked_at = now;
                return Ok(pooled);
            }
            pooled.lost = true;
        }
        Err(StoreError::Unavailable(
            "no live connection to the database".into(),
        ))
    }

    /// Drops `pooled` from the pool and has every connection opened before checked at its next
    /// use.
    fn lose(&self, pooled: &mut PoolConnection) {
        pooled.lost = true;
        self.pool.losses.fetch_add(1, Ordering::AcqRel);
    }

    /// Runs `work` once on a pooled connection; a connection the server closed meanwhile (a
    /// restart, an idle timeout) is dropped and the work run once more on a new one when nothing
    /// can have been written: a read, or a write whose `BEGIN` failed.
    fn run(&self, access: Access, work: &mut UnitOfWork<'_>) -> StoreResult<()> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let mut pooled = self.connection()?;
            let mut started = false;
            let in_transaction = access == Access::Write || self.reads_in_transaction;
            // What the work announced, once it succeeded (empty when it failed).
            let mut announced: Vec<ports::Changed> = Vec::new();
            let result = if in_transaction {
                pooled
                    .conn
                    .transaction::<(), TxError, _>(|conn| {
                        started = true;
                        let mut repo = SqlRepository::new(conn);
                        work(&mut repo).map_err(TxError::Store)?;
                        announced = repo.finish().map_err(TxError::Store)?;
                        Ok(())
                    })
                    .map_err(|TxError::Store(err)| err)
            } else {
                started = true;
                let mut repo = SqlRepository::new(&mut pooled.conn);
                work(&mut repo).and_then(|()| {
                    announced = repo.finish()?;
                    Ok(())
                })
            };
            // Before the writer is answered: after a commit, and after a commit that failed,
            // since whether it took effect is then unknown (forgetting is always safe).
            self.listeners.tell(&announced);
            // `Aborted` is the unit of work's own error, which may stem from a failed statement.
            if !matches!(
                result,
                Err(StoreError::Unavailable(_) | StoreError::Other(_) | StoreError::Aborted)
            ) {
                return result;
            }
            // A statement timeout, a bug, corrupt data or a refusal fail on a live connection:
            // only a failing ping tells that the connection itself is gone (the server
            // restarted, the database was dropped, an idle connection was cut).
            if pooled.conn.ping().is_ok() {
                return result;
            }
            self.lose(&mut pooled);
            let nothing_written = access == Access::Read || !started;
            if !nothing_written || attempts >= 2 {
                return Err(StoreError::Unavailable(
                    "the connection to the database was lost".into(),
                ));
            }
        }
    }
}

impl Store for SqlStore {
    fn read(&self, work: &mut UnitOfWork<'_>) -> StoreResult<()> {
        self.run(Access::Read, work)
    }

    fn write(&self, work: &mut UnitOfWork<'_>) -> StoreResult<()> {
        // A poisoned lock only means another writer panicked; the database rolled it back.
        let _guard = self
            .write_lock
            .as_ref()
            .map(|lock| lock.lock().unwrap_or_else(|p| p.into_inner()));
        self.run(Access::Write, work)
    }

    fn subscribe(&self, listener: std::sync::Weak<dyn ports::ChangeListener>) -> bool {
        self.listeners.add(listener);
        let Some(url) = &self.feed_url else {
            return false;
        };
        // A subscriber added after the feed started has not been told `caught_up` yet, which
        // the contract tells it to read as "other processes' commits may go unheard": what it
        // keeps from now on is vouched for at the feed's next heartbeat.
        self.feed_started.call_once(|| {
            let all: Arc<dyn ports::ChangeListener> = self.listeners.clone();
            feed::start(url.clone(), Arc::downgrade(&all));
        });
        true
    }

    fn check_ready(&self) -> StoreResult<()> {
        // One probe at a time, on its own connection: a busy pool does not make it fail.
        let mut probe = self
            .pool
            .probe
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut conn = match probe.take() {
            Some(conn) => conn,
            None => self.pool.prober.connect().map_err(|err| {
                log::warn!("readiness: cannot connect to the database: {err}");
                StoreError::Unavailable("the database cannot be reached".into())
            })?,
        };
        if let Err(err) = conn.conn.ping() {
            log::warn!("readiness: the database does not answer: {err}");
            return Err(StoreError::Unavailable(
                "the database does not answer".into(),
            ));
        }
        let pending = match &mut conn.conn {
            DbConnection::Pg(conn) => conn.has_pending_migration(MIGRATIONS),
            DbConnection::Sqlite(conn) => conn.has_pending_migration(MIGRATIONS),
        }
        .map_err(|err| {
            log::warn!("readiness: cannot read the schema's migrations: {err}");
            StoreError::Unavailable("the schema's migrations cannot be read".into())
        })?;
        *probe = Some(conn);
        if pending {
            return Err(StoreError::Unavailable(
                "the database schema lacks migrations of this release (run `flagsvc migrate`)"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// The error type of diesel transactions: a storage error, whatever its origin.
#[derive(Debug)]
enum TxError {
    Store(StoreError),
}

impl From<DieselError> for TxError {
    fn from(err: DieselError) -> Self {
        TxError::Store(map_error(err))
    }
}
