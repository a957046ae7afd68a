//! The storage port on diesel, written once for PostgreSQL and SQLite.
//!
//! [`DbConnection`] is a diesel `MultiConnection` over both engines, so every query in
//! [`repository`] is written once, over one schema ([`MIGRATIONS`], portable types only). The
//! engine-specific parts (connection set-up, running the migrations, test databases) live in
//! `adapter-postgres` and `adapter-sqlite`, which build a [`SqlStore`].

mod connection;
mod email_keys;
mod error;
pub mod feed;
mod repository;
pub mod schema;
pub mod schema_check;
mod sql_store;
mod stored;

pub use connection::{
    build_pool, DbConnection, DbConnectionManager, DbPool, Engine, PoolConnection,
};
pub use email_keys::fold_email_keys;
pub use error::map_error;
pub use repository::{SqlRepository, CHANGES_CHANNEL};

pub use sql_store::SqlStore;

/// The schema migrations of both engines, embedded once here.
pub const MIGRATIONS: diesel_migrations::EmbeddedMigrations =
    diesel_migrations::embed_migrations!("migrations");
