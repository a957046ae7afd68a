//! Statements of fixed text on PostgreSQL, prepared once per connection and reused.
//!
//! Diesel prepares anew (the server parses and plans it, every time) any statement it cannot
//! prove to have one text: every `UPDATE` (`diesel::update` marks itself unsafe to cache), raw
//! `sql_query` text, multi-row inserts. Measured with `pg_stat_statements` during the bench's
//! toggles, planning took a third of the time PostgreSQL spent on them. The hot write statements
//! are written here instead: a [`Fixed`] statement has one text per [`Statement`] type, so
//! diesel's statement cache keys it by that type and the server plans it once per connection
//! (then uses its generic plan when that is as good).
//!
//! A generic plan is made once, from the tables' sizes at the time, and kept by the connection
//! until something invalidates it (an `ANALYZE`, a schema change). For a statement that joins
//! bound arrays to a table, the plan made while the table was small (a hash join over a
//! sequential scan) is kept after the table has grown a thousandfold: the bench's contention
//! case, right after its creations, scanned 100,000 flag configurations per batch. Such a
//! statement is declared [`Statement::PLANNED_EACH_TIME`]: it is prepared unnamed and planned
//! with its binds at every execution, from the sizes of the moment (a batch's statement, so a
//! plan per batch of changes, not per change).

use std::marker::PhantomData;

use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::result::Error as DieselError;
use diesel::sql_types::{Array, BigInt, Bool, Integer, Nullable, Text, Untyped};
use diesel::{PgConnection, QueryResult, RunQueryDsl};

/// A statement's text, `?` standing for each bind (in order). One type per text: the type is
/// what the statement is cached by.
pub(crate) trait Statement: 'static {
    /// The text.
    const SQL: &'static str;

    /// Planned at every execution, with its binds, instead of once per connection (see the
    /// module's documentation).
    const PLANNED_EACH_TIME: bool = false;
}

/// A value bound to a `?` of a [`Statement`]: always bound with the same SQL type at the same
/// place, as a cached statement needs.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Bind<'a> {
    Text(&'a str),
    Integer(i32),
    TextArray(&'a [String]),
    BigIntArray(&'a [i64]),
    IntegerArray(&'a [i32]),
    BoolArray(&'a [bool]),
    NullableTextArray(&'a [Option<String>]),
}

/// [`Statement`] `S` with its binds, to run on a [`PgConnection`] (`execute`, `load`).
#[derive(Debug)]
pub(crate) struct Fixed<'a, S> {
    binds: Vec<Bind<'a>>,
    statement: PhantomData<S>,
}

impl<'a, S: Statement> Fixed<'a, S> {
    pub(crate) fn new(binds: Vec<Bind<'a>>) -> Self {
        Self {
            binds,
            statement: PhantomData,
        }
    }
}

impl<S: Statement> QueryId for Fixed<'_, S> {
    type QueryId = S;
    const HAS_STATIC_QUERY_ID: bool = !S::PLANNED_EACH_TIME;
}

impl<S: Statement> QueryFragment<Pg> for Fixed<'_, S> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        if S::PLANNED_EACH_TIME {
            out.unsafe_to_cache_prepared();
        }
        let mut pieces = S::SQL.split('?');
        if S::SQL.matches('?').count() != self.binds.len() {
            return Err(DieselError::QueryBuilderError(
                format!("{} binds for the statement {}", self.binds.len(), S::SQL).into(),
            ));
        }
        out.push_sql(pieces.next().unwrap_or_default());
        for (bind, piece) in self.binds.iter().zip(pieces) {
            match bind {
                Bind::Text(value) => out.push_bind_param::<Text, _>(value)?,
                Bind::Integer(value) => out.push_bind_param::<Integer, _>(value)?,
                Bind::TextArray(value) => out.push_bind_param::<Array<Text>, _>(value)?,
                Bind::BigIntArray(value) => out.push_bind_param::<Array<BigInt>, _>(value)?,
                Bind::IntegerArray(value) => out.push_bind_param::<Array<Integer>, _>(value)?,
                Bind::BoolArray(value) => out.push_bind_param::<Array<Bool>, _>(value)?,
                Bind::NullableTextArray(value) => {
                    out.push_bind_param::<Array<Nullable<Text>>, _>(value)?;
                }
            }
            out.push_sql(piece);
        }
        Ok(())
    }
}

impl<S: Statement> Query for Fixed<'_, S> {
    type SqlType = Untyped;
}

impl<S: Statement> RunQueryDsl<PgConnection> for Fixed<'_, S> {}

/// Declares a [`Statement`] type named `$name` with text `$sql`; `planned each time` before the
/// name declares it [`Statement::PLANNED_EACH_TIME`].
macro_rules! statement {
    ($(#[$doc:meta])* $name:ident = $sql:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub(crate) struct $name;
        impl $crate::repository::fixed::Statement for $name {
            const SQL: &'static str = $sql;
        }
    };
    ($(#[$doc:meta])* planned each time $name:ident = $sql:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub(crate) struct $name;
        impl $crate::repository::fixed::Statement for $name {
            const SQL: &'static str = $sql;
            const PLANNED_EACH_TIME: bool = true;
        }
    };
}
pub(crate) use statement;
