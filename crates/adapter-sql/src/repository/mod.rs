//! [`Repository`](ports::Repository) on diesel: every query once, for both engines.
//!
//! One module per aggregate implements that aggregate's port ([`ports::FlagRepository`] in
//! `flags`, ...); [`query`] holds what they share.

mod account;
mod audit;
mod environments;
mod flags;
mod members;
mod projects;
mod query;
mod segments;
mod tokens;
mod webhooks;

use crate::DbConnection;

/// A [`Repository`](ports::Repository) inside one transaction on a [`DbConnection`].
pub struct SqlRepository<'c> {
    conn: &'c mut DbConnection,
}

impl std::fmt::Debug for SqlRepository<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlRepository").finish_non_exhaustive()
    }
}

impl<'c> SqlRepository<'c> {
    /// A repository working on `conn` (inside a transaction the caller opened).
    pub fn new(conn: &'c mut DbConnection) -> Self {
        Self { conn }
    }
}
