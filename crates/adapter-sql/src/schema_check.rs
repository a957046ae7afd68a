//! Keeps [`crate::schema`] (hand-kept diesel declarations) in step with the migrations.
//!
//! `schema.rs` is what every query is type-checked against; the migrations are what the
//! database really holds. Nothing in diesel ties the two together at compile time, so each
//! engine crate runs its migrations on a fresh database in a test, reads the catalogue back as
//! [`Column`]s and calls [`differences`]: a column missing on either side, a different type, a
//! different nullability or a different primary key is reported by name. (The same check as
//! diffing `diesel print-schema` output, without needing `diesel_cli` on the machine.)

use std::collections::BTreeMap;

/// One column, as `schema.rs` declares it or as an engine's catalogue describes it, in
/// diesel's vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Column {
    /// The table.
    pub table: String,
    /// The column.
    pub name: String,
    /// The diesel SQL type without `Nullable`: `Text`, `BigInt`, `Integer` or `Bool`.
    pub sql_type: String,
    /// Whether the column admits NULL.
    pub nullable: bool,
    /// The column's position in its table's primary key (1-based), if it is part of it.
    pub primary_key: Option<usize>,
}

impl Column {
    /// A column as an engine's catalogue describes it: `engine_type` in the engine's words
    /// (translated by [`diesel_type`]) and `primary_key` as the catalogue gives the position
    /// (none, or 0, when the column is not part of the key).
    pub fn from_catalogue(
        table: String,
        name: String,
        engine_type: &str,
        nullable: bool,
        primary_key: Option<i64>,
    ) -> Self {
        Self {
            table,
            name,
            sql_type: diesel_type(engine_type),
            nullable,
            primary_key: primary_key
                .and_then(|p| usize::try_from(p).ok())
                .filter(|&p| p > 0),
        }
    }
}

/// The diesel name of an engine's type name (`TEXT`, `bigint`, `int8`, `BOOLEAN`, ...), or the
/// name itself upper-cased when it is none of the portable types the migrations use (so that it
/// shows up as a difference).
///
/// ```
/// assert_eq!(adapter_sql::schema_check::diesel_type("bigint"), "BigInt");
/// assert_eq!(adapter_sql::schema_check::diesel_type("TEXT"), "Text");
/// ```
pub fn diesel_type(engine_type: &str) -> String {
    match engine_type.trim().to_ascii_lowercase().as_str() {
        "text" => "Text".into(),
        "bigint" | "int8" => "BigInt".into(),
        "integer" | "int" | "int4" => "Integer".into(),
        "boolean" | "bool" => "Bool".into(),
        other => other.to_ascii_uppercase(),
    }
}

/// The columns `schema.rs` declares, sorted by table then column.
pub fn declared() -> Vec<Column> {
    let mut columns = parse(include_str!("schema.rs"));
    columns.sort();
    columns
}

/// Parses `diesel::table!` blocks: `name (pk, ...) { column -> Type, ... }`.
fn parse(source: &str) -> Vec<Column> {
    let mut columns = Vec::new();
    let mut table: Option<(String, Vec<String>)> = None;
    for line in source.lines().map(str::trim) {
        if let Some((name, keys)) = line
            .strip_suffix('{')
            .and_then(|head| head.trim().strip_suffix(')'))
            .and_then(|head| head.split_once('('))
        {
            let keys = keys.split(',').map(|k| k.trim().to_owned()).collect();
            table = Some((name.trim().to_owned(), keys));
        } else if let (Some((name, keys)), Some((column, ty))) = (&table, line.split_once("->")) {
            let column = column.trim().to_owned();
            let ty = ty.trim().trim_end_matches(',');
            let (sql_type, nullable) = match ty
                .strip_prefix("Nullable<")
                .and_then(|t| t.strip_suffix('>'))
            {
                Some(inner) => (inner.to_owned(), true),
                None => (ty.to_owned(), false),
            };
            columns.push(Column {
                table: name.clone(),
                primary_key: keys.iter().position(|k| *k == column).map(|i| i + 1),
                name: column,
                sql_type,
                nullable,
            });
        } else if line == "}" {
            // Closes either a table's column list or its `table!` block; both end the table.
            table = None;
        }
    }
    columns
}

