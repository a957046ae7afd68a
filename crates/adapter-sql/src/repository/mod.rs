//! [`Repository`](ports::Repository) on diesel: every query once, for both engines.
//!
//! One module per aggregate implements that aggregate's port ([`ports::FlagRepository`] in
//! `flags`, ...); [`query`] holds what they share.

mod account;
mod audit;
mod custom_roles;
mod environments;
mod fixed;
mod flags;
mod members;
mod projects;
mod query;
mod segments;
mod sessions;
mod teams;
mod tokens;
mod tombstones;
mod webhooks;

use crate::DbConnection;

/// A [`Repository`](ports::Repository) inside one transaction on a [`DbConnection`].
pub struct SqlRepository<'c> {
    conn: &'c mut DbConnection,
    /// What this transaction announced ([`ports::AuditRepository::announce`]).
    announced: Vec<ports::Changed>,
    /// How many of `announced` were already sent to other processes (PostgreSQL `NOTIFY`).
    notified: usize,
}

impl std::fmt::Debug for SqlRepository<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlRepository").finish_non_exhaustive()
    }
}

impl<'c> SqlRepository<'c> {
    /// A repository working on `conn` (inside a transaction the caller opened).
    pub fn new(conn: &'c mut DbConnection) -> Self {
        Self {
            conn,
            announced: Vec::new(),
            notified: 0,
        }
    }

    /// Ends the unit of work before its commit: sends what it announced and has not sent yet to
    /// other processes (PostgreSQL: `NOTIFY` on [`CHANGES_CHANNEL`], delivered when the
    /// transaction commits, and only then), and returns everything it announced, for this
    /// process's listeners once it has committed.
    ///
    /// # Errors
    /// A failed statement.
    pub fn finish(mut self) -> ports::StoreResult<Vec<ports::Changed>> {
        let unsent = self.unsent_payloads();
        if let (false, DbConnection::Pg(conn)) = (unsent.is_empty(), &mut *self.conn) {
            use diesel::RunQueryDsl;
            fixed::Fixed::<NotifyChanges>::new(vec![fixed::Bind::TextArray(&unsent)])
                .execute(conn)
                .map_err(crate::map_error)?;
        }
        Ok(self.announced)
    }

    /// The payloads of what was announced and not yet sent, now counted as sent.
    fn unsent_payloads(&mut self) -> Vec<String> {
        let unsent = self.announced[self.notified..]
            .iter()
            .map(ports::Changed::to_payload)
            .collect();
        self.notified = self.announced.len();
        unsent
    }
}

/// The channel's name as a literal, for the statements that name it (`concat!`).
macro_rules! changes_channel {
    () => {
        "flagsvc_changed"
    };
}
pub(crate) use changes_channel;

/// The PostgreSQL channel on which write transactions announce their changes to other replicas
/// ([`ports::Changed::to_payload`] as the payload).
pub const CHANGES_CHANNEL: &str = changes_channel!();

fixed::statement!(
    /// Sends each payload of a text array as a notification on [`CHANGES_CHANNEL`].
    NotifyChanges = concat!(
        "SELECT pg_notify('",
        changes_channel!(),
        "', payload) FROM unnest(?::text[]) AS payload"
    )
);
