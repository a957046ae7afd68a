//! List queries: filters, sorting and paging, parsed from query-string values.
//!
//! `filter` is comma-separated `field:value` pairs combined with AND. `query` matches a
//! case-insensitive substring of name or key; `tags` values joined by `+` must all be present;
//! `keys` values joined by `|` match any. An unknown field or a pair without `:` is refused.

/// A query-string value that cannot be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QueryError(pub String);

/// The largest page: a larger `limit` is served as this many items.
pub const MAX_LIMIT: u32 = 100;

/// A page of a list: `limit` items after skipping `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// 1..=100.
    pub limit: u32,
    /// Items skipped.
    pub offset: u64,
}

impl Page {
    /// Parses `limit` and `offset`. A `limit` above [`MAX_LIMIT`] is capped to it (the reference
    /// documents no maximum for these lists, so a client may ask for more and gets a full page).
    ///
    /// ```
    /// use domain::query::Page;
    /// assert_eq!(Page::parse(None, None, 20).unwrap(), Page { limit: 20, offset: 0 });
    /// assert_eq!(Page::parse(Some("5"), Some("10"), 20).unwrap(), Page { limit: 5, offset: 10 });
    /// assert_eq!(Page::parse(Some("500"), None, 20).unwrap().limit, 100);
    /// assert!(Page::parse(Some("0"), None, 20).is_err());
    /// assert!(Page::parse(Some("2147483648"), None, 20).is_err());
    /// assert!(Page::parse(Some("-5"), None, 20).is_err());
    /// assert!(Page::parse(Some("1.5"), None, 20).is_err());
    /// assert!(Page::parse(None, Some("-1"), 20).is_err());
    /// ```
    ///
    /// # Errors
    /// [`QueryError`] for a limit that is not a positive integer or an offset that is not a
    /// non-negative integer.
    pub fn parse(
        limit: Option<&str>,
        offset: Option<&str>,
        default_limit: u32,
    ) -> Result<Self, QueryError> {
        let limit = match limit {
            None => default_limit,
            // Up to i32::MAX, as the document's int32 says; above MAX_LIMIT a full page.
            Some(text) => match parse_count(text) {
                Some(n) if n >= 1 && n <= i32::MAX as u64 => {
                    u32::try_from(n).unwrap_or(MAX_LIMIT).min(MAX_LIMIT)
                }
                _ => {
                    return Err(QueryError(format!(
                        "limit must be an integer from 1 to {} (at most {MAX_LIMIT} items are returned), not '{text}'",
                        i32::MAX
                    )))
                }
            },
        };
        let offset = match offset {
            None => 0,
            // At most i64::MAX: the document declares an int64, and stores count in i64.
            Some(text) => text
                .trim()
                .parse::<i64>()
                .ok()
                .and_then(|offset| u64::try_from(offset).ok())
                .ok_or_else(|| {
                    QueryError(format!(
                        "offset must be an integer from 0 to {}, not '{text}'",
                        i64::MAX
                    ))
                })?,
        };
        Ok(Self { limit, offset })
    }
}

/// A non-negative decimal integer; one too large for `u64` reads as `u64::MAX`.
fn parse_count(text: &str) -> Option<u64> {
    let digits = text.trim();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse::<u64>().unwrap_or(u64::MAX))
}

/// Sort direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Smallest first.
    Ascending,
    /// Largest first (`-` prefix).
    Descending,
}

/// A sort field and direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort<F> {
    /// The field.
    pub field: F,
    /// The direction.
    pub direction: Direction,
}

fn parse_sort<F: Copy>(
    value: Option<&str>,
    fields: &[(&str, F)],
    default: Sort<F>,
) -> Result<Sort<F>, QueryError> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(default);
    };
    let (direction, name) = match value.strip_prefix('-') {
        Some(name) => (Direction::Descending, name),
        None => (Direction::Ascending, value),
    };
    fields
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, field)| Sort {
            field: *field,
            direction,
        })
        .ok_or_else(|| {
            let names: Vec<&str> = fields.iter().map(|(n, _)| *n).collect();
            QueryError(format!(
                "cannot sort by '{name}': sort by one of {}",
                names.join(", ")
            ))
        })
}

