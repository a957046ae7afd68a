//! flagsvc storage on PostgreSQL: the production store.
//!
//! [`connect`] runs the embedded migrations and returns a [`SqlStore`] over an r2d2 pool. The
//! queries themselves live in `adapter-sql`, shared with SQLite. [`TestDatabase`] gives each test
//! run a database of its own and drops it afterwards.

use std::time::Duration;

use adapter_sql::{DbConnectionManager, Engine, SqlStore};
use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection};
use diesel_migrations::MigrationHarness;

/// The schema migrations, embedded in `adapter-sql` (shared by both engines).
pub use adapter_sql::MIGRATIONS;

/// Why the store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum PostgresError {
    /// The server refused or could not be reached.
    #[error("cannot connect to PostgreSQL: {0}")]
    Connect(#[from] diesel::ConnectionError),
    /// A migration failed.
    #[error("cannot migrate the PostgreSQL schema: {0}")]
    Migrate(String),
    /// The pool could not be built.
    #[error("cannot open a PostgreSQL connection pool: {0}")]
    Pool(#[from] diesel::r2d2::PoolError),
    /// A statement failed.
    #[error("PostgreSQL statement failed: {0}")]
    Query(#[from] diesel::result::Error),
}

/// The advisory lock that migrations hold (session level): replicas that start together take
/// turns, and the second finds nothing left to do.
const MIGRATION_LOCK: i64 = 0x5f1a_0001;

/// Runs pending migrations on the database at `url`, holding an advisory lock meanwhile so that
/// two processes never migrate at once. Returns the versions applied (none when up to date).
///
/// # Errors
/// [`PostgresError::Connect`], [`PostgresError::Query`] for the lock, or
/// [`PostgresError::Migrate`].
pub fn migrate(url: &str) -> Result<Vec<String>, PostgresError> {
    let mut conn = PgConnection::establish(url)?;
    conn.batch_execute(&format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"))?;
    let applied = conn
        .run_pending_migrations(MIGRATIONS)
        .map(|versions| {
            versions
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<String>>()
        })
        .map_err(|e| PostgresError::Migrate(e.to_string()));
    let mut conn = adapter_sql::DbConnection::Pg(conn);
    let applied = applied.and_then(|applied| {
        adapter_sql::fold_email_keys(&mut conn)
            .map(|()| applied)
            .map_err(|e| PostgresError::Migrate(e.to_string()))
    });
    let mut conn = match conn {
        adapter_sql::DbConnection::Pg(conn) => conn,
        adapter_sql::DbConnection::Sqlite(_) => {
            return Err(PostgresError::Migrate("not a PostgreSQL connection".into()))
        }
    };
    // Released with the session anyway; said explicitly so that a pooled session would too.
    let unlocked = conn.batch_execute(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})"));
    let applied = applied?;
    unlocked?;
    Ok(applied)
}

/// How long a request waits for a connection before it is answered 503: a database that is down
/// must not hold requests (and their clients) for long.
pub const CONNECTION_WAIT: Duration = Duration::from_secs(2);

/// Run on every new connection:
/// - no statement may run longer than 30 s (a runaway query answers 503 instead of holding a
///   database core; requests are bounded far below it);
/// - values large enough to be compressed (an audit entry's detail: the flag before and after,
///   some 6 KB) are compressed with lz4 where the server offers it (PostgreSQL 14 and later, built
///   with lz4): pglz took some 14 % of PostgreSQL's CPU per flag toggle, lz4 a fraction of that.
///   A server without lz4 keeps its default; values stored either way read the same.
pub const SESSION_SETUP: &str = "SET statement_timeout = '30s'; \
    SELECT set_config('default_toast_compression', 'lz4', false) FROM pg_settings \
    WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)";

/// `url` with libpq's `connect_timeout` (seconds) unless it sets one: an unreachable host that
/// drops packets would otherwise hold a connection attempt for minutes.
///
/// ```
/// use adapter_postgres::with_connect_timeout;
/// assert_eq!(with_connect_timeout("postgres://h/db"), "postgres://h/db?connect_timeout=2");
/// assert_eq!(with_connect_timeout("postgres://h/db?sslmode=disable"), "postgres://h/db?sslmode=disable&connect_timeout=2");
/// assert_eq!(with_connect_timeout("postgres://h/db?connect_timeout=9"), "postgres://h/db?connect_timeout=9");
/// ```
pub fn with_connect_timeout(url: &str) -> String {
    if url.contains("connect_timeout=") {
        return url.to_owned();
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    format!(
        "{url}{separator}connect_timeout={}",
        CONNECTION_WAIT.as_secs()
    )
}

/// Migrates the database at `url` and opens a store with up to `pool_size` connections. A
/// subscriber to the store also hears other processes' commits on that database
/// (`adapter_sql::feed`, on one more connection).
///
/// # Errors
/// [`PostgresError`] when the server cannot be reached or the schema cannot be migrated.
pub fn connect(url: &str, pool_size: u32) -> Result<SqlStore, PostgresError> {
    migrate(&with_connect_timeout(url))?;
    open(url, pool_size)
}

/// Opens a store on the database at `url` as it is, without migrating it (see [`migrate`]).
///
/// # Errors
/// [`PostgresError::Pool`] when the pool cannot be built.
pub fn open(url: &str, pool_size: u32) -> Result<SqlStore, PostgresError> {
    // A pooled connection whose network path died fails in seconds (and the request answers
    // 503) instead of waiting for the kernel's retransmissions, minutes.
    let url = adapter_sql::feed::with_keepalives(&with_connect_timeout(url));
    let manager = DbConnectionManager::new(url.clone(), Engine::Postgres, SESSION_SETUP);
    let pool = adapter_sql::build_pool(manager, pool_size, CONNECTION_WAIT)?;
    Ok(SqlStore::new(pool, Engine::Postgres).with_change_feed(url))
}

/// The URL of database `name` on the server of `url` (same user, host, port and parameters).
///
/// ```
/// assert_eq!(
///     adapter_postgres::database_url("postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "t1"),
///     "postgres://postgres@127.0.0.1:5432/t1?sslmode=disable"
/// );
/// assert_eq!(adapter_postgres::database_url("postgres://localhost", "t1"), "postgres://localhost/t1");
/// ```
pub fn database_url(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let server = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{server}/{name}?{query}"),
        None => format!("{server}/{name}"),
    }
}

/// A database created for one test run, dropped (with its connections) when this is dropped.
#[derive(Debug)]
pub struct TestDatabase {
    admin_url: String,
    name: String,
    url: String,
}

impl TestDatabase {
    /// Creates an empty database with a random name on the server of `server_url`.
    ///
    /// # Errors
    /// [`PostgresError`] when the server cannot be reached or refuses to create it.
    pub fn create(server_url: &str) -> Result<Self, PostgresError> {
        let admin_url = database_url(server_url, "postgres");
        let name = format!("flagsvc_test_{:016x}", rand::random::<u64>());
        let mut admin = PgConnection::establish(&admin_url)?;
        admin.batch_execute(&format!("CREATE DATABASE {name}"))?;
        let url = database_url(server_url, &name);
        Ok(Self {
            admin_url,
            name,
            url,
        })
    }

    /// The database's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Drops the database now, closing every connection to it: an outage, for tests of what
    /// clients see while the database is gone.
    ///
    /// # Errors
    /// [`PostgresError`] when the server refuses.
    pub fn drop_now(&self) -> Result<(), PostgresError> {
        let mut admin = PgConnection::establish(&self.admin_url)?;
        admin.batch_execute(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        ))?;
        Ok(())
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let dropped = PgConnection::establish(&self.admin_url)
            .map_err(|e| e.to_string())
            .and_then(|mut admin| {
                admin
                    .batch_execute(&format!(
                        "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                        self.name
                    ))
                    .map_err(|e| e.to_string())
            });
        if let Err(err) = dropped {
            log::warn!("test database {} was not dropped: {err}", self.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use adapter_sql::schema_check::Column;
    use diesel::sql_types::{Nullable, Text};
    use diesel::RunQueryDsl;

    #[derive(diesel::QueryableByName)]
    struct Schema {
        #[diesel(sql_type = Nullable<Text>)]
        schema: Option<String>,
    }

    /// Columns (with types and defaults) and indexes of the public schema.
    fn schema(conn: &mut PgConnection) -> Option<String> {
        diesel::sql_query(
            "SELECT string_agg(line, chr(10) ORDER BY line) AS schema FROM (\
               SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || \
                      is_nullable || ' ' || coalesce(column_default, '') AS line \
               FROM information_schema.columns \
               WHERE table_schema = 'public' AND table_name NOT LIKE '__diesel%' \
               UNION ALL \
               SELECT indexdef FROM pg_indexes \
               WHERE schemaname = 'public' AND tablename NOT LIKE '__diesel%') lines",
        )
        .get_result::<Schema>(conn)
        .unwrap()
        .schema
    }

    #[derive(diesel::QueryableByName)]
    struct CatalogueColumn {
        #[diesel(sql_type = Text)]
        table_name: String,
        #[diesel(sql_type = Text)]
        column_name: String,
        #[diesel(sql_type = Text)]
        column_type: String,
        #[diesel(sql_type = diesel::sql_types::Bool)]
        nullable: bool,
        #[diesel(sql_type = Nullable<diesel::sql_types::Integer>)]
        pk: Option<i32>,
    }

    /// `schema.rs` declares exactly the tables and columns the migrations create (types,
    /// nullability, primary keys).
    #[test]
    fn schema_rs_matches_the_migrations() {
        let database = TestDatabase::create(&server_url()).unwrap();
        let mut conn = PgConnection::establish(database.url()).unwrap();
        conn.run_pending_migrations(MIGRATIONS).unwrap();
        let columns: Vec<CatalogueColumn> = diesel::sql_query(
            "SELECT c.table_name::text AS table_name, c.column_name::text AS column_name, \
                    c.data_type::text AS column_type, c.is_nullable = 'YES' AS nullable, \
                    k.ordinal_position::int AS pk \
             FROM information_schema.columns c \
             LEFT JOIN information_schema.table_constraints t \
               ON t.table_schema = c.table_schema AND t.table_name = c.table_name \
              AND t.constraint_type = 'PRIMARY KEY' \
             LEFT JOIN information_schema.key_column_usage k \
               ON k.constraint_schema = t.constraint_schema AND k.constraint_name = t.constraint_name \
              AND k.table_name = c.table_name AND k.column_name = c.column_name \
             WHERE c.table_schema = 'public' AND c.table_name NOT LIKE '__diesel%'",
        )
        .load(&mut conn)
        .unwrap();
        let actual: Vec<_> = columns
            .into_iter()
            .map(|c| {
                Column::from_catalogue(
                    c.table_name,
                    c.column_name,
                    &c.column_type,
                    c.nullable,
                    c.pk.map(i64::from),
                )
            })
            .collect();
        if let Err(report) = adapter_sql::schema_check::check(&actual) {
            panic!("{report}");
        }
    }

    /// As the integration tests find it: `cargo xtask test` sets the variable.
    fn server_url() -> String {
        std::env::var("FLAGSVC_TEST_POSTGRES_URL")
            .ok()
            .or_else(|| {
                std::env::var("DATABASE_URL")
                    .ok()
                    .filter(|u| u.starts_with("postgres"))
            })
            .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".into())
    }

    /// A connection set up as the pool sets up its own compresses large values with lz4 when
    /// the server can, and times statements out.
    #[test]
    fn sessions_compress_large_values_with_lz4_where_the_server_can() {
        #[derive(diesel::QueryableByName)]
        struct Setting {
            #[diesel(sql_type = Nullable<Text>)]
            value: Option<String>,
        }
        let database = TestDatabase::create(&server_url()).unwrap();
        let mut conn = PgConnection::establish(database.url()).unwrap();
        let offered = diesel::sql_query(
            "SELECT ('lz4' = ANY(enumvals))::text AS value FROM pg_settings \
             WHERE name = 'default_toast_compression'",
        )
        .get_result::<Setting>(&mut conn)
        .ok()
        .and_then(|s| s.value);
        conn.batch_execute(SESSION_SETUP).unwrap();
        let timeout = diesel::sql_query("SELECT current_setting('statement_timeout') AS value")
            .get_result::<Setting>(&mut conn)
            .unwrap();
        assert_eq!(timeout.value.as_deref(), Some("30s"));
        conn.batch_execute(
            "CREATE TEMPORARY TABLE detail (doc TEXT NOT NULL); \
             INSERT INTO detail SELECT string_agg(\
               '{\"key\":\"flag-' || i || '\",\"on\":true,\"variations\":[true,false]}', ',') \
             FROM generate_series(1, 100) AS i",
        )
        .unwrap();
        let compression =
            diesel::sql_query("SELECT pg_column_compression(doc)::text AS value FROM detail")
                .get_result::<Setting>(&mut conn)
                .unwrap();
        let expected = match offered.as_deref() {
            Some("true") => "lz4",
            _ => "pglz",
        };
        assert_eq!(compression.value.as_deref(), Some(expected));
    }

    /// Every migration runs up, down and up again, and the schema is the same both times up.
    #[test]
    fn migrations_run_up_down_and_up_again() {
        let database = TestDatabase::create(&server_url()).unwrap();
        let mut conn = PgConnection::establish(database.url()).unwrap();
        conn.run_pending_migrations(MIGRATIONS).unwrap();
        let first = schema(&mut conn);
        assert!(first.as_deref().is_some_and(|s| s.contains("flags.")));
        conn.revert_all_migrations(MIGRATIONS).unwrap();
        assert_eq!(
            schema(&mut conn),
            None,
            "the down migrations leave tables behind"
        );
        conn.run_pending_migrations(MIGRATIONS).unwrap();
        assert_eq!(schema(&mut conn), first);
    }
}
