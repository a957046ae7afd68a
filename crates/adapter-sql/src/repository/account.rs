//! [`AccountRepository`] on diesel.

use diesel::prelude::*;
use ports::{AccountRepository, StoreResult};

use crate::schema::account;

use super::query::*;
use super::SqlRepository;

impl AccountRepository for SqlRepository<'_> {
    fn account_id(&mut self) -> StoreResult<Option<String>> {
        account::table
            .select(account::id)
            .first(self.conn)
            .optional()
            .store()
    }

    fn create_account(&mut self, id: &str) -> StoreResult<()> {
        // Both engines read this statement alike; a concurrent first start of another replica
        // leaves the row it made, and this one reads it.
        diesel::sql_query(
            "INSERT INTO account (slot, id) VALUES (1, $1) ON CONFLICT (slot) DO NOTHING",
        )
        .bind::<diesel::sql_types::Text, _>(id)
        .execute(self.conn)
        .store()?;
        Ok(())
    }
}