/// Splits `filter` into `(field, value)` pairs, refusing fields not in `allowed`.
///
/// ```
/// use domain::query::parse_filter;
/// let pairs = parse_filter("query:abc,tags:a+b", &["query", "tags"]).unwrap();
/// assert_eq!(pairs, vec![("query".to_string(), "abc".to_string()), ("tags".to_string(), "a+b".to_string())]);
/// assert!(parse_filter("color:red", &["query"]).is_err());
/// assert!(parse_filter("oops", &["query"]).is_err());
/// ```
///
/// # Errors
/// [`QueryError`] naming a pair without `:` or an unknown field.
pub fn parse_filter(filter: &str, allowed: &[&str]) -> Result<Vec<(String, String)>, QueryError> {
    filter
        .split(',')
        .filter(|part| !part.trim().is_empty())
        .map(|part| {
            let (field, value) = part.split_once(':').ok_or_else(|| {
                QueryError(format!("filter '{part}' is not of the form field:value"))
            })?;
            let field = field.trim();
            if !allowed.contains(&field) {
                return Err(QueryError(format!(
                    "unknown filter field '{field}': filter by one of {}",
                    allowed.join(", ")
                )));
            }
            Ok((field.to_owned(), value.trim().to_owned()))
        })
        .collect()
}

/// The most values one list filter (`tags`, `keys`, `role`, `email`, repeated `env`) takes.
pub const MAX_FILTER_VALUES: usize = 100;

/// Refuses a list filter with more than [`MAX_FILTER_VALUES`] values.
///
/// ```
/// use domain::query::{at_most, MAX_FILTER_VALUES};
/// assert!(at_most("tags", MAX_FILTER_VALUES).is_ok());
/// assert!(at_most("tags", MAX_FILTER_VALUES + 1).unwrap_err().0.contains("100"));
/// ```
///
/// # Errors
/// [`QueryError`] naming the field and the limit.
pub fn at_most(field: &str, count: usize) -> Result<(), QueryError> {
    if count > MAX_FILTER_VALUES {
        return Err(QueryError(format!(
            "'{field}' takes at most {MAX_FILTER_VALUES} values, not {count}"
        )));
    }
    Ok(())
}

/// Tags of a filter value: joined by `+` (sent as `%2B`) or, when a client sent a raw `+`
/// that was decoded as a space, by spaces.
fn split_tags(value: &str) -> Vec<String> {
    value
        .split(['+', ' '])
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

fn parse_bool(field: &str, value: &str) -> Result<bool, QueryError> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(QueryError(format!(
            "filter '{field}' needs true or false, not '{value}'"
        ))),
    }
}

/// Sort fields of projects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectSortField {
    /// By name.
    Name,
    /// By creation time.
    CreatedOn,
}

/// The sort fields of `GET /projects`, by name.
pub const PROJECT_SORTS: [(&str, ProjectSortField); 2] = [
    ("name", ProjectSortField::Name),
    ("createdOn", ProjectSortField::CreatedOn),
];

/// The `filter` fields of `GET /projects`.
pub const PROJECT_FILTERS: [&str; 3] = ["query", "tags", "keys"];

/// `GET /projects` parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectQuery {
    /// Substring of name or key (case-insensitive).
    pub query: Option<String>,
    /// Projects must carry all of these.
    pub tags: Vec<String>,
    /// Projects must have one of these keys.
    pub keys: Vec<String>,
    /// Order.
    pub sort: Sort<ProjectSortField>,
    /// Page.
    pub page: Page,
}

