//! flagsvc storage on embedded SQLite (bundled): the default store, needing nothing installed.
//!
//! [`open`] creates the database file if needed, runs the embedded migrations, and returns a
//! [`SqlStore`] whose connections use WAL mode, a busy timeout and foreign keys, with write
//! transactions serialised in the process. The queries live in `adapter-sql`.

use adapter_sql::{DbConnectionManager, Engine, SqlStore};
use diesel::connection::SimpleConnection;
use diesel::{Connection, SqliteConnection};
use diesel_migrations::MigrationHarness;

/// The schema migrations, embedded in `adapter-sql` (shared by both engines).
pub use adapter_sql::MIGRATIONS;

/// Set on every connection: readers never block the writer (WAL), a locked database is waited
/// for rather than failed, and foreign keys (off by default in SQLite) cascade deletes.
const CONNECTION_SETUP: &str =
    "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 10000; PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;";

/// Why the store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SqliteError {
    /// The file could not be opened.
    #[error("cannot open SQLite database: {0}")]
    Connect(#[from] diesel::ConnectionError),
    /// A statement failed.
    #[error("SQLite statement failed: {0}")]
    Query(#[from] diesel::result::Error),
    /// A migration failed.
    #[error("cannot migrate the SQLite schema: {0}")]
    Migrate(String),
    /// The pool could not be built.
    #[error("cannot open a SQLite connection pool: {0}")]
    Pool(#[from] diesel::r2d2::PoolError),
}

/// Opens (creating if needed) the database file at `path` with up to `pool_size` connections.
///
/// # Errors
/// [`SqliteError`] when the file cannot be opened or migrated.
pub fn open(path: &str, pool_size: u32) -> Result<SqlStore, SqliteError> {
    migrate(path)?;
    open_unmigrated(path, pool_size)
}

/// Runs pending migrations on the database file at `path` (creating it if needed); returns the
/// versions applied.
///
/// # Errors
/// [`SqliteError`] when the file cannot be opened or migrated.
pub fn migrate(path: &str) -> Result<Vec<String>, SqliteError> {
    let mut conn = SqliteConnection::establish(path)?;
    conn.batch_execute(CONNECTION_SETUP)?;
    let applied = conn
        .run_pending_migrations(MIGRATIONS)
        .map(|versions| versions.iter().map(ToString::to_string).collect())
        .map_err(|e| SqliteError::Migrate(e.to_string()))?;
    adapter_sql::fold_email_keys(&mut adapter_sql::DbConnection::Sqlite(conn))
        .map_err(|e| SqliteError::Migrate(e.to_string()))?;
    Ok(applied)
}

/// Opens the database file at `path` as it is, without migrating it (see [`migrate`]).
///
/// # Errors
/// [`SqliteError::Pool`] when the pool cannot be built.
pub fn open_unmigrated(path: &str, pool_size: u32) -> Result<SqlStore, SqliteError> {
    let manager = DbConnectionManager::new(path, Engine::Sqlite, CONNECTION_SETUP);
    // r2d2's default wait for a connection: a file that cannot be opened fails quickly anyway.
    let pool = adapter_sql::build_pool(manager, pool_size, std::time::Duration::from_secs(30))?;
    Ok(SqlStore::new(pool, Engine::Sqlite))
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

    /// The tables, indexes and triggers, as SQLite records their definitions.
    fn schema(conn: &mut SqliteConnection) -> Option<String> {
        diesel::sql_query(
            "SELECT group_concat(name || ': ' || sql, char(10)) AS schema FROM \
             (SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL \
              AND name NOT LIKE '__diesel%' ORDER BY name)",
        )
        .get_result::<Schema>(conn)
        .unwrap()
        .schema
    }

    /// Every migration runs up, down and up again, and the schema is the same both times up.
    #[test]
    fn migrations_run_up_down_and_up_again() {
        let path = std::env::temp_dir().join(format!(
            "flagsvc-migrations-{}-{}.db",
            std::process::id(),
            rand_suffix()
        ));
        let path = path.display().to_string();
        let mut conn = SqliteConnection::establish(&path).unwrap();
        conn.batch_execute(CONNECTION_SETUP).unwrap();
        conn.run_pending_migrations(MIGRATIONS).unwrap();
        let first = schema(&mut conn);
        assert!(first.as_deref().is_some_and(|s| s.contains("flags")));
        conn.revert_all_migrations(MIGRATIONS).unwrap();
        assert_eq!(
            schema(&mut conn),
            None,
            "the down migrations leave tables behind"
        );
        conn.run_pending_migrations(MIGRATIONS).unwrap();
        assert_eq!(schema(&mut conn), first);
        drop(conn);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{path}{suffix}"));
        }
    }

    #[derive(diesel::QueryableByName)]
    struct CatalogueColumn {
        #[diesel(sql_type = Text)]
        table_name: String,
        #[diesel(sql_type = Text)]
        column_name: String,
        #[diesel(sql_type = Text)]
        column_type: String,
        #[diesel(sql_type = diesel::sql_types::Integer)]
        not_null: i32,
        #[diesel(sql_type = diesel::sql_types::Integer)]
        pk: i32,
    }

    /// `schema.rs` declares exactly the tables and columns the migrations create (types,
    /// nullability, primary keys).
    #[test]
    fn schema_rs_matches_the_migrations() {
        let mut conn = SqliteConnection::establish(":memory:").unwrap();
        conn.run_pending_migrations(MIGRATIONS).unwrap();
        let columns: Vec<CatalogueColumn> = diesel::sql_query(
            "SELECT m.name AS table_name, p.name AS column_name, p.type AS column_type, \
                    p.\"notnull\" AS not_null, p.pk AS pk \
             FROM sqlite_master m JOIN pragma_table_info(m.name) p \
             WHERE m.type = 'table' AND m.name NOT LIKE '__diesel%' AND m.name NOT LIKE 'sqlite_%'",
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
                    // SQLite lets a non-INTEGER primary key hold NULL unless declared NOT NULL;
                    // the migrations never store one, and diesel reads key columns as not null.
                    c.not_null == 0 && c.pk == 0,
                    Some(i64::from(c.pk)),
                )
            })
            .collect();
        if let Err(report) = adapter_sql::schema_check::check(&actual) {
            panic!("{report}");
        }
    }

    fn rand_suffix() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    }
}
