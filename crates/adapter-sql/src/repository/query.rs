//! What the aggregate repositories share: error mapping, paging, sorting, chunking of long
//! `IN (...)` lists and multi-row inserts, search filters, tag filters and row locks.

use std::collections::BTreeMap;

use diesel::prelude::*;
use domain::role::Role;
use ports::{Locked, StoreError, StoreResult};

use crate::map_error;

pub(super) trait OrStoreError<T> {
    fn store(self) -> StoreResult<T>;
}

impl<T> OrStoreError<T> for QueryResult<T> {
    fn store(self) -> StoreResult<T> {
        self.map_err(map_error)
    }
}

pub(super) fn corrupt(what: &str, err: impl std::fmt::Display) -> StoreError {
    StoreError::Other(format!("stored {what} cannot be read: {err}"))
}

/// The text that `query` filters search: key and name, lower-cased, on separate lines so that a
/// match never spans both.
pub(super) fn search_text(key: &str, name: &str) -> String {
    format!("{}\n{}", key.to_lowercase(), name.to_lowercase())
}

/// A LIKE pattern matching `text` anywhere, with LIKE's wildcards escaped.
/// The pattern a `search` column (lower-cased text) is matched with: `text` lower-cased, so a
/// query matches whatever its case (the domain's parsers lower-case it too, but a query built
/// directly need not).
pub(super) fn search_pattern(text: &str) -> String {
    contains_pattern(&text.to_lowercase())
}

