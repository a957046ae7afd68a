//! [`ConsoleSessionRepository`] on diesel.

use diesel::prelude::*;
use domain::id::TokenId;
use ports::{ConsoleSession, ConsoleSessionRepository, StoreResult};

use crate::schema::console_sessions;

use super::query::*;
use super::SqlRepository;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = console_sessions)]
struct SessionRow {
    id_hash: String,
    token_id: String,
    secret_hash: String,
    csrf_token: String,
    created_at: i64,
    expires_at: i64,
}

impl ConsoleSessionRepository for SqlRepository<'_> {
    fn insert_console_session(
        &mut self,
        id_hash: &str,
        session: &ConsoleSession,
        keep: u32,
        now: i64,
    ) -> StoreResult<()> {
        let token_id = session.token_id.as_str();
        diesel::delete(
            console_sessions::table
                .filter(console_sessions::token_id.eq(token_id))
                .filter(console_sessions::expires_at.le(now)),
        )
        .execute(self.conn)
        .store()?;
        // The newest `keep - 1` stay beside the new one; the token's index orders them.
        let kept: Vec<String> = console_sessions::table
            .filter(console_sessions::token_id.eq(token_id))
            .order((
                console_sessions::created_at.desc(),
                console_sessions::id_hash.desc(),
            ))
            .limit(i64::from(keep.saturating_sub(1)))
            .select(console_sessions::id_hash)
            .load(self.conn)
            .store()?;
        diesel::delete(
            console_sessions::table
                .filter(console_sessions::token_id.eq(token_id))
                .filter(console_sessions::id_hash.ne_all(&kept)),
        )
        .execute(self.conn)
        .store()?;
        diesel::insert_into(console_sessions::table)
            .values(SessionRow {
                id_hash: id_hash.to_owned(),
                token_id: token_id.to_owned(),
                secret_hash: session.secret_hash.clone(),
                csrf_token: session.csrf_token.clone(),
                created_at: session.created_at,
                expires_at: session.expires_at,
            })
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn find_console_session(
        &mut self,
        id_hash: &str,
        now: i64,
    ) -> StoreResult<Option<ConsoleSession>> {
        let row: Option<SessionRow> = console_sessions::table
            .find(id_hash)
            .filter(console_sessions::expires_at.gt(now))
            .select(SessionRow::as_select())
            .first(self.conn)
            .optional()
            .store()?;
        row.map(|row| {
            Ok(ConsoleSession {
                token_id: TokenId::parse(&row.token_id)
                    .map_err(|e| corrupt("a console session's token id", e))?,
                secret_hash: row.secret_hash,
                csrf_token: row.csrf_token,
                created_at: row.created_at,
                expires_at: row.expires_at,
            })
        })
        .transpose()
    }

    fn delete_console_session(&mut self, id_hash: &str) -> StoreResult<()> {
        diesel::delete(console_sessions::table.find(id_hash))
            .execute(self.conn)
            .store()?;
        Ok(())
    }
}