impl ProjectQuery {
    /// Parses the query-string values.
    ///
    /// ```
    /// use domain::query::ProjectQuery;
    /// let q = ProjectQuery::parse(Some("query:web,keys:a|b"), Some("-name"), None, None).unwrap();
    /// assert_eq!(q.keys, vec!["a", "b"]);
    /// assert!(ProjectQuery::parse(None, Some("color"), None, None).is_err());
    /// ```
    ///
    /// # Errors
    /// [`QueryError`] for an invalid filter, sort, limit or offset.
    pub fn parse(
        filter: Option<&str>,
        sort: Option<&str>,
        limit: Option<&str>,
        offset: Option<&str>,
    ) -> Result<Self, QueryError> {
        let mut q = Self {
            query: None,
            tags: vec![],
            keys: vec![],
            sort: parse_sort(
                sort,
                &PROJECT_SORTS,
                Sort {
                    field: ProjectSortField::CreatedOn,
                    direction: Direction::Ascending,
                },
            )?,
            page: Page::parse(limit, offset, 20)?,
        };
        for (field, value) in parse_filter(filter.unwrap_or(""), &PROJECT_FILTERS)? {
            match field.as_str() {
                "query" => q.query = Some(value.to_lowercase()),
                "tags" => q.tags.extend(split_tags(&value)),
                _ => q.keys.extend(
                    value
                        .split('|')
                        .filter(|k| !k.is_empty())
                        .map(str::to_owned),
                ),
            }
        }
        at_most("tags", q.tags.len())?;
        at_most("keys", q.keys.len())?;
        Ok(q)
    }
}

/// Sort fields of environments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvironmentSortField {
    /// By name.
    Name,
    /// By creation time.
    CreatedOn,
    /// Critical ones last (ascending) or first (descending).
    Critical,
}

/// The sort fields of `GET /projects/{projectKey}/environments`, by name.
pub const ENVIRONMENT_SORTS: [(&str, EnvironmentSortField); 3] = [
    ("name", EnvironmentSortField::Name),
    ("createdOn", EnvironmentSortField::CreatedOn),
    ("critical", EnvironmentSortField::Critical),
];

/// The `filter` fields of `GET /projects/{projectKey}/environments`.
pub const ENVIRONMENT_FILTERS: [&str; 5] = ["query", "tags", "key", "name", "critical"];

/// `GET /projects/{projectKey}/environments` parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvironmentQuery {
    /// Substring of name or key (case-insensitive).
    pub query: Option<String>,
    /// Environments must carry all of these.
    pub tags: Vec<String>,
    /// Exact key.
    pub key: Option<String>,
    /// Exact name.
    pub name: Option<String>,
    /// Exact criticality.
    pub critical: Option<bool>,
    /// Order.
    pub sort: Sort<EnvironmentSortField>,
    /// Page.
    pub page: Page,
}

impl EnvironmentQuery {
    /// Parses the query-string values; `tags` is the separate `tags` parameter.
    ///
    /// ```
    /// use domain::query::EnvironmentQuery;
    /// let q = EnvironmentQuery::parse(Some("query:prod,critical:true"), Some("a+b"), Some("-name"), None, None).unwrap();
    /// assert_eq!(q.critical, Some(true));
    /// assert_eq!(q.tags, vec!["a", "b"]);
    /// ```
    ///
    /// # Errors
    /// [`QueryError`] for an invalid filter, sort, limit or offset.
    pub fn parse(
        filter: Option<&str>,
        tags: Option<&str>,
        sort: Option<&str>,
        limit: Option<&str>,
        offset: Option<&str>,
    ) -> Result<Self, QueryError> {
        let mut q = Self {
            query: None,
            tags: tags.map(split_tags).unwrap_or_default(),
            key: None,
            name: None,
            critical: None,
            sort: parse_sort(
                sort,
                &ENVIRONMENT_SORTS,
                Sort {
                    field: EnvironmentSortField::CreatedOn,
                    direction: Direction::Ascending,
                },
            )?,
            page: Page::parse(limit, offset, 20)?,
        };
        for (field, value) in parse_filter(filter.unwrap_or(""), &ENVIRONMENT_FILTERS)? {
            match field.as_str() {
                "query" => q.query = Some(value.to_lowercase()),
                "tags" => q.tags.extend(split_tags(&value)),
                "key" => q.key = Some(value),
                "name" => q.name = Some(value),
                _ => q.critical = Some(parse_bool("critical", &value)?),
            }
        }
        at_most("tags", q.tags.len())?;
        Ok(q)
    }
}

