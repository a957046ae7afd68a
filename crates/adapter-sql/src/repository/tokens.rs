//! [`TokenRepository`] on diesel.

use diesel::prelude::*;
use domain::id::{CustomRoleId, MemberId, TokenId};
use domain::policy::Statement;
use domain::query::Page;
use domain::token::Token;
use ports::{Listed, Locked, StoreError, StoreResult, TokenMatch, TokenRepository};

use crate::schema::{members, tokens};

use super::members::MemberRow;
use super::query::*;
use super::SqlRepository;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = tokens)]
struct TokenRow {
    id: String,
    secret_hash: String,
    member_id: String,
    name: String,
    description: String,
    role: String,
    service_token: bool,
    default_api_version: i32,
    creation_date: i64,
    last_modified: i64,
    last_used: Option<i64>,
    ending: String,
    previous_secret_hash: Option<String>,
    previous_expires_at: Option<i64>,
    /// Custom role `_id`s, each between newlines (empty for none).
    custom_role_ids: String,
    /// Inline policy statements as JSON (empty for none).
    inline_role: String,
}

/// The stored form of custom role `_id`s: each between newlines (see the migration).
pub(super) fn stored_ids(ids: &[CustomRoleId]) -> String {
    if ids.is_empty() {
        String::new()
    } else {
        let ids: Vec<&str> = ids.iter().map(CustomRoleId::as_str).collect();
        format!("\n{}\n", ids.join("\n"))
    }
}

/// The stored form of an inline role (empty for none).
fn stored_inline(statements: &[Statement]) -> StoreResult<String> {
    if statements.is_empty() {
        return Ok(String::new());
    }
    serde_json::to_string(statements)
        .map_err(|e| StoreError::Other(format!("a token's inline role: {e}")))
}

impl TokenRow {
    fn from_token(t: &Token, secret_hash: &str) -> StoreResult<Self> {
        Ok(Self {
            id: t.id.to_string(),
            secret_hash: secret_hash.to_owned(),
            member_id: t.member_id.to_string(),
            name: t.name.clone(),
            description: t.description.clone(),
            role: t.role.as_str().to_owned(),
            service_token: t.service_token,
            default_api_version: t.default_api_version,
            creation_date: t.creation_date,
            last_modified: t.last_modified,
            last_used: t.last_used,
            ending: t.ending.clone(),
            previous_secret_hash: None,
            previous_expires_at: None,
            custom_role_ids: stored_ids(&t.custom_role_ids),
            inline_role: stored_inline(&t.inline_role)?,
        })
    }

    fn into_token(self) -> StoreResult<Token> {
        Ok(Token {
            role: parse_role(&self.role)?,
            id: TokenId::from_stored(self.id),
            member_id: MemberId::from_stored(self.member_id),
            name: self.name,
            description: self.description,
            service_token: self.service_token,
            default_api_version: self.default_api_version,
            creation_date: self.creation_date,
            last_modified: self.last_modified,
            last_used: self.last_used,
            ending: self.ending,
            custom_role_ids: self
                .custom_role_ids
                .split('\n')
                .filter(|id| !id.is_empty())
                .map(|id| CustomRoleId::from_stored(id.to_owned()))
                .collect(),
            inline_role: if self.inline_role.is_empty() {
                Vec::new()
            } else {
                serde_json::from_str(&self.inline_role)
                    .map_err(|e| StoreError::Other(format!("a token's inline role: {e}")))?
            },
        })
    }
}

