//! The storage port on diesel, written once for PostgreSQL and SQLite.
//!
//! [`DbConnection`] is a diesel `MultiConnection` over both engines, so every query in
//! [`repository`] is written once, over one schema ([`MIGRATIONS`], portable types only). The
//! engine-specific parts (connection set-up, running the migrations, test databases) live in
//! `adapter-postgres` and `adapter-sqlite`, which build a [`SqlStore`].

mod repository;
pub mod schema;
pub mod schema_check;
mod stored;

use std::sync::Mutex;

use diesel::connection::SimpleConnection;
use diesel::r2d2::{ManageConnection, Pool, PooledConnection, R2D2Connection};
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::{Connection, PgConnection, SqliteConnection};
use ports::{Store, StoreError, StoreResult, UnitOfWork};

pub use repository::SqlRepository;

/// The schema migrations of both engines, embedded once here.
pub const MIGRATIONS: diesel_migrations::EmbeddedMigrations =
    diesel_migrations::embed_migrations!("migrations");

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
#[derive(Debug)]
pub struct DbConnectionManager {
    url: String,
    engine: Engine,
    setup: &'static str,
}

impl DbConnectionManager {
    /// A manager for `url` on `engine`; `setup` is SQL run on every new connection.
    pub fn new(url: impl Into<String>, engine: Engine, setup: &'static str) -> Self {
        Self {
            url: url.into(),
            engine,
            setup,
        }
    }
}

impl ManageConnection for DbConnectionManager {
    type Connection = DbConnection;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<DbConnection, Self::Error> {
        let mut conn = match self.engine {
            Engine::Postgres => PgConnection::establish(&self.url).map(DbConnection::Pg),
            Engine::Sqlite => SqliteConnection::establish(&self.url).map(DbConnection::Sqlite),
        }
        .map_err(diesel::r2d2::Error::ConnectionError)?;
        if !self.setup.is_empty() {
            conn.batch_execute(self.setup)
                .map_err(diesel::r2d2::Error::QueryError)?;
        }
        Ok(conn)
    }

    fn is_valid(&self, conn: &mut DbConnection) -> Result<(), Self::Error> {
        conn.ping().map_err(diesel::r2d2::Error::QueryError)
    }

    fn has_broken(&self, conn: &mut DbConnection) -> bool {
        conn.is_broken()
    }
}

/// A pool of connections.
pub type DbPool = Pool<DbConnectionManager>;

/// A [`Store`] over a connection pool.
pub struct SqlStore {
    pool: DbPool,
    /// SQLite allows one writer at a time: serialising write transactions in the process turns
    /// would-be `database is locked` errors into a short wait.
    write_lock: Option<Mutex<()>>,
}

impl std::fmt::Debug for SqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore")
            .field("serialised_writes", &self.write_lock.is_some())
            .finish()
    }
}

impl SqlStore {
    /// A store over `pool`. With `serialise_writes`, write transactions run one at a time.
    pub fn new(pool: DbPool, serialise_writes: bool) -> Self {
        Self {
            pool,
            write_lock: serialise_writes.then(|| Mutex::new(())),
        }
    }

    fn connection(&self) -> StoreResult<PooledConnection<DbConnectionManager>> {
        self.pool
            .get()
            .map_err(|e| StoreError::Unavailable(e.to_string()))
    }

    fn run(&self, work: &mut UnitOfWork<'_>) -> StoreResult<()> {
        let mut conn = self.connection()?;
        conn.transaction::<(), TxError, _>(|conn| {
            let mut repo = SqlRepository::new(conn);
            work(&mut repo).map_err(TxError::Store)
        })
        .map_err(|e| match e {
            TxError::Store(err) => err,
        })
    }
}

impl Store for SqlStore {
    fn read(&self, work: &mut UnitOfWork<'_>) -> StoreResult<()> {
        self.run(work)
    }

    fn write(&self, work: &mut UnitOfWork<'_>) -> StoreResult<()> {
        // A poisoned lock only means another writer panicked; the database rolled it back.
        let _guard = self
            .write_lock
            .as_ref()
            .map(|lock| lock.lock().unwrap_or_else(|p| p.into_inner()));
        self.run(work)
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

/// Maps a diesel error to the port's error.
pub fn map_error(err: DieselError) -> StoreError {
    match err {
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info) => {
            StoreError::Duplicate(info.message().to_owned())
        }
        DieselError::DatabaseError(DatabaseErrorKind::SerializationFailure, info) => {
            StoreError::Conflict(info.message().to_owned())
        }
        // A row this transaction refers to was deleted by a concurrent one (an environment under
        // a new segment, say): run the whole unit of work again, which then finds it gone (404).
        DieselError::DatabaseError(DatabaseErrorKind::ForeignKeyViolation, info) => {
            StoreError::Conflict(info.message().to_owned())
        }
        DieselError::DatabaseError(DatabaseErrorKind::ClosedConnection, info) => {
            StoreError::Unavailable(info.message().to_owned())
        }
        // PostgreSQL's statement_timeout (SQLSTATE 57014): the database did not answer in time.
        DieselError::DatabaseError(_, info)
            if info
                .message()
                .contains("canceling statement due to statement timeout") =>
        {
            StoreError::Unavailable(info.message().to_owned())
        }
        DieselError::DatabaseError(_, info)
            if info.message().contains("database is locked")
                || info.message().contains("deadlock detected") =>
        {
            StoreError::Conflict(info.message().to_owned())
        }
        other => StoreError::Other(other.to_string()),
    }
}
