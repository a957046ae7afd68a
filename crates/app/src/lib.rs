//! Configuration and wiring of the `flagsvc` binary: which store, which address, which limits.

use std::sync::Arc;

pub mod cli;

use anyhow::Context;
use ports::Store;

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