impl TokenRepository for SqlRepository<'_> {
    fn reassign_service_tokens(&mut self, from: &MemberId, to: &MemberId) -> StoreResult<()> {
        diesel::update(
            tokens::table
                .filter(tokens::member_id.eq(from.as_str()))
                .filter(tokens::service_token.eq(true)),
        )
        .set(tokens::member_id.eq(to.as_str()))
        .execute(self.conn)
        .store()?;
        Ok(())
    }

    fn insert_token(&mut self, token: &Token, secret_hash: &str) -> StoreResult<()> {
        diesel::insert_into(tokens::table)
            .values(TokenRow::from_token(token, secret_hash)?)
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn list_secret_hashes(&mut self, now: i64) -> StoreResult<Vec<String>> {
        let rows: Vec<(String, Option<String>, Option<i64>)> = tokens::table
            .select((
                tokens::secret_hash,
                tokens::previous_secret_hash,
                tokens::previous_expires_at,
            ))
            .load(self.conn)
            .store()?;
        Ok(rows
            .into_iter()
            .flat_map(|(current, previous, expires)| {
                let previous = previous.filter(|_| expires.is_some_and(|at| at > now));
                std::iter::once(current).chain(previous)
            })
            .collect())
    }

    fn find_token_by_hash(
        &mut self,
        secret_hash: &str,
        now: i64,
    ) -> StoreResult<Option<TokenMatch>> {
        let row: Option<(TokenRow, MemberRow)> = tokens::table
            .inner_join(members::table)
            .filter(
                tokens::secret_hash
                    .eq(secret_hash)
                    .or(tokens::previous_secret_hash
                        .eq(secret_hash)
                        .and(tokens::previous_expires_at.gt(now))),
            )
            .select((TokenRow::as_select(), MemberRow::as_select()))
            .first(self.conn)
            .optional()
            .store()?;
        row.map(|(token, member)| {
            let previous = (token.secret_hash != secret_hash)
                .then_some(token.previous_expires_at)
                .flatten();
            let member = self
                .with_teams_one(Some(member.into_member()?))?
                .ok_or_else(|| ports::StoreError::Other("a member vanished".into()))?;
            Ok(TokenMatch {
                token: token.into_token()?,
                member,
                previous_secret_expires_at: previous,
            })
        })
        .transpose()
    }

    fn get_token(&mut self, id: &TokenId) -> StoreResult<Option<Token>> {
        let row: Option<TokenRow> = tokens::table
            .find(id.as_str())
            .select(TokenRow::as_select())
            .first(self.conn)
            .optional()
            .store()?;
        row.map(TokenRow::into_token).transpose()
    }

    fn lock_token(&mut self, id: &TokenId) -> StoreResult<Option<Locked<Token>>> {
        if lock_rows!(
            self.conn,
            tokens::table.find(id.as_str()).select(tokens::id)
        )
        .is_empty()
        {
            return Ok(None);
        }
        Ok(self.get_token(id)?.map(Locked::assume_locked))
    }

    fn list_tokens(
        &mut self,
        member_id: Option<&MemberId>,
        page: Page,
    ) -> StoreResult<Listed<Token>> {
        let visible = || {
            let query = tokens::table.into_boxed::<Backend>();
            match member_id {
                Some(member) => query.filter(
                    tokens::service_token
                        .eq(true)
                        .or(tokens::member_id.eq(member.as_str())),
                ),
                None => query,
            }
        };
        let total: i64 = visible().count().get_result(self.conn).store()?;
        let rows = load_page!(
            self.conn,
            visible().order((tokens::creation_date.asc(), tokens::id.asc())),
            page,
            TokenRow
        );
        Ok(Listed::new(
            rows.into_iter()
                .map(TokenRow::into_token)
                .collect::<StoreResult<_>>()?,
            count(total),
        ))
    }

    fn tokens_with_custom_role(
        &mut self,
        id: &CustomRoleId,
        limit: u32,
    ) -> StoreResult<Vec<String>> {
        let held = stored_ids(std::slice::from_ref(id));
        tokens::table
            .filter(
                tokens::custom_role_ids
                    .like(contains_pattern(&held))
                    .escape('\\'),
            )
            .order(tokens::name)
            .limit(i64::from(limit))
            .select(tokens::name)
            .load(self.conn)
            .store()
    }

    fn update_token(&mut self, token: &Locked<Token>) -> StoreResult<()> {
        diesel::update(tokens::table.find(token.id.as_str()))
            .set((
                tokens::name.eq(&token.name),
                tokens::description.eq(&token.description),
                tokens::role.eq(token.role.as_str()),
                tokens::default_api_version.eq(token.default_api_version),
                tokens::last_modified.eq(token.last_modified),
                tokens::ending.eq(&token.ending),
                tokens::custom_role_ids.eq(stored_ids(&token.custom_role_ids)),
                tokens::inline_role.eq(stored_inline(&token.inline_role)?),
            ))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn reset_token_secret(
        &mut self,
        token: &Locked<Token>,
        secret_hash: &str,
        previous_valid_until: Option<i64>,
    ) -> StoreResult<()> {
        let current: String = tokens::table
            .find(token.id.as_str())
            .select(tokens::secret_hash)
            .first(self.conn)
            .store()?;
        diesel::update(tokens::table.find(token.id.as_str()))
            .set((
                tokens::secret_hash.eq(secret_hash),
                tokens::ending.eq(&token.ending),
                tokens::last_modified.eq(token.last_modified),
                tokens::previous_secret_hash.eq(previous_valid_until.map(|_| current)),
                tokens::previous_expires_at.eq(previous_valid_until),
            ))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn record_token_use(
        &mut self,
        token_id: &TokenId,
        member_id: &MemberId,
        now: i64,
    ) -> StoreResult<()> {
        diesel::update(tokens::table.find(token_id.as_str()))
            .set(tokens::last_used.eq(now))
            .execute(self.conn)
            .store()?;
        diesel::update(members::table.find(member_id.as_str()))
            .set(members::last_seen.eq(now))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn delete_token(&mut self, token: &Locked<Token>) -> StoreResult<()> {
        diesel::delete(tokens::table.find(token.id.as_str()))
            .execute(self.conn)
            .store()?;
        Ok(())
    }
}