/// Checks an engine's catalogue (read after running every migration) against `schema.rs`.
///
/// # Errors
/// A report of every difference, one per line, or of a catalogue that looks unread (too few
/// columns to be the migrated schema).
pub fn check(actual: &[Column]) -> Result<(), String> {
    let declared = declared().len();
    if actual.len() < declared / 2 {
        return Err(format!(
            "the catalogue query found {} columns; schema.rs declares {declared}",
            actual.len()
        ));
    }
    let found = differences(actual);
    if found.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "schema.rs and the migrations differ:\n{}",
            found.join("\n")
        ))
    }
}

/// What differs between the columns `schema.rs` declares and `actual` (an engine's catalogue
/// after running every migration), one line per difference; empty when they agree.
pub fn differences(actual: &[Column]) -> Vec<String> {
    let key = |c: &Column| (c.table.clone(), c.name.clone());
    let declared: BTreeMap<_, _> = declared().into_iter().map(|c| (key(&c), c)).collect();
    let actual: BTreeMap<_, _> = actual.iter().map(|c| (key(c), c.clone())).collect();
    let mut out = Vec::new();
    for ((table, name), want) in &declared {
        match actual.get(&(table.clone(), name.clone())) {
            None => out.push(format!(
                "{table}.{name}: in schema.rs, not in the migrated database"
            )),
            Some(have) if have != want => out.push(format!(
                "{table}.{name}: schema.rs says {want:?}, the database has {have:?}"
            )),
            Some(_) => {}
        }
    }
    for (table, name) in actual.keys() {
        if !declared.contains_key(&(table.clone(), name.clone())) {
            out.push(format!(
                "{table}.{name}: in the migrated database, not in schema.rs"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tables_columns_nullability_and_keys() {
        let columns = parse(
            "diesel::table! {\n    t (a, b) {\n        a -> Text,\n        b -> BigInt,\n        \
             c -> Nullable<Integer>,\n    }\n}\n",
        );
        let shape: Vec<_> = columns
            .iter()
            .map(|c| {
                (
                    c.name.as_str(),
                    c.sql_type.as_str(),
                    c.nullable,
                    c.primary_key,
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                ("a", "Text", false, Some(1)),
                ("b", "BigInt", false, Some(2)),
                ("c", "Integer", true, None)
            ]
        );
    }

    #[test]
    fn every_table_of_schema_rs_is_read() {
        let tables: std::collections::BTreeSet<_> =
            declared().into_iter().map(|c| c.table).collect();
        let declared_blocks = include_str!("schema.rs").matches("diesel::table!").count();
        assert_eq!(tables.len(), declared_blocks);
        assert!(tables.contains("flags") && tables.contains("account"));
    }

    #[test]
    fn reports_each_kind_of_difference() {
        let mut actual = declared();
        let removed = actual.remove(0);
        actual[0].nullable = !actual[0].nullable;
        actual.push(Column {
            table: "flags".into(),
            name: "extra".into(),
            sql_type: "Text".into(),
            nullable: false,
            primary_key: None,
        });
        let found = differences(&actual);
        assert_eq!(found.len(), 3, "{found:#?}");
        let flipped = &actual[0];
        assert_eq!(
            found[0],
            format!(
                "{}.{}: in schema.rs, not in the migrated database",
                removed.table, removed.name
            )
        );
        assert!(found[1].starts_with(&format!(
            "{}.{}: schema.rs says",
            flipped.table, flipped.name
        )));
        assert_eq!(
            found[2],
            "flags.extra: in the migrated database, not in schema.rs"
        );
    }
}
