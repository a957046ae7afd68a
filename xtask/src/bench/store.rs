//! The stores a bench run measures.

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
