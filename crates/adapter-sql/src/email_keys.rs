//! Keys for the emails of members written before emails had one.

use crate::{schema, DbConnection};

/// Keys the members written before emails had a key (their `email_key` is empty after the
/// migration that added it): the key is [`domain::member::email_key`], which neither engine's
/// `lower()` computes alike. Run after the migrations, on either engine; it reads only the rows
/// without a key. A member whose key another already holds (two emails that SQLite told apart by
/// the case of a non-ASCII letter) keeps none: it still signs in and lists, but no longer
/// blocks an invitation of the same email.
///
/// # Errors
/// Database errors.
pub fn fold_email_keys(conn: &mut DbConnection) -> diesel::QueryResult<()> {
    use diesel::prelude::*;
    use schema::members;
    let rows: Vec<(String, String)> = members::table
        .filter(members::email_key.is_null())
        .select((members::id, members::email))
        .load(conn)?;
    for (id, email) in rows {
        let key = domain::member::email_key(&email);
        let taken: i64 = members::table
            .filter(members::email_key.eq(&key))
            .count()
            .get_result(conn)?;
        if taken == 0 {
            diesel::update(members::table.filter(members::id.eq(&id)))
                .set(members::email_key.eq(&key))
                .execute(conn)?;
        }
    }
    Ok(())
}