/// Sort fields of flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagSortField {
    /// By creation time.
    CreationDate,
    /// By key.
    Key,
    /// By name.
    Name,
}

/// The lifecycle state a flag list is filtered by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagState {
    /// Neither archived nor deprecated.
    Live,
    /// Deprecated, not archived.
    Deprecated,
    /// Archived.
    Archived,
}

/// The sort fields of `GET /flags/{projectKey}`, by name.
pub const FLAG_SORTS: [(&str, FlagSortField); 3] = [
    ("creationDate", FlagSortField::CreationDate),
    ("key", FlagSortField::Key),
    ("name", FlagSortField::Name),
];

/// The `filter` fields of `GET /flags/{projectKey}`.
pub const FLAG_FILTERS: [&str; 5] = ["query", "tags", "state", "type", "maintainerId"];

/// `GET /flags/{projectKey}` filters and order (paging is separate: older API versions list all).
/// Without a `state` filter, archived flags are left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagQuery {
    /// Substring of name or key (case-insensitive).
    pub query: Option<String>,
    /// Flags must carry all of these.
    pub tags: Vec<String>,
    /// Lifecycle state; `None` means live or deprecated.
    pub state: Option<FlagState>,
    /// `Some(true)` for temporary flags, `Some(false)` for permanent ones.
    pub temporary: Option<bool>,
    /// The maintaining member's `_id`.
    pub maintainer_id: Option<String>,
    /// Order.
    pub sort: Sort<FlagSortField>,
    /// Page; `None` lists every flag.
    pub page: Option<Page>,
}

impl FlagQuery {
    /// Parses `filter` (`query`, `tags`, `state`, `type`, `maintainerId`), the single-tag `tag`
    /// parameter and `sort`.
    ///
    /// ```
    /// use domain::query::{FlagQuery, Page};
    /// let q = FlagQuery::parse(Some("query:dark"), Some("ui"), Some("-key"), Some(Page { limit: 20, offset: 0 })).unwrap();
    /// assert_eq!(q.query.as_deref(), Some("dark"));
    /// assert_eq!(q.tags, vec!["ui"]);
    /// ```
    ///
    /// # Errors
    /// [`QueryError`] for an invalid filter or sort.
    pub fn parse(
        filter: Option<&str>,
        tag: Option<&str>,
        sort: Option<&str>,
        page: Option<Page>,
    ) -> Result<Self, QueryError> {
        let mut q = Self {
            query: None,
            tags: tag
                .filter(|t| !t.is_empty())
                .map(|t| vec![t.to_owned()])
                .unwrap_or_default(),
            state: None,
            temporary: None,
            maintainer_id: None,
            sort: parse_sort(
                sort,
                &FLAG_SORTS,
                Sort {
                    field: FlagSortField::CreationDate,
                    direction: Direction::Ascending,
                },
            )?,
            page,
        };
        for (field, value) in parse_filter(filter.unwrap_or(""), &FLAG_FILTERS)? {
            match field.as_str() {
                "query" => q.query = Some(value.to_lowercase()),
                "tags" => q.tags.extend(split_tags(&value)),
                "state" => {
                    q.state = Some(match value.as_str() {
                        "live" => FlagState::Live,
                        "deprecated" => FlagState::Deprecated,
                        "archived" => FlagState::Archived,
                        other => {
                            return Err(QueryError(format!(
                                "filter 'state' needs live, deprecated or archived, not '{other}'"
                            )))
                        }
                    })
                }
                "type" => {
                    q.temporary = Some(match value.as_str() {
                        "temporary" => true,
                        "permanent" => false,
                        other => {
                            return Err(QueryError(format!(
                                "filter 'type' needs temporary or permanent, not '{other}'"
                            )))
                        }
                    })
                }
                _ => q.maintainer_id = Some(value),
            }
        }
        at_most("tags", q.tags.len())?;
        Ok(q)
    }
}

