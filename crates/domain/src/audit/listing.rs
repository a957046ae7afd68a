//! Listing the audit log: the query (`GET /auditlog`'s parameters), the bounded window one
//! listing reads, and the cursor a `next` link carries.

use super::AuditEntry;
use crate::query::QueryError;

/// The most entries one listing of the audit log reads to fill its page, whatever its filters
/// (`q`, `spec`) leave: a search costs the same on a log of a thousand entries and of millions.
/// A page that stops there holds what matched (perhaps nothing) and says where to go on
/// ([`AuditPage::next_before`]).
pub const MAX_AUDIT_ENTRIES_READ: usize = 1_000;

/// One page of the audit log, newest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditPage {
    /// The entries that matched, at most the query's `limit`.
    pub entries: Vec<AuditEntry>,
    /// Where the next page starts (its `before` and `beforeId`: the date and `_id` of the last
    /// entry read), when the listing stopped before the end of the log: its page was full, or
    /// it read [`MAX_AUDIT_ENTRIES_READ`] entries.
    pub next_before: Option<(i64, String)>,
}

/// The entries one listing reads ([`read_window`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditWindow<T> {
    /// The rows to read, newest first.
    pub rows: Vec<T>,
    /// Where the next listing starts (the last row's date and `_id`), when there are more.
    pub next_before: Option<(i64, String)>,
}

/// The rows one listing reads, of `rows` (newest first by date, then `_id`; at most
/// [`MAX_AUDIT_ENTRIES_READ`]` + 1` of them: one more tells that there are more): at most
/// [`MAX_AUDIT_ENTRIES_READ`], and where the next listing starts: after the last row kept, by
/// its date and `_id` (entries of one millisecond are told apart by `_id`, so none is lost).
///
/// ```
/// use domain::audit::{read_window, MAX_AUDIT_ENTRIES_READ};
/// let few: Vec<(i64, String)> = vec![(30, "c".into()), (20, "b".into())];
/// let window = read_window(few, |(d, id)| (*d, id.clone()));
/// assert_eq!((window.rows.len(), window.next_before), (2, None));
/// let many: Vec<(i64, String)> =
///     (0..=MAX_AUDIT_ENTRIES_READ as i64).map(|i| (7, format!("{:04}", 9999 - i))).collect();
/// let window = read_window(many, |(d, id)| (*d, id.clone()));
/// assert_eq!(window.rows.len(), MAX_AUDIT_ENTRIES_READ);
/// assert_eq!(window.next_before, window.rows.last().cloned());
/// ```
pub fn read_window<T>(mut rows: Vec<T>, key: impl Fn(&T) -> (i64, String)) -> AuditWindow<T> {
    if rows.len() <= MAX_AUDIT_ENTRIES_READ {
        return AuditWindow {
            rows,
            next_before: None,
        };
    }
    rows.truncate(MAX_AUDIT_ENTRIES_READ);
    let next_before = rows.last().map(&key);
    AuditWindow { rows, next_before }
}

/// Whether an entry at `date` with `_id` `id` comes after the cursor `before` (a date, and the
/// `_id` an entry of that millisecond must be below), newest first.
///
/// ```
/// use domain::audit::before_cursor;
/// assert!(before_cursor(5, "b", 6, None));
/// assert!(!before_cursor(6, "b", 6, None));
/// assert!(before_cursor(6, "a", 6, Some("b")));
/// assert!(!before_cursor(6, "c", 6, Some("b")));
/// ```
pub fn before_cursor(date: i64, id: &str, before: i64, before_id: Option<&str>) -> bool {
    date < before || (date == before && before_id.is_some_and(|b| id < b))
}

/// `GET /auditlog` parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditQuery {
    /// Only entries strictly before this time (epoch ms).
    pub before: Option<i64>,
    /// With `before`, entries of that very millisecond whose `_id` is below this one too: the
    /// cursor a `next` link carries (`beforeId`), so that a page ends between two entries of one
    /// millisecond without losing the others.
    pub before_id: Option<String>,
    /// Only entries strictly after this time (epoch ms).
    pub after: Option<i64>,
    /// Substring of name or description (case-insensitive).
    pub q: Option<String>,
    /// Resource specifier pattern (`*` globs) one of the entry's resources must match.
    pub spec: Option<String>,
    /// 1..=20.
    pub limit: u32,
}

impl AuditQuery {
    /// Parses the query-string values.
    ///
    /// ```
    /// use domain::audit::AuditQuery;
    /// let q = AuditQuery::parse(Some("1700000000000"), None, Some("Flag"), Some("proj/*"), None).unwrap();
    /// assert_eq!((q.before, q.limit, q.q.as_deref()), (Some(1_700_000_000_000), 10, Some("flag")));
    /// assert!(AuditQuery::parse(None, None, None, None, Some("21")).is_err());
    /// assert!(AuditQuery::parse(None, None, None, Some("proj/*:"), None).is_err());
    /// ```
    ///
    /// # Errors
    /// [`QueryError`] for a time that is not an integer, a limit outside 1..=20 or a `spec`
    /// that is not a resource specifier ([`crate::policy::check_specifier`]).
    pub fn parse(
        before: Option<&str>,
        after: Option<&str>,
        q: Option<&str>,
        spec: Option<&str>,
        limit: Option<&str>,
    ) -> Result<Self, QueryError> {
        let time = |name: &str, v: Option<&str>| {
            v.map(|v| {
                v.trim().parse::<i64>().map_err(|_| {
                    QueryError(format!("{name} must be epoch milliseconds, not '{v}'"))
                })
            })
            .transpose()
        };
        let limit = match limit {
            None => 10,
            Some(v) => match v.trim().parse::<u32>() {
                Ok(n) if (1..=20).contains(&n) => n,
                _ => {
                    return Err(QueryError(format!(
                        "limit must be an integer from 1 to 20, not '{v}'"
                    )))
                }
            },
        };
        let spec = spec.filter(|s| !s.is_empty());
        if let Some(spec) = spec {
            crate::policy::check_specifier(spec)
                .map_err(|reason| QueryError(format!("spec: {reason}")))?;
        }
        Ok(Self {
            before: time("before", before)?,
            before_id: None,
            after: time("after", after)?,
            q: q.filter(|q| !q.is_empty()).map(str::to_lowercase),
            spec: spec.map(str::to_owned),
            limit,
        })
    }
}

impl AuditQuery {
    /// The same query, going on from the cursor `before_id` of a `next` link (an entry `_id`).
    ///
    /// # Errors
    /// [`QueryError`] for text that is no entry `_id`, or without `before`.
    pub fn with_before_id(mut self, before_id: Option<&str>) -> Result<Self, QueryError> {
        if let Some(id) = before_id {
            crate::id::AuditEntryId::parse(id).map_err(|_| {
                QueryError(format!("beforeId must be an audit entry _id, not '{id}'"))
            })?;
            if self.before.is_none() {
                return Err(QueryError("beforeId goes with before".into()));
            }
            self.before_id = Some(id.to_owned());
        }
        Ok(self)
    }
}
