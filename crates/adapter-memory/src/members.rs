//! The account, members and access tokens.

use std::cmp::Ordering;
use std::sync::Arc;

use domain::id::MemberId;
use domain::member::Member;
use domain::query::{MemberQuery, MemberSortField, Page};
use domain::role::Role;
use domain::token::Token;
use ports::{StoreError, StoreResult};

use crate::{
    directed, duplicate, matches_search, missing, one_page, rows, search_text, Tables, TokenRow,
};

/// A member as the SQL stores read one back: the stored columns on a fresh [`Member`] (so
/// derived fields, `_links` among them, are made anew), with its teams.
fn as_read(tables: &Tables, stored: &Member) -> Member {
    let mut member = Member::owner(
        stored.id.clone(),
        stored.email.clone(),
        stored.creation_date,
    );
    member.role = stored.role;
    member.first_name.clone_from(&stored.first_name);
    member.last_name.clone_from(&stored.last_name);
    member.custom_roles.clone_from(&stored.custom_roles);
    member.pending_invite = stored.pending_invite;
    member.verified = stored.verified;
    member.last_seen = stored.last_seen;
    member.teams = tables.teams_of(&stored.id);
    member
}

/// What the `query` filter of members searches: the e-mail, then first and last name.
fn member_search(member: &Member) -> String {
    let names = [member.first_name.as_deref(), member.last_name.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    search_text(&[&member.email, &names])
}

fn member_order(field: MemberSortField, a: &Member, b: &Member) -> Ordering {
    match field {
        MemberSortField::DisplayName => a
            .display_name()
            .to_lowercase()
            .cmp(&b.display_name().to_lowercase()),
        MemberSortField::LastSeen => a.last_seen.cmp(&b.last_seen),
    }
    .then_with(|| a.id.cmp(&b.id))
}

impl Tables {
    pub(crate) fn account_id(&self) -> Option<String> {
        self.account.clone()
    }

    pub(crate) fn create_account(&mut self, id: &str) {
        self.account.get_or_insert_with(|| id.to_owned());
    }

    pub(crate) fn find_owner(&self) -> Option<Member> {
        self.members
            .values()
            .find(|m| m.role == Role::Owner)
            .map(|m| as_read(self, m))
    }

    pub(crate) fn insert_member(&mut self, member: &Member) -> StoreResult<()> {
        if self.members.contains_key(&member.id) {
            return Err(duplicate("members.id"));
        }
        let email = member.email.to_lowercase();
        if self
            .members
            .values()
            .any(|m| m.email.to_lowercase() == email)
        {
            return Err(duplicate("members.email"));
        }
        rows(&mut self.members).insert(member.id.clone(), member.clone());
        Ok(())
    }

    pub(crate) fn get_member(&self, id: &str) -> Option<Member> {
        self.members.get(id).map(|m| as_read(self, m))
    }

    /// The members with these `_id`s, in `_id` order.
    pub(crate) fn get_members(&self, ids: &[&MemberId]) -> Vec<Member> {
        self.members
            .values()
            .filter(|m| ids.contains(&&m.id))
            .map(|m| as_read(self, m))
            .collect()
    }

    pub(crate) fn list_members(&self, q: &MemberQuery) -> (Vec<Member>, u64) {
        let mut found: Vec<Member> = self
            .members
            .values()
            .filter(|m| {
                q.query
                    .as_ref()
                    .is_none_or(|text| matches_search(&member_search(m), text))
            })
            .filter(|m| q.roles.is_empty() || q.roles.contains(&m.role))
            .filter(|m| q.emails.is_empty() || q.emails.contains(&m.email.to_lowercase()))
            .map(|m| as_read(self, m))
            .collect();
        found.sort_by(|a, b| directed(q.sort.direction, member_order(q.sort.field, a, b)));
        one_page(found, q.page)
    }

    pub(crate) fn taken_emails(&self, emails: &[String]) -> Vec<String> {
        self.members
            .values()
            .map(|m| domain::member::email_key(&m.email))
            .filter(|email| emails.contains(email))
            .collect()
    }

    /// The emails of at most `limit` members holding custom role `key`, in email order.
    pub(crate) fn members_with_custom_role(&self, key: &str, limit: u32) -> Vec<String> {
        let mut emails: Vec<String> = self
            .members
            .values()
            .filter(|m| m.custom_roles.iter().any(|k| k == key))
            .map(|m| m.email.clone())
            .collect();
        emails.sort();
        emails.truncate(limit as usize);
        emails
    }

    /// Saves what a member's update may change (not its e-mail, creation or last activity).
    pub(crate) fn update_member(&mut self, member: &Member) {
        if let Some(stored) = rows(&mut self.members).get_mut(&member.id) {
            stored.role = member.role;
            stored.first_name.clone_from(&member.first_name);
            stored.last_name.clone_from(&member.last_name);
            stored.custom_roles.clone_from(&member.custom_roles);
            stored.pending_invite = member.pending_invite;
            stored.verified = member.verified;
        }
    }

    /// Deletes a member and, as the schema cascades, its tokens.
    pub(crate) fn delete_member(&mut self, id: &str) {
        if rows(&mut self.members).remove(id).is_some() {
            rows(&mut self.tokens).retain(|_, row| row.token.member_id != id);
            Arc::make_mut(&mut self.team_members).retain(|(_, member)| member.as_str() != id);
            self.drop_orphan_sessions();
        }
    }

    pub(crate) fn reassign_service_tokens(
        &mut self,
        from: &MemberId,
        to: &MemberId,
    ) -> StoreResult<()> {
        let moved = self
            .tokens
            .values()
            .any(|row| row.token.member_id == *from && row.token.service_token);
        if !moved {
            return Ok(());
        }
        if !self.members.contains_key(to) {
            return Err(missing("tokens.member_id"));
        }
        for row in rows(&mut self.tokens).values_mut() {
            if row.token.member_id == *from && row.token.service_token {
                row.token.member_id = to.clone();
            }
        }
        Ok(())
    }

    pub(crate) fn insert_token(&mut self, token: &Token, secret_hash: &str) -> StoreResult<()> {
        if self.tokens.contains_key(&token.id) {
            return Err(duplicate("tokens.id"));
        }
        if self
            .tokens
            .values()
            .any(|row| row.secret_hash == secret_hash)
        {
            return Err(duplicate("tokens.secret_hash"));
        }
        if !self.members.contains_key(&token.member_id) {
            return Err(missing("tokens.member_id"));
        }
        let row = TokenRow {
            token: token.clone(),
            secret_hash: secret_hash.to_owned(),
            previous_secret_hash: None,
            previous_expires_at: None,
        };
        rows(&mut self.tokens).insert(token.id.clone(), row);
        Ok(())
    }

    pub(crate) fn find_token_by_hash(
        &self,
        secret_hash: &str,
        now: i64,
    ) -> Option<(Token, Member, Option<i64>)> {
        let current = self
            .tokens
            .values()
            .find(|row| row.secret_hash == secret_hash);
        let row = current.or_else(|| {
            self.tokens.values().find(|row| {
                row.previous_secret_hash.as_deref() == Some(secret_hash)
                    && row.previous_expires_at.is_some_and(|at| at > now)
            })
        })?;
        let member = as_read(self, self.members.get(&row.token.member_id)?);
        let previous = (row.secret_hash != secret_hash)
            .then_some(row.previous_expires_at)
            .flatten();
        Some((row.token.clone(), member, previous))
    }

    pub(crate) fn list_secret_hashes(&self, now: i64) -> Vec<String> {
        self.tokens
            .values()
            .flat_map(|row| {
                let previous = row
                    .previous_secret_hash
                    .clone()
                    .filter(|_| row.previous_expires_at.is_some_and(|at| at > now));
                std::iter::once(row.secret_hash.clone()).chain(previous)
            })
            .collect()
    }

    pub(crate) fn get_token(&self, id: &str) -> Option<Token> {
        self.tokens.get(id).map(|row| row.token.clone())
    }

    /// Service tokens and `member_id`'s own (every token when `None`), oldest first.
    pub(crate) fn list_tokens(
        &self,
        member_id: Option<&MemberId>,
        page: Page,
    ) -> (Vec<Token>, u64) {
        let mut found: Vec<Token> = self
            .tokens
            .values()
            .map(|row| &row.token)
            .filter(|t| member_id.is_none_or(|member| t.service_token || t.member_id == *member))
            .cloned()
            .collect();
        found.sort_by(|a, b| (a.creation_date, &a.id).cmp(&(b.creation_date, &b.id)));
        one_page(found, page)
    }

    /// Saves what a token's update may change.
    pub(crate) fn update_token(&mut self, token: &Token) {
        if let Some(row) = rows(&mut self.tokens).get_mut(&token.id) {
            let stored = &mut row.token;
            stored.name.clone_from(&token.name);
            stored.description.clone_from(&token.description);
            stored.role = token.role;
            stored.default_api_version = token.default_api_version;
            stored.last_modified = token.last_modified;
            stored.ending.clone_from(&token.ending);
            stored.custom_role_ids.clone_from(&token.custom_role_ids);
            stored.inline_role.clone_from(&token.inline_role);
        }
    }

    /// The names of at most `limit` tokens acting with custom role `id`, in name order.
    pub(crate) fn tokens_with_custom_role(&self, id: &str, limit: u32) -> Vec<String> {
        let mut names: Vec<String> = self
            .tokens
            .values()
            .filter(|row| row.token.custom_role_ids.iter().any(|r| r.as_str() == id))
            .map(|row| row.token.name.clone())
            .collect();
        names.sort();
        names.truncate(limit as usize);
        names
    }

    pub(crate) fn reset_token_secret(
        &mut self,
        token: &Token,
        secret_hash: &str,
        previous_valid_until: Option<i64>,
    ) -> StoreResult<()> {
        if self
            .tokens
            .iter()
            .any(|(id, row)| *id != token.id && row.secret_hash == secret_hash)
        {
            return Err(duplicate("tokens.secret_hash"));
        }
        let row = rows(&mut self.tokens)
            .get_mut(&token.id)
            .ok_or_else(|| StoreError::Other(format!("no token '{}'", token.id)))?;
        let current = std::mem::replace(&mut row.secret_hash, secret_hash.to_owned());
        row.token.ending.clone_from(&token.ending);
        row.token.last_modified = token.last_modified;
        row.previous_secret_hash = previous_valid_until.map(|_| current);
        row.previous_expires_at = previous_valid_until;
        Ok(())
    }

    pub(crate) fn record_token_use(&mut self, token_id: &str, member_id: &str, now: i64) {
        if let Some(row) = rows(&mut self.tokens).get_mut(token_id) {
            row.token.last_used = Some(now);
        }
        if let Some(member) = rows(&mut self.members).get_mut(member_id) {
            member.last_seen = now;
        }
    }

    pub(crate) fn delete_token(&mut self, id: &str) {
        rows(&mut self.tokens).remove(id);
        self.drop_orphan_sessions();
    }
}