/// Sort fields of members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberSortField {
    /// First and last name, else email.
    DisplayName,
    /// Last activity (never = oldest).
    LastSeen,
}

/// The sort fields of `GET /members`, by name.
pub const MEMBER_SORTS: [(&str, MemberSortField); 2] = [
    ("displayName", MemberSortField::DisplayName),
    ("lastSeen", MemberSortField::LastSeen),
];

/// The `filter` fields of `GET /members`.
pub const MEMBER_FILTERS: [&str; 3] = ["query", "role", "email"];

/// `GET /members` parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberQuery {
    /// Substring of email or name (case-insensitive).
    pub query: Option<String>,
    /// Any of these roles (`admin` includes the owner).
    pub roles: Vec<crate::role::Role>,
    /// Any of these emails (case-insensitive).
    pub emails: Vec<String>,
    /// Order.
    pub sort: Sort<MemberSortField>,
    /// Page.
    pub page: Page,
}

impl MemberQuery {
    /// Parses `filter` (`query`, `role` and `email`, the last two `|`-joined), `sort`, `limit`
    /// and `offset`.
    ///
    /// ```
    /// use domain::query::MemberQuery;
    /// use domain::role::Role;
    /// let q = MemberQuery::parse(Some("role:admin|writer,query:ann"), Some("-lastSeen"), None, None).unwrap();
    /// assert_eq!(q.roles, vec![Role::Admin, Role::Owner, Role::Writer]);
    /// assert!(MemberQuery::parse(Some("role:boss"), None, None, None).is_err());
    /// ```
    ///
    /// # Errors
    /// [`QueryError`] for an unknown field or role, a bad sort, limit or offset.
    pub fn parse(
        filter: Option<&str>,
        sort: Option<&str>,
        limit: Option<&str>,
        offset: Option<&str>,
    ) -> Result<Self, QueryError> {
        let mut q = Self {
            query: None,
            roles: vec![],
            emails: vec![],
            sort: parse_sort(
                sort,
                &MEMBER_SORTS,
                Sort {
                    field: MemberSortField::DisplayName,
                    direction: Direction::Ascending,
                },
            )?,
            page: Page::parse(limit, offset, 20)?,
        };
        for (field, value) in parse_filter(filter.unwrap_or(""), &MEMBER_FILTERS)? {
            let any = value.split('|').filter(|v| !v.is_empty());
            match field.as_str() {
                "query" => q.query = Some(value.to_lowercase()),
                "role" => {
                    for name in any {
                        let role: crate::role::Role = name
                            .parse()
                            .map_err(|e: crate::role::UnknownRole| QueryError(e.to_string()))?;
                        q.roles.push(role);
                        // The owner counts as an admin.
                        if role == crate::role::Role::Admin {
                            q.roles.push(crate::role::Role::Owner);
                        }
                    }
                }
                _ => q.emails.extend(any.map(crate::member::email_key)),
            }
        }
        at_most("role", q.roles.len())?;
        at_most("email", q.emails.len())?;
        Ok(q)
    }
}

/// Sort fields of custom roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CustomRoleSortField {
    /// By key.
    Key,
    /// By name.
    Name,
}

/// The sort fields of `GET /roles`, by name.
pub const CUSTOM_ROLE_SORTS: [(&str, CustomRoleSortField); 2] = [
    ("key", CustomRoleSortField::Key),
    ("name", CustomRoleSortField::Name),
];

/// The `filter` fields of `GET /roles`.
pub const CUSTOM_ROLE_FILTERS: [&str; 1] = ["query"];

/// `GET /roles` parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomRoleQuery {
    /// Substring of key or name (case-insensitive), lower-cased.
    pub query: Option<String>,
    /// Order (by key when not given).
    pub sort: Sort<CustomRoleSortField>,
    /// Page (20 by default).
    pub page: Page,
}

