//! Console sessions in memory.

use ports::{ConsoleSession, ConsoleSessionRepository, StoreResult};

use crate::repository::MemoryRepository;
use crate::{rows, Tables};

impl Tables {
    /// Forgets the sessions whose token is gone (the schema's `ON DELETE CASCADE`).
    pub(crate) fn drop_orphan_sessions(&mut self) {
        let tokens = &self.tokens;
        if self
            .console_sessions
            .values()
            .any(|s| !tokens.contains_key(s.token_id.as_str()))
        {
            let tokens = self.tokens.clone();
            rows(&mut self.console_sessions)
                .retain(|_, s| tokens.contains_key(s.token_id.as_str()));
        }
    }
}

impl ConsoleSessionRepository for MemoryRepository<'_> {
    fn insert_console_session(
        &mut self,
        id_hash: &str,
        session: &ConsoleSession,
        keep: u32,
        now: i64,
    ) -> StoreResult<()> {
        let tables = &mut *self.tables;
        if !tables.tokens.contains_key(session.token_id.as_str()) {
            return Err(crate::missing("console_sessions.token_id"));
        }
        if tables.console_sessions.contains_key(id_hash) {
            return Err(crate::duplicate("console_sessions.id_hash"));
        }
        let sessions = rows(&mut tables.console_sessions);
        sessions.retain(|_, s| s.token_id != session.token_id || s.expires_at > now);
        let mut own: Vec<(i64, String)> = sessions
            .iter()
            .filter(|(_, s)| s.token_id == session.token_id)
            .map(|(id, s)| (s.created_at, id.clone()))
            .collect();
        // Newest first, as the SQL stores order them; beyond `keep - 1` they go.
        own.sort_by(|a, b| b.cmp(a));
        let keep = usize::try_from(keep.saturating_sub(1)).unwrap_or(usize::MAX);
        for (_, id) in own.into_iter().skip(keep) {
            sessions.remove(&id);
        }
        sessions.insert(id_hash.to_owned(), session.clone());
        Ok(())
    }

    fn find_console_session(
        &mut self,
        id_hash: &str,
        now: i64,
    ) -> StoreResult<Option<ConsoleSession>> {
        Ok(self
            .tables
            .console_sessions
            .get(id_hash)
            .filter(|s| s.expires_at > now)
            .cloned())
    }

    fn delete_console_session(&mut self, id_hash: &str) -> StoreResult<()> {
        rows(&mut self.tables.console_sessions).remove(id_hash);
        Ok(())
    }
}
