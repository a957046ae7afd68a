//! The stores a bench run measures, and the files a SQLite one leaves.

use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    Postgres,
    Sqlite,
}

impl Store {
    pub fn name(self) -> &'static str {
        match self {
            Store::Postgres => "PostgreSQL",
            Store::Sqlite => "SQLite",
        }
    }
}

/// Removes SQLite database `file` with its write-ahead log and shared memory.
pub fn remove_sqlite(file: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
    }
}