pub(super) fn contains_pattern(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

pub(super) fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(super) fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

pub(super) fn index_i32(i: usize) -> i32 {
    i32::try_from(i).unwrap_or(i32::MAX)
}

/// Orders a boxed list query by `column`, then `tiebreak` (so pages are stable), both in
/// `direction`.
macro_rules! sorted {
    ($query:expr, $direction:expr, $column:expr, $tiebreak:expr) => {
        match $direction {
            ::domain::query::Direction::Ascending => $query.order(($column.asc(), $tiebreak.asc())),
            ::domain::query::Direction::Descending => {
                $query.order(($column.desc(), $tiebreak.desc()))
            }
        }
    };
}
pub(super) use sorted;

/// Loads one page (`limit`/`offset` of a [`Page`]) of a list query as rows of type `$row`.
macro_rules! load_page {
    ($conn:expr, $query:expr, $page:expr, $row:ty) => {{
        let rows: Vec<$row> = $query
            .limit(i64::from($page.limit))
            .offset($crate::repository::query::to_i64($page.offset))
            .select(<$row>::as_select())
            .load($conn)
            .store()?;
        rows
    }};
}
pub(super) use load_page;

/// Locks the rows a query of one text column selects until the transaction ends, and returns
/// that column. PostgreSQL: `SELECT ... FOR NO KEY UPDATE`, which locks rows in the order the
/// query returns them (callers order by id so that two transactions cannot deadlock) and, as
/// keys never change, leaves foreign-key checks of other transactions free to proceed. SQLite: a
/// plain read, because `SqlStore` runs its write transactions one at a time.
macro_rules! lock_rows {
    ($conn:expr, $query:expr) => {{
        let locked: Vec<String> = match &mut *$conn {
            $crate::DbConnection::Pg(conn) => $query.for_no_key_update().load(conn),
            $crate::DbConnection::Sqlite(conn) => $query.load(conn),
        }
        .store()?;
        locked
    }};
}
pub(super) use lock_rows;

/// Loads `$query` on each engine's own connection: on PostgreSQL an `eq_any` is then `= ANY($1)`,
/// one text whatever the number of values, which diesel prepares once and reuses (through the
/// two-engine connection it is an `IN (...)` list, prepared anew every time).
macro_rules! load_per_engine {
    ($conn:expr, $query:expr) => {
        match &mut *$conn {
            $crate::DbConnection::Pg(conn) => $query.load(conn),
            $crate::DbConnection::Sqlite(conn) => $query.load(conn),
        }
        .store()
    };
}
pub(super) use load_per_engine;

/// A "carries all of these tags" filter: the distinct tags and their number, for one sub-query
/// `owner IN (SELECT owner FROM tags WHERE tag IN (...) GROUP BY owner HAVING COUNT(*) = n)`
/// (tag tables have one row per owner and tag). One sub-query whatever the number of tags: a
/// nested sub-query per tag made PostgreSQL's planner take seconds and SQLite's expression tree
/// overflow. `None` without tags.
pub(super) fn all_of(tags: &[String]) -> Option<(Vec<String>, i64)> {
    let mut tags = tags.to_vec();
    tags.sort();
    tags.dedup();
    let n = i64::try_from(tags.len()).ok()?;
    (n > 0).then_some((tags, n))
}

/// Narrows a boxed list query to the owners that carry every tag of `$tags` (see [`all_of`]):
/// `$owner` is the query's owner column, `$tag_table` the tag table, `$tag_owner` its owner
/// column, and the optional `column = value` pairs narrow the tag table further (to a project,
/// an environment).
macro_rules! with_all_tags {
    ($query:expr, $tags:expr, $owner:expr, $tag_table:ident . $tag_owner:ident $(, $column:ident = $value:expr)*) => {
        match $crate::repository::query::all_of($tags) {
            Some((tags, n)) => $query.filter(
                $owner.eq_any(
                    $tag_table::table
                        $(.filter($tag_table::$column.eq($value)))*
                        .filter($tag_table::tag.eq_any(tags))
                        .group_by($tag_table::$tag_owner)
                        .having(diesel::dsl::count_star().eq(n))
                        .select($tag_table::$tag_owner),
                ),
            ),
            None => $query,
        }
    };
}
pub(super) use with_all_tags;

/// The object `read` returns, held until the transaction ends: `locked` are the rows a
/// [`lock_rows!`] query just locked (none: there is no such object).
pub(super) fn held<T>(
    locked: &[String],
    read: impl FnOnce() -> StoreResult<Option<T>>,
) -> StoreResult<Option<Locked<T>>> {
    if locked.is_empty() {
        return Ok(None);
    }
    Ok(read()?.map(Locked::assume_locked))
}

/// Tags by owner, from `(owner id, tag)` rows.
pub(super) fn group_tags(rows: Vec<(String, String)>) -> BTreeMap<String, Vec<String>> {
    let mut tags: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (owner, tag) in rows {
        tags.entry(owner).or_default().push(tag);
    }
    tags
}

/// Runs a statement that diesel builds differently per engine (multi-row `VALUES`) on the
/// concrete connection.
macro_rules! execute_on_engine {
    ($conn:expr, $statement:expr) => {
        match &mut *$conn {
            $crate::DbConnection::Pg(conn) => $statement.execute(conn),
            $crate::DbConnection::Sqlite(conn) => $statement.execute(conn),
        }
    };
}
pub(super) use execute_on_engine;

/// Rows per multi-row `INSERT`, and keys per `IN (...)` list. Every row type has at most 16
/// columns, so a statement binds at most 16,000 parameters: under SQLite's limit (32,766) and
/// PostgreSQL's (65,535), whatever the number of rows. A flag's configurations for many
/// environments still go in one statement.
pub(super) const ROWS_PER_STATEMENT: usize = 1000;

/// Inserts `rows` into `table` in multi-row statements of [`ROWS_PER_STATEMENT`] rows; nothing
/// when there are none (an empty `VALUES` list is not valid SQL).
macro_rules! insert_rows {
    ($conn:expr, $table:ident, $rows:expr) => {{
        let rows = $rows;
        for chunk in rows.chunks($crate::repository::query::ROWS_PER_STATEMENT) {
            $crate::repository::query::execute_on_engine!(
                $conn,
                diesel::insert_into($table::table).values(chunk)
            )
            .store()?;
        }
    }};
}
pub(super) use insert_rows;

/// Runs `load` on `keys` in slices of [`ROWS_PER_STATEMENT`] (so that an `IN (...)` list never
/// passes an engine's bound-parameter limit) and concatenates the results; no query for no keys.
pub(super) fn chunked<K, T>(
    keys: &[K],
    mut load: impl FnMut(&[K]) -> StoreResult<Vec<T>>,
) -> StoreResult<Vec<T>> {
    let mut all = Vec::new();
    for chunk in keys.chunks(ROWS_PER_STATEMENT) {
        all.extend(load(chunk)?);
    }
    Ok(all)
}

/// Inserts the tags of one owner (a new one: nothing to replace) into a tag table: one multi-row
/// insert.
macro_rules! insert_tags {
    ($conn:expr, $table:ident, [$($column:ident = $value:expr),+], $tags:expr) => {{
        let rows: Vec<_> = $tags.iter().map(|tag| ($($table::$column.eq($value),)+ $table::tag.eq(tag))).collect();
        $crate::repository::query::insert_rows!($conn, $table, rows);
    }};
}
pub(super) use insert_tags;

/// Replaces the tags of one owner in a tag table: one delete, one multi-row insert.
macro_rules! replace_tags {
    ($conn:expr, $table:ident, [$($column:ident = $value:expr),+], $tags:expr) => {{
        diesel::delete($table::table$(.filter($table::$column.eq($value)))+).execute($conn).store()?;
        $crate::repository::query::insert_tags!($conn, $table, [$($column = $value),+], $tags);
    }};
}
pub(super) use replace_tags;

pub(super) fn parse_role(text: &str) -> StoreResult<Role> {
    text.parse().map_err(|e| corrupt("role", e))
}

diesel::define_sql_function! {
    /// SQL `lower()`, in both engines.
    fn lower(text: diesel::sql_types::Text) -> diesel::sql_types::Text;
}

/// The backend of [`crate::DbConnection`]: both engines.
pub(super) type Backend = crate::connection::MultiBackend;