impl CustomRoleQuery {
    /// Parses `filter` (`query:text`), `sort` (`key`, `name`, `-` for descending), `limit` and
    /// `offset`.
    ///
    /// ```
    /// use domain::query::{CustomRoleQuery, CustomRoleSortField, Direction};
    /// let q = CustomRoleQuery::parse(Some("query:Ops"), Some("-name"), None, None).unwrap();
    /// assert_eq!(q.query.as_deref(), Some("ops"));
    /// assert_eq!((q.sort.field, q.sort.direction), (CustomRoleSortField::Name, Direction::Descending));
    /// assert_eq!(q.page.limit, 20);
    /// assert!(CustomRoleQuery::parse(Some("tags:x"), None, None, None).is_err());
    /// ```
    ///
    /// # Errors
    /// [`QueryError`] for an unknown filter or sort field, a bad limit or offset.
    pub fn parse(
        filter: Option<&str>,
        sort: Option<&str>,
        limit: Option<&str>,
        offset: Option<&str>,
    ) -> Result<Self, QueryError> {
        let mut q = Self {
            query: None,
            sort: parse_sort(
                sort,
                &CUSTOM_ROLE_SORTS,
                Sort {
                    field: CustomRoleSortField::Key,
                    direction: Direction::Ascending,
                },
            )?,
            page: Page::parse(limit, offset, 20)?,
        };
        for (_, value) in parse_filter(filter.unwrap_or(""), &CUSTOM_ROLE_FILTERS)? {
            q.query = Some(value.to_lowercase());
        }
        Ok(q)
    }
}

/// `GET /teams` parameters: as custom roles', `filter=query:` matching a team's key or name,
/// `sort` by `key` or `name`, 20 teams a page by default.
pub type TeamQuery = CustomRoleQuery;

/// Sort fields of segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentSortField {
    /// By creation time.
    CreationDate,
    /// By name.
    Name,
    /// By last change.
    LastModified,
}

/// The sort fields of `GET /segments/{projectKey}/{environmentKey}`, by name.
pub const SEGMENT_SORTS: [(&str, SegmentSortField); 3] = [
    ("creationDate", SegmentSortField::CreationDate),
    ("name", SegmentSortField::Name),
    ("lastModified", SegmentSortField::LastModified),
];

/// The `filter` fields of `GET /segments/{projectKey}/{environmentKey}`.
pub const SEGMENT_FILTERS: [&str; 2] = ["query", "tags"];

/// `GET /segments/{projectKey}/{environmentKey}` parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentQuery {
    /// Substring of key, name or description (case-insensitive).
    pub query: Option<String>,
    /// Segments must carry all of these.
    pub tags: Vec<String>,
    /// Order.
    pub sort: Sort<SegmentSortField>,
    /// Page.
    pub page: Page,
}

impl SegmentQuery {
    /// Parses `filter` (`query`, `tags`), `sort`, `limit` and `offset`.
    ///
    /// ```
    /// use domain::query::{SegmentQuery, SegmentSortField};
    /// let q = SegmentQuery::parse(Some("query:beta"), Some("-lastModified"), None, None).unwrap();
    /// assert_eq!(q.sort.field, SegmentSortField::LastModified);
    /// ```
    ///
    /// # Errors
    /// [`QueryError`] for an invalid filter, sort, limit or offset.
    pub fn parse(
        filter: Option<&str>,
        sort: Option<&str>,
        limit: Option<&str>,
        offset: Option<&str>,
    ) -> Result<Self, QueryError> {
        let mut q = Self {
            query: None,
            tags: vec![],
            sort: parse_sort(
                sort,
                &SEGMENT_SORTS,
                Sort {
                    field: SegmentSortField::CreationDate,
                    direction: Direction::Ascending,
                },
            )?,
            page: Page::parse(limit, offset, 20)?,
        };
        for (field, value) in parse_filter(filter.unwrap_or(""), &SEGMENT_FILTERS)? {
            match field.as_str() {
                "query" => q.query = Some(value.to_lowercase()),
                _ => q.tags.extend(split_tags(&value)),
            }
        }
        at_most("tags", q.tags.len())?;
        Ok(q)
    }
}
