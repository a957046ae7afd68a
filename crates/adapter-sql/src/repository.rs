//! [`Repository`] on diesel: every query once, for both engines.

use std::collections::BTreeMap;

use diesel::prelude::*;
use domain::audit::{specifier_matches, AuditEntry, AuditQuery};
use domain::environment::Environment;
use domain::flag::{
    Defaults, Flag, FlagConfig, FlagFacts, PrerequisiteEdge, StatusFacts, VariationOrRollout,
};
use domain::member::Member;
use domain::project::{ClientSideAvailability, NamingCase, NamingConvention, Project};
use domain::query::{
    Direction, EnvironmentQuery, EnvironmentSortField, FlagQuery, FlagSortField, FlagState,
    MemberQuery, MemberSortField, Page, ProjectQuery, ProjectSortField, SegmentQuery,
    SegmentSortField,
};
use domain::role::Role;
use domain::segment::Segment;
use domain::token::{EnvironmentCredential, Token};
use domain::webhook::{DeliveryAttempt, Webhook};
use ports::{
    ClaimedDelivery, DeliveryOutcome, Locked, QueuedDelivery, Repository, StoreError, StoreResult,
};

use crate::schema::{
    account, audit_details, audit_log, audit_resources, environment_old_keys, environment_tags,
    environments, flag_configs, flag_prerequisites, flag_segment_refs, flag_tags, flags, members,
    project_tags, projects, segment_tags, segments, tokens, webhook_attempts, webhook_deliveries,
    webhooks,
};
use crate::{map_error, DbConnection};

/// A [`Repository`] inside one transaction on a [`DbConnection`].
pub struct SqlRepository<'c> {
    conn: &'c mut DbConnection,
}

impl std::fmt::Debug for SqlRepository<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlRepository").finish_non_exhaustive()
    }
}

impl<'c> SqlRepository<'c> {
    /// A repository working on `conn` (inside a transaction the caller opened).
    pub fn new(conn: &'c mut DbConnection) -> Self {
        Self { conn }
    }
}

trait OrStoreError<T> {
    fn store(self) -> StoreResult<T>;
}

impl<T> OrStoreError<T> for QueryResult<T> {
    fn store(self) -> StoreResult<T> {
        self.map_err(map_error)
    }
}

fn corrupt(what: &str, err: impl std::fmt::Display) -> StoreError {
    StoreError::Other(format!("stored {what} cannot be read: {err}"))
}

/// An audit entry's detail as stored in `audit_details.detail`, apart from the listing fields
/// in `audit_log.entry` (which, for entries written before, hold the detail too).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct AuditDetailRef<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    delta: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    previous_version: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    current_version: Option<&'a serde_json::Value>,
}

/// [`AuditDetailRef`], read back.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuditDetail {
    #[serde(default)]
    delta: Option<serde_json::Value>,
    #[serde(default)]
    previous_version: Option<serde_json::Value>,
    #[serde(default)]
    current_version: Option<serde_json::Value>,
}

/// The text that `query` filters search: key and name, lower-cased, on separate lines so that a
/// match never spans both.
fn search_text(key: &str, name: &str) -> String {
    format!("{}\n{}", key.to_lowercase(), name.to_lowercase())
}

/// A LIKE pattern matching `text` anywhere, with LIKE's wildcards escaped.
fn contains_pattern(text: &str) -> String {
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

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn index_i32(i: usize) -> i32 {
    i32::try_from(i).unwrap_or(i32::MAX)
}

/// Orders a boxed list query by `column`, then `tiebreak` (so pages are stable), both in
/// `direction`.
macro_rules! sorted {
    ($query:expr, $direction:expr, $column:expr, $tiebreak:expr) => {
        match $direction {
            Direction::Ascending => $query.order(($column.asc(), $tiebreak.asc())),
            Direction::Descending => $query.order(($column.desc(), $tiebreak.desc())),
        }
    };
}

/// Loads one page (`limit`/`offset` of a [`Page`]) of a list query as rows of type `$row`.
macro_rules! load_page {
    ($conn:expr, $query:expr, $page:expr, $row:ty) => {{
        let rows: Vec<$row> = $query
            .limit(i64::from($page.limit))
            .offset(to_i64($page.offset))
            .select(<$row>::as_select())
            .load($conn)
            .store()?;
        rows
    }};
}

/// Locks the rows a query of one text column selects until the transaction ends, and returns
/// that column. PostgreSQL: `SELECT ... FOR NO KEY UPDATE`, which locks rows in the order the
/// query returns them (callers order by id so that two transactions cannot deadlock) and, as
/// keys never change, leaves foreign-key checks of other transactions free to proceed. SQLite: a
/// plain read, because `SqlStore` runs its write transactions one at a time.
macro_rules! lock_rows {
    ($conn:expr, $query:expr) => {{
        let locked: Vec<String> = match &mut *$conn {
            DbConnection::Pg(conn) => $query.for_no_key_update().load(conn),
            DbConnection::Sqlite(conn) => $query.load(conn),
        }
        .store()?;
        locked
    }};
}

/// A "carries all of these tags" filter: the distinct tags and their number, for one sub-query
/// `owner IN (SELECT owner FROM tags WHERE tag IN (...) GROUP BY owner HAVING COUNT(*) = n)`
/// (tag tables have one row per owner and tag). One sub-query whatever the number of tags: a
/// nested sub-query per tag made PostgreSQL's planner take seconds and SQLite's expression tree
/// overflow. `None` without tags.
fn all_of(tags: &[String]) -> Option<(Vec<String>, i64)> {
    let mut tags = tags.to_vec();
    tags.sort();
    tags.dedup();
    let n = i64::try_from(tags.len()).ok()?;
    (n > 0).then_some((tags, n))
}

/// Tags by owner, from `(owner id, tag)` rows.
fn group_tags(rows: Vec<(String, String)>) -> BTreeMap<String, Vec<String>> {
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
            DbConnection::Pg(conn) => $statement.execute(conn),
            DbConnection::Sqlite(conn) => $statement.execute(conn),
        }
    };
}

/// Rows per multi-row `INSERT`, and keys per `IN (...)` list. Every row type has at most 16
/// columns, so a statement binds at most 16,000 parameters: under SQLite's limit (32,766) and
/// PostgreSQL's (65,535), whatever the number of rows. A flag's configurations for many
/// environments still go in one statement.
const ROWS_PER_STATEMENT: usize = 1000;

/// Inserts `rows` into `table` in multi-row statements of [`ROWS_PER_STATEMENT`] rows; nothing
/// when there are none (an empty `VALUES` list is not valid SQL).
macro_rules! insert_rows {
    ($conn:expr, $table:ident, $rows:expr) => {{
        let rows = $rows;
        for chunk in rows.chunks(ROWS_PER_STATEMENT) {
            execute_on_engine!($conn, diesel::insert_into($table::table).values(chunk)).store()?;
        }
    }};
}

/// Runs `load` on `keys` in slices of [`ROWS_PER_STATEMENT`] (so that an `IN (...)` list never
/// passes an engine's bound-parameter limit) and concatenates the results; no query for no keys.
fn chunked<K, T>(
    keys: &[K],
    mut load: impl FnMut(&[K]) -> StoreResult<Vec<T>>,
) -> StoreResult<Vec<T>> {
    let mut all = Vec::new();
    for chunk in keys.chunks(ROWS_PER_STATEMENT) {
        all.extend(load(chunk)?);
    }
    Ok(all)
}

/// Replaces the tags of one owner in a tag table: one delete, one multi-row insert.
macro_rules! replace_tags {
    ($conn:expr, $table:ident, [$($column:ident = $value:expr),+], $tags:expr) => {{
        diesel::delete($table::table$(.filter($table::$column.eq($value)))+).execute($conn).store()?;
        let rows: Vec<_> = $tags.iter().map(|tag| ($($table::$column.eq($value),)+ $table::tag.eq(tag))).collect();
        insert_rows!($conn, $table, rows);
    }};
}

impl SqlRepository<'_> {
    /// Makes the stored tags of `segment` exactly `segment.tags`.
    fn replace_segment_tags(
        &mut self,
        project_id: &str,
        environment_key: &str,
        segment: &Segment,
    ) -> StoreResult<()> {
        replace_tags!(
            self.conn,
            segment_tags,
            [
                project_id = project_id,
                environment_key = environment_key,
                segment_key = &segment.key
            ],
            segment.tags
        );
        Ok(())
    }
}

fn parse_role(text: &str) -> StoreResult<Role> {
    text.parse().map_err(|e| corrupt("role", e))
}

// ---------------------------------------------------------------------------------------------
// Rows

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = members)]
struct MemberRow {
    id: String,
    email: String,
    role: String,
    first_name: Option<String>,
    last_name: Option<String>,
    creation_date: i64,
    pending_invite: bool,
    verified: bool,
    last_seen: i64,
    display_name: String,
    search: String,
}

impl MemberRow {
    fn from_member(m: &Member) -> Self {
        let names = [m.first_name.as_deref(), m.last_name.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        Self {
            id: m.id.clone(),
            email: m.email.clone(),
            role: m.role.as_str().to_owned(),
            first_name: m.first_name.clone(),
            last_name: m.last_name.clone(),
            creation_date: m.creation_date,
            pending_invite: m.pending_invite,
            verified: m.verified,
            last_seen: m.last_seen,
            display_name: m.display_name().to_lowercase(),
            search: format!("{}\n{}", m.email.to_lowercase(), names.to_lowercase()),
        }
    }

    fn into_member(self) -> StoreResult<Member> {
        let mut member = Member::owner(self.id, self.email, self.creation_date);
        member.role = parse_role(&self.role)?;
        member.first_name = self.first_name;
        member.last_name = self.last_name;
        member.pending_invite = self.pending_invite;
        member.verified = self.verified;
        member.last_seen = self.last_seen;
        Ok(member)
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = segments)]
struct SegmentRow {
    project_id: String,
    environment_key: String,
    key: String,
    name: String,
    search: String,
    creation_date: i64,
    last_modified: i64,
    version: i64,
    doc: String,
}

impl SegmentRow {
    fn from_segment(
        project_id: &str,
        environment_key: &str,
        segment: &Segment,
    ) -> StoreResult<Self> {
        Ok(Self {
            project_id: project_id.to_owned(),
            environment_key: environment_key.to_owned(),
            key: segment.key.clone(),
            name: segment.name.clone(),
            search: format!(
                "{}\n{}\n{}",
                segment.key.to_lowercase(),
                segment.name.to_lowercase(),
                segment
                    .description
                    .as_deref()
                    .unwrap_or_default()
                    .to_lowercase()
            ),
            creation_date: segment.creation_date,
            last_modified: segment.last_modified_date,
            version: segment.version,
            doc: serde_json::to_string(segment).map_err(|e| StoreError::Other(e.to_string()))?,
        })
    }

    fn into_segment(self) -> StoreResult<Segment> {
        serde_json::from_str(&self.doc).map_err(|e| corrupt("segment", e))
    }
}

fn filtered_segments<'a>(
    project_id: &'a str,
    environment_key: &'a str,
    q: &'a SegmentQuery,
) -> segments::BoxedQuery<'a, Backend> {
    let mut query = segments::table
        .filter(segments::project_id.eq(project_id))
        .filter(segments::environment_key.eq(environment_key))
        .into_boxed();
    if let Some(text) = &q.query {
        query = query.filter(segments::search.like(contains_pattern(text)).escape('\\'));
    }
    if let Some((tags, n)) = all_of(&q.tags) {
        query = query.filter(
            segments::key.eq_any(
                segment_tags::table
                    .filter(segment_tags::project_id.eq(project_id))
                    .filter(segment_tags::environment_key.eq(environment_key))
                    .filter(segment_tags::tag.eq_any(tags))
                    .group_by(segment_tags::segment_key)
                    .having(diesel::dsl::count_star().eq(n))
                    .select(segment_tags::segment_key),
            ),
        );
    }
    query
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = webhook_attempts)]
struct AttemptRow {
    delivery_id: String,
    entry_id: String,
    attempt: i32,
    date: i64,
    status_code: Option<i32>,
    error: Option<String>,
    duration_ms: i64,
}

diesel::define_sql_function! {
    /// SQL `lower()`, in both engines.
    fn lower(text: diesel::sql_types::Text) -> diesel::sql_types::Text;
}

fn filtered_members(q: &MemberQuery) -> members::BoxedQuery<'_, Backend> {
    let mut query = members::table.into_boxed();
    if let Some(text) = &q.query {
        query = query.filter(members::search.like(contains_pattern(text)).escape('\\'));
    }
    if !q.roles.is_empty() {
        query = query.filter(members::role.eq_any(q.roles.iter().map(|r| r.as_str())));
    }
    if !q.emails.is_empty() {
        query = query.filter(lower(members::email).eq_any(&q.emails));
    }
    query
}

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
}

impl TokenRow {
    fn from_token(t: &Token, secret_hash: &str) -> Self {
        Self {
            id: t.id.clone(),
            secret_hash: secret_hash.to_owned(),
            member_id: t.member_id.clone(),
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
        }
    }

    fn into_token(self) -> StoreResult<Token> {
        Ok(Token {
            role: parse_role(&self.role)?,
            id: self.id,
            member_id: self.member_id,
            name: self.name,
            description: self.description,
            service_token: self.service_token,
            default_api_version: self.default_api_version,
            creation_date: self.creation_date,
            last_modified: self.last_modified,
            last_used: self.last_used,
            ending: self.ending,
        })
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = projects, treat_none_as_null = true)]
struct ProjectRow {
    id: String,
    key: String,
    name: String,
    search: String,
    include_in_snippet_by_default: bool,
    using_mobile_key: bool,
    using_environment_id: bool,
    creation_date: i64,
    /// The naming convention's case, by its API name (`kebabCase`, ...).
    naming_case: Option<String>,
    naming_prefix: Option<String>,
}

impl ProjectRow {
    fn from_project(p: &Project) -> Self {
        Self {
            id: p.id.clone(),
            key: p.key.clone(),
            name: p.name.clone(),
            search: search_text(&p.key, &p.name),
            include_in_snippet_by_default: p.include_in_snippet_by_default,
            using_mobile_key: p.default_client_side_availability.using_mobile_key,
            using_environment_id: p.default_client_side_availability.using_environment_id,
            creation_date: p.creation_date,
            naming_case: p
                .naming_convention
                .as_ref()
                .and_then(|c| c.case)
                .map(|case| case.as_str().to_owned()),
            naming_prefix: p.naming_convention.as_ref().and_then(|c| c.prefix.clone()),
        }
    }

    fn into_project(self, tags: Vec<String>) -> StoreResult<Project> {
        let case = match self.naming_case.as_deref() {
            Some(name) => Some(
                NamingCase::parse(name)
                    .ok_or_else(|| corrupt("naming case", format!("unknown case '{name}'")))?,
            ),
            None => None,
        };
        let naming_convention =
            (case.is_some() || self.naming_prefix.is_some()).then_some(NamingConvention {
                case,
                prefix: self.naming_prefix,
            });
        Ok(Project {
            id: self.id,
            key: self.key,
            name: self.name,
            tags,
            include_in_snippet_by_default: self.include_in_snippet_by_default,
            default_client_side_availability: ClientSideAvailability {
                using_mobile_key: self.using_mobile_key,
                using_environment_id: self.using_environment_id,
            },
            naming_convention,
            creation_date: self.creation_date,
        })
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = environments)]
struct EnvironmentRow {
    id: String,
    project_id: String,
    key: String,
    name: String,
    search: String,
    api_key: String,
    mobile_key: String,
    color: String,
    default_ttl: i32,
    secure_mode: bool,
    default_track_events: bool,
    require_comments: bool,
    confirm_changes: bool,
    critical: bool,
    creation_date: i64,
}

impl EnvironmentRow {
    fn from_environment(project_id: &str, e: &Environment) -> Self {
        Self {
            id: e.id.clone(),
            project_id: project_id.to_owned(),
            key: e.key.clone(),
            name: e.name.clone(),
            search: search_text(&e.key, &e.name),
            api_key: e.api_key.clone(),
            mobile_key: e.mobile_key.clone(),
            color: e.color.clone(),
            default_ttl: e.default_ttl,
            secure_mode: e.secure_mode,
            default_track_events: e.default_track_events,
            require_comments: e.require_comments,
            confirm_changes: e.confirm_changes,
            critical: e.critical,
            creation_date: e.creation_date,
        }
    }

    /// The environment, with its tags.
    fn into_environment(self, tags: Vec<String>) -> Environment {
        Environment {
            id: self.id,
            key: self.key,
            name: self.name,
            api_key: self.api_key,
            mobile_key: self.mobile_key,
            color: self.color,
            default_ttl: self.default_ttl,
            secure_mode: self.secure_mode,
            default_track_events: self.default_track_events,
            require_comments: self.require_comments,
            confirm_changes: self.confirm_changes,
            critical: self.critical,
            tags,
            creation_date: self.creation_date,
        }
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = flags)]
struct FlagRow {
    project_id: String,
    key: String,
    name: String,
    search: String,
    version: i64,
    creation_date: i64,
    archived: bool,
    deprecated: bool,
    temporary: bool,
    maintainer_id: Option<String>,
    default_on: i32,
    default_off: i32,
    settings: String,
}

impl FlagRow {
    fn from_flag(project_id: &str, flag: &Flag) -> StoreResult<Self> {
        let mut settings =
            serde_json::to_value(flag).map_err(|e| StoreError::Other(e.to_string()))?;
        if let Some(fields) = settings.as_object_mut() {
            fields.remove("environments");
            // Derived from the members on every read.
            fields.remove("_maintainer");
        }
        Ok(Self {
            project_id: project_id.to_owned(),
            key: flag.key.clone(),
            name: flag.name.clone(),
            search: search_text(&flag.key, &flag.name),
            version: flag.version,
            creation_date: flag.creation_date,
            archived: flag.archived,
            deprecated: flag.deprecated,
            temporary: flag.temporary,
            maintainer_id: flag.maintainer_id.clone(),
            default_on: index_i32(flag.defaults.on_variation),
            default_off: index_i32(flag.defaults.off_variation),
            settings: settings.to_string(),
        })
    }

    fn into_flag(self) -> StoreResult<Flag> {
        serde_json::from_str(&self.settings).map_err(|e| corrupt("flag", e))
    }
}

/// A flag joined with one of its configurations: environment key, environment name, config JSON
/// (all `None` for a flag of a project without environments).
type FlagWithConfigRow = (FlagRow, Option<String>, Option<String>, Option<String>);

#[derive(Insertable)]
#[diesel(table_name = flag_configs)]
struct FlagConfigRow {
    project_id: String,
    flag_key: String,
    environment_key: String,
    config: String,
}

fn config_json(config: &FlagConfig) -> StoreResult<String> {
    serde_json::to_string(config).map_err(|e| StoreError::Other(e.to_string()))
}

fn read_config(text: &str, environment_name: String) -> StoreResult<FlagConfig> {
    let mut config: FlagConfig =
        serde_json::from_str(text).map_err(|e| corrupt("flag configuration", e))?;
    config.environment_name = environment_name;
    Ok(config)
}

// ---------------------------------------------------------------------------------------------
// Queries shared by a list and its count

type Backend = crate::MultiBackend;

fn filtered_projects(q: &ProjectQuery) -> projects::BoxedQuery<'_, Backend> {
    let mut query = projects::table.into_boxed();
    if let Some(text) = &q.query {
        query = query.filter(projects::search.like(contains_pattern(text)).escape('\\'));
    }
    if let Some((tags, n)) = all_of(&q.tags) {
        query = query.filter(
            projects::id.eq_any(
                project_tags::table
                    .filter(project_tags::tag.eq_any(tags))
                    .group_by(project_tags::project_id)
                    .having(diesel::dsl::count_star().eq(n))
                    .select(project_tags::project_id),
            ),
        );
    }
    if !q.keys.is_empty() {
        query = query.filter(projects::key.eq_any(&q.keys));
    }
    query
}

fn filtered_environments<'a>(
    project_id: &'a str,
    q: &'a EnvironmentQuery,
) -> environments::BoxedQuery<'a, Backend> {
    let mut query = environments::table
        .filter(environments::project_id.eq(project_id))
        .into_boxed();
    if let Some(text) = &q.query {
        query = query.filter(
            environments::search
                .like(contains_pattern(text))
                .escape('\\'),
        );
    }
    if let Some((tags, n)) = all_of(&q.tags) {
        query = query.filter(
            environments::id.eq_any(
                environment_tags::table
                    .filter(environment_tags::tag.eq_any(tags))
                    .group_by(environment_tags::environment_id)
                    .having(diesel::dsl::count_star().eq(n))
                    .select(environment_tags::environment_id),
            ),
        );
    }
    if let Some(key) = &q.key {
        query = query.filter(environments::key.eq(key));
    }
    if let Some(name) = &q.name {
        query = query.filter(environments::name.eq(name));
    }
    if let Some(critical) = q.critical {
        query = query.filter(environments::critical.eq(critical));
    }
    query
}

fn filtered_flags<'a>(project_id: &'a str, q: &'a FlagQuery) -> flags::BoxedQuery<'a, Backend> {
    let mut query = flags::table
        .filter(flags::project_id.eq(project_id))
        .into_boxed();
    query = match q.state {
        None => query.filter(flags::archived.eq(false)),
        Some(FlagState::Live) => query
            .filter(flags::archived.eq(false))
            .filter(flags::deprecated.eq(false)),
        Some(FlagState::Deprecated) => query
            .filter(flags::archived.eq(false))
            .filter(flags::deprecated.eq(true)),
        Some(FlagState::Archived) => query.filter(flags::archived.eq(true)),
    };
    if let Some(temporary) = q.temporary {
        query = query.filter(flags::temporary.eq(temporary));
    }
    if let Some(maintainer) = &q.maintainer_id {
        query = query.filter(flags::maintainer_id.eq(maintainer));
    }
    if let Some(text) = &q.query {
        query = query.filter(flags::search.like(contains_pattern(text)).escape('\\'));
    }
    if let Some((tags, n)) = all_of(&q.tags) {
        query = query.filter(
            flags::key.eq_any(
                flag_tags::table
                    .filter(flag_tags::project_id.eq(project_id))
                    .filter(flag_tags::tag.eq_any(tags))
                    .group_by(flag_tags::flag_key)
                    .having(diesel::dsl::count_star().eq(n))
                    .select(flag_tags::flag_key),
            ),
        );
    }
    query
}

impl SqlRepository<'_> {
    fn project_tags_of(&mut self, ids: &[String]) -> StoreResult<BTreeMap<String, Vec<String>>> {
        let conn = &mut *self.conn;
        let rows = chunked(ids, |ids| {
            project_tags::table
                .filter(project_tags::project_id.eq_any(ids))
                .order((project_tags::project_id, project_tags::tag))
                .load(conn)
                .store()
        })?;
        Ok(group_tags(rows))
    }

    fn environment_tags_of(
        &mut self,
        ids: &[String],
    ) -> StoreResult<BTreeMap<String, Vec<String>>> {
        let conn = &mut *self.conn;
        let rows = chunked(ids, |ids| {
            environment_tags::table
                .filter(environment_tags::environment_id.eq_any(ids))
                .order((environment_tags::environment_id, environment_tags::tag))
                .load(conn)
                .store()
        })?;
        Ok(group_tags(rows))
    }

    /// Environments with their tags, for rows already loaded.
    fn environments_from_rows(
        &mut self,
        rows: Vec<EnvironmentRow>,
    ) -> StoreResult<Vec<(String, Environment)>> {
        let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
        let mut tags = self.environment_tags_of(&ids)?;
        Ok(rows
            .into_iter()
            .map(|row| {
                let project_id = row.project_id.clone();
                let env_tags = tags.remove(&row.id).unwrap_or_default();
                (project_id, row.into_environment(env_tags))
            })
            .collect())
    }

    /// Rewrites which segments `flag`'s rules name, per environment.
    fn replace_flag_segment_refs(&mut self, project_id: &str, flag: &Flag) -> StoreResult<()> {
        diesel::delete(
            flag_segment_refs::table
                .filter(flag_segment_refs::project_id.eq(project_id))
                .filter(flag_segment_refs::flag_key.eq(&flag.key)),
        )
        .execute(self.conn)
        .store()?;
        let rows: Vec<_> = flag
            .environments
            .iter()
            .flat_map(|(env, config)| {
                Segment::referenced_by(config.rules.iter().flat_map(|r| &r.clauses))
                    .into_iter()
                    .map(move |segment| {
                        (
                            flag_segment_refs::project_id.eq(project_id),
                            flag_segment_refs::flag_key.eq(&flag.key),
                            flag_segment_refs::environment_key.eq(env),
                            flag_segment_refs::segment_key.eq(segment),
                        )
                    })
            })
            .collect();
        insert_rows!(self.conn, flag_segment_refs, rows);
        Ok(())
    }

    /// Rewrites the prerequisite edges of `flag` (all environments) in two statements.
    fn replace_flag_prerequisites(&mut self, project_id: &str, flag: &Flag) -> StoreResult<()> {
        diesel::delete(
            flag_prerequisites::table
                .filter(flag_prerequisites::project_id.eq(project_id))
                .filter(flag_prerequisites::flag_key.eq(&flag.key)),
        )
        .execute(self.conn)
        .store()?;
        let rows: Vec<_> = flag
            .environments
            .iter()
            .flat_map(|(env, config)| {
                config.prerequisites.iter().map(move |p| {
                    (
                        flag_prerequisites::project_id.eq(project_id),
                        flag_prerequisites::flag_key.eq(&flag.key),
                        flag_prerequisites::environment_key.eq(env),
                        flag_prerequisites::prerequisite_key.eq(&p.key),
                        flag_prerequisites::variation.eq(index_i32(p.variation)),
                    )
                })
            })
            .collect();
        insert_rows!(self.conn, flag_prerequisites, rows);
        Ok(())
    }

    fn replace_flag_tags(&mut self, project_id: &str, flag: &Flag) -> StoreResult<()> {
        replace_tags!(
            self.conn,
            flag_tags,
            [project_id = project_id, flag_key = &flag.key],
            flag.tags
        );
        Ok(())
    }

    /// Configurations of `flag_keys` in `environment_keys` (all environments when `None`),
    /// with environment names, as `(flag key, environment key, configuration)`.
    fn configs_of(
        &mut self,
        project_id: &str,
        flag_keys: &[String],
        environment_keys: Option<&[String]>,
    ) -> StoreResult<Vec<(String, String, FlagConfig)>> {
        let conn = &mut *self.conn;
        let rows: Vec<(String, String, String, String)> = chunked(flag_keys, |flag_keys| {
            let mut query = flag_configs::table
                .inner_join(
                    environments::table.on(environments::project_id
                        .eq(flag_configs::project_id)
                        .and(environments::key.eq(flag_configs::environment_key))),
                )
                .filter(flag_configs::project_id.eq(project_id))
                .filter(flag_configs::flag_key.eq_any(flag_keys))
                .select((
                    flag_configs::flag_key,
                    flag_configs::environment_key,
                    environments::name,
                    flag_configs::config,
                ))
                .into_boxed();
            if let Some(keys) = environment_keys {
                query = query.filter(flag_configs::environment_key.eq_any(keys));
            }
            query.load(conn).store()
        })?;
        rows.into_iter()
            .map(|(flag, env, env_name, config)| Ok((flag, env, read_config(&config, env_name)?)))
            .collect()
    }

    fn finish_flags(
        &mut self,
        project_id: &str,
        rows: Vec<FlagRow>,
        environment_keys: Option<&[String]>,
    ) -> StoreResult<Vec<Flag>> {
        let keys: Vec<String> = rows.iter().map(|r| r.key.clone()).collect();
        let mut flags: Vec<Flag> = rows
            .into_iter()
            .map(FlagRow::into_flag)
            .collect::<StoreResult<_>>()?;
        let wants_configs = environment_keys.is_none_or(|keys| !keys.is_empty());
        if wants_configs && !keys.is_empty() {
            let mut by_key: BTreeMap<String, usize> = BTreeMap::new();
            for (i, flag) in flags.iter().enumerate() {
                by_key.insert(flag.key.clone(), i);
            }
            for (flag_key, env_key, config) in
                self.configs_of(project_id, &keys, environment_keys)?
            {
                if let Some(&i) = by_key.get(&flag_key) {
                    flags[i].environments.insert(env_key, config);
                }
            }
        }
        Ok(flags)
    }
}

impl Repository for SqlRepository<'_> {
    fn account_id(&mut self) -> StoreResult<Option<String>> {
        account::table
            .select(account::id)
            .first(self.conn)
            .optional()
            .store()
    }

    fn create_account(&mut self, id: &str) -> StoreResult<()> {
        // Both engines read this statement alike; a concurrent first start of another replica
        // leaves the row it made, and this one reads it.
        diesel::sql_query(
            "INSERT INTO account (slot, id) VALUES (1, $1) ON CONFLICT (slot) DO NOTHING",
        )
        .bind::<diesel::sql_types::Text, _>(id)
        .execute(self.conn)
        .store()?;
        Ok(())
    }

    fn find_owner(&mut self) -> StoreResult<Option<Member>> {
        let row: Option<MemberRow> = members::table
            .filter(members::role.eq(Role::Owner.as_str()))
            .select(MemberRow::as_select())
            .first(self.conn)
            .optional()
            .store()?;
        row.map(MemberRow::into_member).transpose()
    }

    fn insert_member(&mut self, member: &Member) -> StoreResult<()> {
        diesel::insert_into(members::table)
            .values(MemberRow::from_member(member))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn get_member(&mut self, id: &str) -> StoreResult<Option<Member>> {
        let row: Option<MemberRow> = members::table
            .find(id)
            .select(MemberRow::as_select())
            .first(self.conn)
            .optional()
            .store()?;
        row.map(MemberRow::into_member).transpose()
    }

    fn get_members(&mut self, ids: &[&str]) -> StoreResult<Vec<Member>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<MemberRow> = members::table
            .filter(members::id.eq_any(ids))
            .order(members::id)
            .select(MemberRow::as_select())
            .load(self.conn)
            .store()?;
        rows.into_iter().map(MemberRow::into_member).collect()
    }

    fn lock_members(&mut self, ids: &[&str]) -> StoreResult<Vec<Locked<Member>>> {
        let locked = lock_rows!(
            self.conn,
            members::table
                .filter(members::id.eq_any(ids))
                .order(members::id)
                .select(members::id)
        );
        let rows: Vec<MemberRow> = members::table
            .filter(members::id.eq_any(&locked))
            .order(members::id)
            .select(MemberRow::as_select())
            .load(self.conn)
            .store()?;
        rows.into_iter()
            .map(|row| row.into_member().map(Locked::assume_locked))
            .collect()
    }

    fn list_members(&mut self, q: &MemberQuery) -> StoreResult<(Vec<Member>, u64)> {
        let total: i64 = filtered_members(q).count().get_result(self.conn).store()?;
        let query = filtered_members(q);
        let query = match (q.sort.field, q.sort.direction) {
            (MemberSortField::DisplayName, direction) => {
                sorted!(query, direction, members::display_name, members::id)
            }
            (MemberSortField::LastSeen, direction) => {
                sorted!(query, direction, members::last_seen, members::id)
            }
        };
        let rows = load_page!(self.conn, query, q.page, MemberRow);
        Ok((
            rows.into_iter()
                .map(MemberRow::into_member)
                .collect::<StoreResult<_>>()?,
            count(total),
        ))
    }

    fn taken_emails(&mut self, emails: &[String]) -> StoreResult<Vec<String>> {
        let conn = &mut *self.conn;
        chunked(emails, |emails| {
            members::table
                .filter(lower(members::email).eq_any(emails))
                .select(lower(members::email))
                .load(conn)
                .store()
        })
    }

    fn update_member(&mut self, member: &Locked<Member>) -> StoreResult<()> {
        let row = MemberRow::from_member(member);
        diesel::update(members::table.find(&member.id))
            .set((
                members::role.eq(row.role),
                members::first_name.eq(row.first_name),
                members::last_name.eq(row.last_name),
                members::pending_invite.eq(row.pending_invite),
                members::verified.eq(row.verified),
                members::display_name.eq(row.display_name),
                members::search.eq(row.search),
            ))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn delete_member(&mut self, member: &Locked<Member>) -> StoreResult<()> {
        diesel::delete(members::table.find(&member.id))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn reassign_service_tokens(&mut self, from: &str, to: &str) -> StoreResult<()> {
        diesel::update(
            tokens::table
                .filter(tokens::member_id.eq(from))
                .filter(tokens::service_token.eq(true)),
        )
        .set(tokens::member_id.eq(to))
        .execute(self.conn)
        .store()?;
        Ok(())
    }

    fn insert_token(&mut self, token: &Token, secret_hash: &str) -> StoreResult<()> {
        diesel::insert_into(tokens::table)
            .values(TokenRow::from_token(token, secret_hash))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn find_token_by_hash(
        &mut self,
        secret_hash: &str,
        now: i64,
    ) -> StoreResult<Option<(Token, Role, Option<i64>)>> {
        let row: Option<(TokenRow, String)> = tokens::table
            .inner_join(members::table)
            .filter(
                tokens::secret_hash
                    .eq(secret_hash)
                    .or(tokens::previous_secret_hash
                        .eq(secret_hash)
                        .and(tokens::previous_expires_at.gt(now))),
            )
            .select((TokenRow::as_select(), members::role))
            .first(self.conn)
            .optional()
            .store()?;
        row.map(|(token, role)| {
            let previous = (token.secret_hash != secret_hash)
                .then_some(token.previous_expires_at)
                .flatten();
            Ok((token.into_token()?, parse_role(&role)?, previous))
        })
        .transpose()
    }

    fn get_token(&mut self, id: &str) -> StoreResult<Option<Token>> {
        let row: Option<TokenRow> = tokens::table
            .find(id)
            .select(TokenRow::as_select())
            .first(self.conn)
            .optional()
            .store()?;
        row.map(TokenRow::into_token).transpose()
    }

    fn lock_token(&mut self, id: &str) -> StoreResult<Option<Locked<Token>>> {
        if lock_rows!(self.conn, tokens::table.find(id).select(tokens::id)).is_empty() {
            return Ok(None);
        }
        Ok(self.get_token(id)?.map(Locked::assume_locked))
    }

    fn list_tokens(
        &mut self,
        member_id: Option<&str>,
        page: Page,
    ) -> StoreResult<(Vec<Token>, u64)> {
        let visible = || {
            let query = tokens::table.into_boxed::<Backend>();
            match member_id {
                Some(member) => query.filter(
                    tokens::service_token
                        .eq(true)
                        .or(tokens::member_id.eq(member)),
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
        Ok((
            rows.into_iter()
                .map(TokenRow::into_token)
                .collect::<StoreResult<_>>()?,
            count(total),
        ))
    }

    fn update_token(&mut self, token: &Locked<Token>) -> StoreResult<()> {
        diesel::update(tokens::table.find(&token.id))
            .set((
                tokens::name.eq(&token.name),
                tokens::description.eq(&token.description),
                tokens::role.eq(token.role.as_str()),
                tokens::default_api_version.eq(token.default_api_version),
                tokens::last_modified.eq(token.last_modified),
                tokens::ending.eq(&token.ending),
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
            .find(&token.id)
            .select(tokens::secret_hash)
            .first(self.conn)
            .store()?;
        diesel::update(tokens::table.find(&token.id))
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

    fn record_token_use(&mut self, token_id: &str, member_id: &str, now: i64) -> StoreResult<()> {
        diesel::update(tokens::table.find(token_id))
            .set(tokens::last_used.eq(now))
            .execute(self.conn)
            .store()?;
        diesel::update(members::table.find(member_id))
            .set(members::last_seen.eq(now))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn delete_token(&mut self, token: &Locked<Token>) -> StoreResult<()> {
        diesel::delete(tokens::table.find(&token.id))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn find_environment_credential(
        &mut self,
        secret: &str,
    ) -> StoreResult<Option<EnvironmentCredential>> {
        let row: Option<(String, String, String)> = environments::table
            .filter(
                environments::api_key
                    .eq(secret)
                    .or(environments::mobile_key.eq(secret))
                    .or(environments::id.eq(secret)),
            )
            .select((
                environments::api_key,
                environments::mobile_key,
                environments::id,
            ))
            .first(self.conn)
            .optional()
            .store()?;
        if row.is_none() {
            let retired: Option<String> = environment_old_keys::table
                .find(secret)
                .select(environment_old_keys::kind)
                .first(self.conn)
                .optional()
                .store()?;
            return Ok(retired.map(|kind| {
                if kind == "mobile" {
                    EnvironmentCredential::MobileKey
                } else {
                    EnvironmentCredential::SdkKey
                }
            }));
        }
        Ok(row.map(|(api_key, mobile_key, _)| {
            if api_key == secret {
                EnvironmentCredential::SdkKey
            } else if mobile_key == secret {
                EnvironmentCredential::MobileKey
            } else {
                EnvironmentCredential::ClientSideId
            }
        }))
    }

    fn retire_environment_key(
        &mut self,
        environment_id: &str,
        key: &str,
        kind: EnvironmentCredential,
        expires_at: i64,
    ) -> StoreResult<()> {
        let kind = match kind {
            EnvironmentCredential::MobileKey => "mobile",
            EnvironmentCredential::SdkKey | EnvironmentCredential::ClientSideId => "sdk",
        };
        diesel::insert_into(environment_old_keys::table)
            .values((
                environment_old_keys::key.eq(key),
                environment_old_keys::environment_id.eq(environment_id),
                environment_old_keys::kind.eq(kind),
                environment_old_keys::expires_at.eq(expires_at),
            ))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn insert_project(&mut self, project: &Project) -> StoreResult<()> {
        diesel::insert_into(projects::table)
            .values(ProjectRow::from_project(project))
            .execute(self.conn)
            .store()?;
        replace_tags!(
            self.conn,
            project_tags,
            [project_id = &project.id],
            project.tags
        );
        Ok(())
    }

    fn get_project(&mut self, key: &str) -> StoreResult<Option<Project>> {
        let Some(row) = projects::table
            .filter(projects::key.eq(key))
            .select(ProjectRow::as_select())
            .first(self.conn)
            .optional()
            .store()?
        else {
            return Ok(None);
        };
        let tags = self
            .project_tags_of(std::slice::from_ref(&row.id))?
            .remove(&row.id)
            .unwrap_or_default();
        Ok(Some(row.into_project(tags)?))
    }

    fn lock_project(&mut self, key: &str) -> StoreResult<Option<Locked<Project>>> {
        let locked = lock_rows!(
            self.conn,
            projects::table
                .filter(projects::key.eq(key))
                .select(projects::id)
        );
        if locked.is_empty() {
            return Ok(None);
        }
        Ok(self.get_project(key)?.map(Locked::assume_locked))
    }

    fn list_projects(&mut self, q: &ProjectQuery) -> StoreResult<(Vec<Project>, u64)> {
        let total: i64 = filtered_projects(q).count().get_result(self.conn).store()?;
        let query = filtered_projects(q);
        let query = match (q.sort.field, q.sort.direction) {
            (ProjectSortField::Name, direction) => {
                sorted!(query, direction, projects::name, projects::id)
            }
            (ProjectSortField::CreatedOn, direction) => {
                sorted!(query, direction, projects::creation_date, projects::id)
            }
        };
        let rows = load_page!(self.conn, query, q.page, ProjectRow);
        let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
        let mut tags = self.project_tags_of(&ids)?;
        let projects = rows
            .into_iter()
            .map(|row| {
                let t = tags.remove(&row.id).unwrap_or_default();
                row.into_project(t)
            })
            .collect::<StoreResult<_>>()?;
        Ok((projects, count(total)))
    }

    fn update_project(&mut self, project: &Locked<Project>) -> StoreResult<()> {
        diesel::update(projects::table.find(&project.id))
            .set(ProjectRow::from_project(project))
            .execute(self.conn)
            .store()?;
        replace_tags!(
            self.conn,
            project_tags,
            [project_id = &project.id],
            project.tags
        );
        Ok(())
    }

    fn delete_project(&mut self, project: &Locked<Project>) -> StoreResult<()> {
        diesel::delete(projects::table.find(&project.id))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn insert_environment(
        &mut self,
        project_id: &str,
        environment: &Environment,
    ) -> StoreResult<()> {
        diesel::insert_into(environments::table)
            .values(EnvironmentRow::from_environment(project_id, environment))
            .execute(self.conn)
            .store()?;
        replace_tags!(
            self.conn,
            environment_tags,
            [environment_id = &environment.id],
            environment.tags
        );
        Ok(())
    }

    fn get_environment(&mut self, project_id: &str, key: &str) -> StoreResult<Option<Environment>> {
        let rows: Vec<EnvironmentRow> = environments::table
            .filter(environments::project_id.eq(project_id))
            .filter(environments::key.eq(key))
            .select(EnvironmentRow::as_select())
            .load(self.conn)
            .store()?;
        if rows.is_empty() {
            return Ok(None);
        }
        Ok(self.environments_from_rows(rows)?.pop().map(|(_, env)| env))
    }

    fn lock_environment(
        &mut self,
        project_id: &str,
        key: &str,
    ) -> StoreResult<Option<Locked<Environment>>> {
        let locked = lock_rows!(
            self.conn,
            environments::table
                .filter(environments::project_id.eq(project_id))
                .filter(environments::key.eq(key))
                .select(environments::id)
        );
        if locked.is_empty() {
            return Ok(None);
        }
        Ok(self
            .get_environment(project_id, key)?
            .map(Locked::assume_locked))
    }

    fn list_environments(
        &mut self,
        project_id: &str,
        q: &EnvironmentQuery,
    ) -> StoreResult<(Vec<Environment>, u64)> {
        let total: i64 = filtered_environments(project_id, q)
            .count()
            .get_result(self.conn)
            .store()?;
        let query = filtered_environments(project_id, q);
        let query = match (q.sort.field, q.sort.direction) {
            (EnvironmentSortField::Name, direction) => {
                sorted!(query, direction, environments::name, environments::id)
            }
            (EnvironmentSortField::CreatedOn, direction) => sorted!(
                query,
                direction,
                environments::creation_date,
                environments::id
            ),
            (EnvironmentSortField::Critical, Direction::Ascending) => query.order((
                environments::critical.asc(),
                environments::creation_date.asc(),
                environments::id.asc(),
            )),
            (EnvironmentSortField::Critical, Direction::Descending) => query.order((
                environments::critical.desc(),
                environments::creation_date.asc(),
                environments::id.asc(),
            )),
        };
        let rows = load_page!(self.conn, query, q.page, EnvironmentRow);
        let envs = self
            .environments_from_rows(rows)?
            .into_iter()
            .map(|(_, e)| e)
            .collect();
        Ok((envs, count(total)))
    }

    fn environments_of(
        &mut self,
        project_ids: &[String],
    ) -> StoreResult<Vec<(String, Environment)>> {
        // Sorted ids make the chunks' results one list ordered by project.
        let mut ids = project_ids.to_vec();
        ids.sort();
        ids.dedup();
        let conn = &mut *self.conn;
        let rows: Vec<EnvironmentRow> = chunked(&ids, |ids| {
            environments::table
                .filter(environments::project_id.eq_any(ids))
                .order((
                    environments::project_id,
                    environments::creation_date,
                    environments::id,
                ))
                .select(EnvironmentRow::as_select())
                .load(conn)
                .store()
        })?;
        self.environments_from_rows(rows)
    }

    fn update_environment(
        &mut self,
        project_id: &str,
        environment: &Locked<Environment>,
    ) -> StoreResult<()> {
        diesel::update(environments::table.find(&environment.id))
            .set(EnvironmentRow::from_environment(project_id, environment))
            .execute(self.conn)
            .store()?;
        replace_tags!(
            self.conn,
            environment_tags,
            [environment_id = &environment.id],
            environment.tags
        );
        Ok(())
    }

    fn delete_environment(
        &mut self,
        project_id: &str,
        environment: &Locked<Environment>,
    ) -> StoreResult<()> {
        diesel::delete(
            environments::table
                .filter(environments::project_id.eq(project_id))
                .filter(environments::id.eq(&environment.id)),
        )
        .execute(self.conn)
        .store()?;
        Ok(())
    }

    fn insert_flag(&mut self, project_id: &str, flag: &Flag) -> StoreResult<()> {
        diesel::insert_into(flags::table)
            .values(FlagRow::from_flag(project_id, flag)?)
            .execute(self.conn)
            .store()?;
        self.replace_flag_tags(project_id, flag)?;
        self.replace_flag_prerequisites(project_id, flag)?;
        self.replace_flag_segment_refs(project_id, flag)?;
        let rows = flag
            .environments
            .iter()
            .map(|(env_key, config)| {
                Ok(FlagConfigRow {
                    project_id: project_id.to_owned(),
                    flag_key: flag.key.clone(),
                    environment_key: env_key.clone(),
                    config: config_json(config)?,
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        insert_rows!(self.conn, flag_configs, rows);
        Ok(())
    }

    fn get_flag(&mut self, project_id: &str, key: &str) -> StoreResult<Option<Flag>> {
        let Some(row) = flags::table
            .filter(flags::project_id.eq(project_id))
            .filter(flags::key.eq(key))
            .select(FlagRow::as_select())
            .first(self.conn)
            .optional()
            .store()?
        else {
            return Ok(None);
        };
        Ok(self.finish_flags(project_id, vec![row], None)?.pop())
    }

    fn lock_flag(&mut self, project_id: &str, key: &str) -> StoreResult<Option<Locked<Flag>>> {
        let locked = lock_rows!(
            self.conn,
            flags::table
                .filter(flags::project_id.eq(project_id))
                .filter(flags::key.eq(key))
                .select(flags::key)
        );
        if locked.is_empty() {
            return Ok(None);
        }
        Ok(self.get_flag(project_id, key)?.map(Locked::assume_locked))
    }

    fn lock_flags(&mut self, project_id: &str) -> StoreResult<Vec<Locked<Flag>>> {
        let locked = lock_rows!(
            self.conn,
            flags::table
                .filter(flags::project_id.eq(project_id))
                .order(flags::key.asc())
                .select(flags::key)
        );
        if locked.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<FlagRow> = flags::table
            .filter(flags::project_id.eq(project_id))
            .order(flags::key.asc())
            .select(FlagRow::as_select())
            .load(self.conn)
            .store()?;
        Ok(self
            .finish_flags(project_id, rows, None)?
            .into_iter()
            .map(Locked::assume_locked)
            .collect())
    }

    fn find_flag(&mut self, project_key: &str, key: &str) -> StoreResult<Option<Flag>> {
        let rows: Vec<FlagWithConfigRow> = flags::table
            .inner_join(projects::table.on(projects::id.eq(flags::project_id)))
            .left_join(
                flag_configs::table.on(flag_configs::project_id
                    .eq(flags::project_id)
                    .and(flag_configs::flag_key.eq(flags::key))),
            )
            .left_join(
                environments::table.on(environments::project_id
                    .nullable()
                    .eq(flag_configs::project_id.nullable())
                    .and(
                        environments::key
                            .nullable()
                            .eq(flag_configs::environment_key.nullable()),
                    )),
            )
            .filter(projects::key.eq(project_key))
            .filter(flags::key.eq(key))
            .select((
                FlagRow::as_select(),
                flag_configs::environment_key.nullable(),
                environments::name.nullable(),
                flag_configs::config.nullable(),
            ))
            .load(self.conn)
            .store()?;
        let mut flag: Option<Flag> = None;
        for (row, env_key, env_name, config) in rows {
            let flag = match &mut flag {
                Some(flag) => flag,
                None => flag.insert(row.into_flag()?),
            };
            if let (Some(env_key), Some(env_name), Some(config)) = (env_key, env_name, config) {
                flag.environments
                    .insert(env_key, read_config(&config, env_name)?);
            }
        }
        Ok(flag)
    }

    fn list_flags(
        &mut self,
        project_id: &str,
        q: &FlagQuery,
        environments: &[String],
    ) -> StoreResult<(Vec<Flag>, u64)> {
        let total: i64 = filtered_flags(project_id, q)
            .count()
            .get_result(self.conn)
            .store()?;
        let query = filtered_flags(project_id, q);
        let query = match (q.sort.field, q.sort.direction) {
            (FlagSortField::CreationDate, direction) => {
                sorted!(query, direction, flags::creation_date, flags::key)
            }
            (FlagSortField::Key, Direction::Ascending) => query.order(flags::key.asc()),
            (FlagSortField::Key, Direction::Descending) => query.order(flags::key.desc()),
            (FlagSortField::Name, direction) => sorted!(query, direction, flags::name, flags::key),
        };
        let query = match q.page {
            Some(page) => query
                .limit(i64::from(page.limit))
                .offset(to_i64(page.offset)),
            None => query,
        };
        let rows: Vec<FlagRow> = query.select(FlagRow::as_select()).load(self.conn).store()?;
        let flags = self.finish_flags(project_id, rows, Some(environments))?;
        Ok((flags, count(total)))
    }

    fn update_flag(
        &mut self,
        project_id: &str,
        flag: &Locked<Flag>,
        changed_environments: &[String],
    ) -> StoreResult<()> {
        let flag: &Flag = flag;
        diesel::update(
            flags::table
                .filter(flags::project_id.eq(project_id))
                .filter(flags::key.eq(&flag.key)),
        )
        .set(FlagRow::from_flag(project_id, flag)?)
        .execute(self.conn)
        .store()?;
        self.replace_flag_tags(project_id, flag)?;
        self.replace_flag_prerequisites(project_id, flag)?;
        self.replace_flag_segment_refs(project_id, flag)?;
        for env_key in changed_environments {
            let Some(config) = flag.environments.get(env_key) else {
                continue;
            };
            diesel::update(
                flag_configs::table
                    .filter(flag_configs::project_id.eq(project_id))
                    .filter(flag_configs::flag_key.eq(&flag.key))
                    .filter(flag_configs::environment_key.eq(env_key)),
            )
            .set(flag_configs::config.eq(config_json(config)?))
            .execute(self.conn)
            .store()?;
        }
        Ok(())
    }

    fn delete_flag(&mut self, project_id: &str, flag: &Locked<Flag>) -> StoreResult<()> {
        diesel::delete(
            flags::table
                .filter(flags::project_id.eq(project_id))
                .filter(flags::key.eq(&flag.key)),
        )
        .execute(self.conn)
        .store()?;
        Ok(())
    }

    fn flag_status_facts(
        &mut self,
        project_id: &str,
        flag: Option<&str>,
        environments: &[String],
    ) -> StoreResult<Vec<(String, String, StatusFacts)>> {
        /// The parts of a stored configuration a status needs; the target values themselves
        /// are counted, not kept.
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct ConfigFacts {
            on: bool,
            archived: bool,
            version: i64,
            last_modified: i64,
            #[serde(default)]
            targets: Vec<TargetValues>,
            #[serde(default)]
            context_targets: Vec<TargetValues>,
            #[serde(default)]
            rules: Vec<serde::de::IgnoredAny>,
            #[serde(default)]
            prerequisites: Vec<serde::de::IgnoredAny>,
            fallthrough: VariationOrRollout,
        }
        #[derive(serde::Deserialize)]
        struct TargetValues {
            values: Vec<serde::de::IgnoredAny>,
        }
        let mut query = flags::table
            .inner_join(
                flag_configs::table.on(flag_configs::project_id
                    .eq(flags::project_id)
                    .and(flag_configs::flag_key.eq(flags::key))),
            )
            .filter(flags::project_id.eq(project_id))
            .into_boxed::<Backend>();
        if let Some(flag) = flag {
            query = query.filter(flags::key.eq(flag));
        }
        if !environments.is_empty() {
            query = query.filter(flag_configs::environment_key.eq_any(environments));
        }
        let rows: Vec<(String, i64, bool, String, String)> = query
            .order((flags::key, flag_configs::environment_key))
            .select((
                flags::key,
                flags::creation_date,
                flags::archived,
                flag_configs::environment_key,
                flag_configs::config,
            ))
            .load(self.conn)
            .store()?;
        rows.into_iter()
            .map(|(key, creation_date, archived, environment, config)| {
                let config: ConfigFacts =
                    serde_json::from_str(&config).map_err(|e| corrupt("flag configuration", e))?;
                let facts = StatusFacts {
                    creation_date,
                    archived: archived || config.archived,
                    on: config.on,
                    version: config.version,
                    last_modified: config.last_modified,
                    target_values: config
                        .targets
                        .iter()
                        .chain(&config.context_targets)
                        .map(|t| t.values.len())
                        .sum(),
                    rules: config.rules.len(),
                    prerequisites: config.prerequisites.len(),
                    fallthrough: config.fallthrough,
                };
                Ok((key, environment, facts))
            })
            .collect()
    }

    fn flag_facts(&mut self, project_id: &str) -> StoreResult<Vec<FlagFacts>> {
        #[derive(serde::Deserialize)]
        struct VariationId {
            #[serde(rename = "_id")]
            id: String,
        }
        #[derive(serde::Deserialize)]
        struct Variations {
            variations: Vec<VariationId>,
        }
        let rows: Vec<(String, bool, String)> = flags::table
            .filter(flags::project_id.eq(project_id))
            .select((flags::key, flags::archived, flags::settings))
            .load(self.conn)
            .store()?;
        let edges: Vec<(String, String, String, i32)> = flag_prerequisites::table
            .filter(flag_prerequisites::project_id.eq(project_id))
            .select((
                flag_prerequisites::flag_key,
                flag_prerequisites::environment_key,
                flag_prerequisites::prerequisite_key,
                flag_prerequisites::variation,
            ))
            .load(self.conn)
            .store()?;
        let mut by_flag: BTreeMap<String, Vec<PrerequisiteEdge>> = BTreeMap::new();
        for (flag_key, environment, key, variation) in edges {
            let variation = usize::try_from(variation).map_err(|e| corrupt("prerequisite", e))?;
            by_flag.entry(flag_key).or_default().push(PrerequisiteEdge {
                environment,
                key,
                variation,
            });
        }
        rows.into_iter()
            .map(|(key, archived, settings)| {
                let variations: Variations =
                    serde_json::from_str(&settings).map_err(|e| corrupt("flag", e))?;
                Ok(FlagFacts {
                    prerequisites: by_flag.remove(&key).unwrap_or_default(),
                    variation_ids: variations.variations.into_iter().map(|v| v.id).collect(),
                    archived,
                    key,
                })
            })
            .collect()
    }

    fn flag_dependents(
        &mut self,
        project_id: &str,
        key: &str,
    ) -> StoreResult<Vec<(String, String, String)>> {
        flag_prerequisites::table
            .inner_join(
                flags::table.on(flags::project_id
                    .eq(flag_prerequisites::project_id)
                    .and(flags::key.eq(flag_prerequisites::flag_key))),
            )
            .filter(flag_prerequisites::project_id.eq(project_id))
            .filter(flag_prerequisites::prerequisite_key.eq(key))
            .order((
                flag_prerequisites::flag_key,
                flag_prerequisites::environment_key,
            ))
            .select((
                flag_prerequisites::flag_key,
                flags::name,
                flag_prerequisites::environment_key,
            ))
            .load(self.conn)
            .store()
    }

    fn insert_segment(
        &mut self,
        project_id: &str,
        environment_key: &str,
        segment: &Segment,
    ) -> StoreResult<()> {
        diesel::insert_into(segments::table)
            .values(SegmentRow::from_segment(
                project_id,
                environment_key,
                segment,
            )?)
            .execute(self.conn)
            .store()?;
        self.replace_segment_tags(project_id, environment_key, segment)
    }

    fn get_segment(
        &mut self,
        project_id: &str,
        environment_key: &str,
        key: &str,
    ) -> StoreResult<Option<Segment>> {
        let row: Option<SegmentRow> = segments::table
            .filter(segments::project_id.eq(project_id))
            .filter(segments::environment_key.eq(environment_key))
            .filter(segments::key.eq(key))
            .select(SegmentRow::as_select())
            .first(self.conn)
            .optional()
            .store()?;
        row.map(SegmentRow::into_segment).transpose()
    }

    fn lock_segment(
        &mut self,
        project_id: &str,
        environment_key: &str,
        key: &str,
    ) -> StoreResult<Option<Locked<Segment>>> {
        let locked = lock_rows!(
            self.conn,
            segments::table
                .filter(segments::project_id.eq(project_id))
                .filter(segments::environment_key.eq(environment_key))
                .filter(segments::key.eq(key))
                .select(segments::key)
        );
        if locked.is_empty() {
            return Ok(None);
        }
        Ok(self
            .get_segment(project_id, environment_key, key)?
            .map(Locked::assume_locked))
    }

    fn lock_segments(
        &mut self,
        project_id: &str,
        environment_key: &str,
    ) -> StoreResult<Vec<Locked<Segment>>> {
        let locked = lock_rows!(
            self.conn,
            segments::table
                .filter(segments::project_id.eq(project_id))
                .filter(segments::environment_key.eq(environment_key))
                .order(segments::key.asc())
                .select(segments::key)
        );
        if locked.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<SegmentRow> = segments::table
            .filter(segments::project_id.eq(project_id))
            .filter(segments::environment_key.eq(environment_key))
            .order(segments::key.asc())
            .select(SegmentRow::as_select())
            .load(self.conn)
            .store()?;
        rows.into_iter()
            .map(|row| row.into_segment().map(Locked::assume_locked))
            .collect()
    }

    fn list_segments(
        &mut self,
        project_id: &str,
        environment_key: &str,
        q: &SegmentQuery,
    ) -> StoreResult<(Vec<Segment>, u64)> {
        let total: i64 = filtered_segments(project_id, environment_key, q)
            .count()
            .get_result(self.conn)
            .store()?;
        let query = filtered_segments(project_id, environment_key, q);
        let query = match (q.sort.field, q.sort.direction) {
            (SegmentSortField::CreationDate, direction) => {
                sorted!(query, direction, segments::creation_date, segments::key)
            }
            (SegmentSortField::Name, direction) => {
                sorted!(query, direction, segments::name, segments::key)
            }
            (SegmentSortField::LastModified, direction) => {
                sorted!(query, direction, segments::last_modified, segments::key)
            }
        };
        let rows = load_page!(self.conn, query, q.page, SegmentRow);
        Ok((
            rows.into_iter()
                .map(SegmentRow::into_segment)
                .collect::<StoreResult<_>>()?,
            count(total),
        ))
    }

    fn update_segment(
        &mut self,
        project_id: &str,
        environment_key: &str,
        segment: &Locked<Segment>,
    ) -> StoreResult<()> {
        let segment: &Segment = segment;
        diesel::update(
            segments::table
                .filter(segments::project_id.eq(project_id))
                .filter(segments::environment_key.eq(environment_key))
                .filter(segments::key.eq(&segment.key)),
        )
        .set(SegmentRow::from_segment(
            project_id,
            environment_key,
            segment,
        )?)
        .execute(self.conn)
        .store()?;
        self.replace_segment_tags(project_id, environment_key, segment)
    }

    fn delete_segment(
        &mut self,
        project_id: &str,
        environment_key: &str,
        segment: &Locked<Segment>,
    ) -> StoreResult<()> {
        diesel::delete(
            segments::table
                .filter(segments::project_id.eq(project_id))
                .filter(segments::environment_key.eq(environment_key))
                .filter(segments::key.eq(&segment.key)),
        )
        .execute(self.conn)
        .store()?;
        Ok(())
    }

    fn segment_users(
        &mut self,
        project_id: &str,
        environment_key: &str,
        key: &str,
    ) -> StoreResult<Vec<(String, String)>> {
        flag_segment_refs::table
            .inner_join(
                flags::table.on(flags::project_id
                    .eq(flag_segment_refs::project_id)
                    .and(flags::key.eq(flag_segment_refs::flag_key))),
            )
            .filter(flag_segment_refs::project_id.eq(project_id))
            .filter(flag_segment_refs::environment_key.eq(environment_key))
            .filter(flag_segment_refs::segment_key.eq(key))
            .order(flags::key)
            .select((flags::key, flags::name))
            .load(self.conn)
            .store()
    }

    fn existing_segments(
        &mut self,
        project_id: &str,
        environment_key: &str,
        keys: &[String],
    ) -> StoreResult<Vec<String>> {
        // Shared locks: a segment found here cannot be deleted (which locks it for update first)
        // before this transaction, which is about to refer to it, commits. Sorted, so that the
        // rows are locked in one order whatever the chunking.
        let mut keys = keys.to_vec();
        keys.sort();
        let conn = &mut *self.conn;
        chunked(&keys, |keys| {
            let existing = segments::table
                .filter(segments::project_id.eq(project_id))
                .filter(segments::environment_key.eq(environment_key))
                .filter(segments::key.eq_any(keys))
                .order(segments::key)
                .select(segments::key);
            match &mut *conn {
                DbConnection::Pg(conn) => existing.for_share().load(conn),
                DbConnection::Sqlite(conn) => existing.load(conn),
            }
            .store()
        })
    }

    fn insert_audit_entry(&mut self, entry: &AuditEntry) -> StoreResult<()> {
        // The listing fields and the detail are stored apart: a listing reads only the former.
        let json = serde_json::to_string(&entry.listing())
            .map_err(|e| StoreError::Other(e.to_string()))?;
        diesel::insert_into(audit_log::table)
            .values((
                audit_log::id.eq(&entry.id),
                audit_log::date.eq(entry.date),
                audit_log::kind.eq(&entry.kind),
                audit_log::search.eq(format!(
                    "{}\n{}",
                    entry.name.to_lowercase(),
                    entry.description.to_lowercase()
                )),
                audit_log::entry.eq(json),
            ))
            .execute(self.conn)
            .store()?;
        if entry.delta.is_some()
            || entry.previous_version.is_some()
            || entry.current_version.is_some()
        {
            let detail = serde_json::to_string(&AuditDetailRef {
                delta: entry.delta.as_ref(),
                previous_version: entry.previous_version.as_ref(),
                current_version: entry.current_version.as_ref(),
            })
            .map_err(|e| StoreError::Other(e.to_string()))?;
            diesel::insert_into(audit_details::table)
                .values((
                    audit_details::entry_id.eq(&entry.id),
                    audit_details::detail.eq(detail),
                ))
                .execute(self.conn)
                .store()?;
        }
        let mut resources: Vec<&String> = entry
            .accesses
            .iter()
            .map(|a| &a.resource)
            .chain(&entry.target.resources)
            .collect();
        resources.sort();
        resources.dedup();
        let rows: Vec<_> = resources
            .into_iter()
            .map(|r| {
                (
                    audit_resources::entry_id.eq(&entry.id),
                    audit_resources::resource.eq(r),
                )
            })
            .collect();
        insert_rows!(self.conn, audit_resources, rows);
        Ok(())
    }

    fn list_audit_entries(&mut self, q: &AuditQuery) -> StoreResult<Vec<AuditEntry>> {
        // SQL narrows by LIKE (where `*` may cross `:`); the exact specifier match refines, and
        // the next batch continues after the last row seen until the page is full.
        let like = q.spec.as_ref().map(|spec| {
            let escaped = spec
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_");
            escaped.replace('*', "%")
        });
        let want = usize::try_from(q.limit).unwrap_or(10);
        let batch = i64::from(q.limit.max(10) * 4);
        let mut found = Vec::new();
        let mut cursor: Option<(i64, String)> = None;
        loop {
            let mut query = audit_log::table.into_boxed::<Backend>();
            if let Some(before) = q.before {
                query = query.filter(audit_log::date.lt(before));
            }
            if let Some(after) = q.after {
                query = query.filter(audit_log::date.gt(after));
            }
            if let Some(text) = &q.q {
                query = query.filter(audit_log::search.like(contains_pattern(text)).escape('\\'));
            }
            if let Some(like) = &like {
                query = query.filter(
                    audit_log::id.eq_any(
                        audit_resources::table
                            .filter(audit_resources::resource.like(like.clone()).escape('\\'))
                            .select(audit_resources::entry_id),
                    ),
                );
            }
            if let Some((date, id)) = &cursor {
                query = query.filter(
                    audit_log::date
                        .lt(*date)
                        .or(audit_log::date.eq(*date).and(audit_log::id.lt(id.clone()))),
                );
            }
            let rows: Vec<(i64, String, String)> = query
                .order((audit_log::date.desc(), audit_log::id.desc()))
                .limit(batch)
                .select((audit_log::date, audit_log::id, audit_log::entry))
                .load(self.conn)
                .store()?;
            let exhausted = rows.len() < usize::try_from(batch).unwrap_or(usize::MAX);
            for (date, id, json) in rows {
                cursor = Some((date, id));
                let mut entry: AuditEntry =
                    serde_json::from_str(&json).map_err(|e| corrupt("audit entry", e))?;
                // Only entries written before the detail was stored apart still carry it.
                entry.delta = None;
                entry.previous_version = None;
                entry.current_version = None;
                let matches = q.spec.as_ref().is_none_or(|spec| {
                    entry
                        .accesses
                        .iter()
                        .map(|a| &a.resource)
                        .chain(&entry.target.resources)
                        .any(|r| specifier_matches(spec, r))
                });
                if matches {
                    found.push(entry);
                    if found.len() == want {
                        return Ok(found);
                    }
                }
            }
            if exhausted {
                return Ok(found);
            }
        }
    }

    fn get_audit_entry(&mut self, id: &str) -> StoreResult<Option<AuditEntry>> {
        let row: Option<(String, Option<String>)> = audit_log::table
            .left_join(audit_details::table)
            .filter(audit_log::id.eq(id))
            .select((audit_log::entry, audit_details::detail.nullable()))
            .first(self.conn)
            .optional()
            .store()?;
        let Some((json, detail)) = row else {
            return Ok(None);
        };
        let mut entry: AuditEntry =
            serde_json::from_str(&json).map_err(|e| corrupt("audit entry", e))?;
        // Without a detail row, the entry was written with its detail inside.
        if let Some(detail) = detail {
            let detail: AuditDetail =
                serde_json::from_str(&detail).map_err(|e| corrupt("audit entry detail", e))?;
            entry.delta = detail.delta;
            entry.previous_version = detail.previous_version;
            entry.current_version = detail.current_version;
        }
        Ok(Some(entry))
    }

    fn insert_webhook(&mut self, webhook: &Webhook, now: i64) -> StoreResult<()> {
        let doc = serde_json::to_string(webhook).map_err(|e| StoreError::Other(e.to_string()))?;
        diesel::insert_into(webhooks::table)
            .values((
                webhooks::id.eq(&webhook.id),
                webhooks::creation_date.eq(now),
                webhooks::doc.eq(doc),
            ))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn get_webhook(&mut self, id: &str) -> StoreResult<Option<Webhook>> {
        let doc: Option<String> = webhooks::table
            .find(id)
            .select(webhooks::doc)
            .first(self.conn)
            .optional()
            .store()?;
        doc.map(|d| serde_json::from_str(&d).map_err(|e| corrupt("webhook", e)))
            .transpose()
    }

    fn lock_webhook(&mut self, id: &str) -> StoreResult<Option<Locked<Webhook>>> {
        if lock_rows!(self.conn, webhooks::table.find(id).select(webhooks::id)).is_empty() {
            return Ok(None);
        }
        Ok(self.get_webhook(id)?.map(Locked::assume_locked))
    }

    fn list_webhooks(&mut self) -> StoreResult<Vec<Webhook>> {
        let docs: Vec<String> = webhooks::table
            .order((webhooks::creation_date, webhooks::id))
            .select(webhooks::doc)
            .load(self.conn)
            .store()?;
        docs.iter()
            .map(|d| serde_json::from_str(d).map_err(|e| corrupt("webhook", e)))
            .collect()
    }

    fn update_webhook(&mut self, webhook: &Locked<Webhook>) -> StoreResult<()> {
        let webhook: &Webhook = webhook;
        let doc = serde_json::to_string(webhook).map_err(|e| StoreError::Other(e.to_string()))?;
        diesel::update(webhooks::table.find(&webhook.id))
            .set(webhooks::doc.eq(doc))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn delete_webhook(&mut self, webhook: &Locked<Webhook>) -> StoreResult<()> {
        diesel::delete(webhooks::table.find(&webhook.id))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn enqueue_delivery(&mut self, delivery: &QueuedDelivery) -> StoreResult<()> {
        diesel::insert_into(webhook_deliveries::table)
            .values((
                webhook_deliveries::id.eq(&delivery.id),
                webhook_deliveries::webhook_id.eq(&delivery.webhook_id),
                webhook_deliveries::entry_id.eq(&delivery.entry_id),
                webhook_deliveries::payload.eq(&delivery.payload),
                webhook_deliveries::state.eq("pending"),
                webhook_deliveries::attempts.eq(0),
                webhook_deliveries::next_attempt_at.eq(delivery.created_at),
                webhook_deliveries::created_at.eq(delivery.created_at),
            ))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn claim_deliveries(
        &mut self,
        now: i64,
        lease_until: i64,
        limit: u32,
    ) -> StoreResult<Vec<ClaimedDelivery>> {
        let due = webhook_deliveries::table
            .filter(webhook_deliveries::state.eq("pending"))
            .filter(webhook_deliveries::next_attempt_at.le(now))
            .order((webhook_deliveries::next_attempt_at, webhook_deliveries::id))
            .limit(i64::from(limit))
            .select(webhook_deliveries::id);
        // On PostgreSQL several replicas may claim at once: each skips rows another one holds.
        // SQLite has one writer at a time, so a plain read is enough.
        let ids: Vec<String> = match &mut *self.conn {
            DbConnection::Pg(conn) => due.for_update().skip_locked().load(conn),
            DbConnection::Sqlite(conn) => due.load(conn),
        }
        .store()?;
        if ids.is_empty() {
            return Ok(vec![]);
        }
        diesel::update(webhook_deliveries::table.filter(webhook_deliveries::id.eq_any(&ids)))
            .set(webhook_deliveries::next_attempt_at.eq(lease_until))
            .execute(self.conn)
            .store()?;
        let rows: Vec<(String, String, String, String, i32, String)> = webhook_deliveries::table
            .inner_join(webhooks::table)
            .filter(webhook_deliveries::id.eq_any(&ids))
            .order((webhook_deliveries::created_at, webhook_deliveries::id))
            .select((
                webhook_deliveries::id,
                webhook_deliveries::webhook_id,
                webhook_deliveries::entry_id,
                webhook_deliveries::payload,
                webhook_deliveries::attempts,
                webhooks::doc,
            ))
            .load(self.conn)
            .store()?;
        rows.into_iter()
            .map(|(id, webhook_id, entry_id, payload, attempts, doc)| {
                Ok(ClaimedDelivery {
                    id,
                    webhook_id,
                    entry_id,
                    webhook: serde_json::from_str(&doc).map_err(|e| corrupt("webhook", e))?,
                    payload,
                    attempts: u32::try_from(attempts).unwrap_or(0),
                })
            })
            .collect()
    }

    fn record_attempt(
        &mut self,
        attempt: &DeliveryAttempt,
        webhook_id: &str,
        outcome: DeliveryOutcome,
    ) -> StoreResult<()> {
        diesel::insert_into(webhook_attempts::table)
            .values((
                webhook_attempts::delivery_id.eq(&attempt.delivery_id),
                webhook_attempts::webhook_id.eq(webhook_id),
                webhook_attempts::entry_id.eq(&attempt.entry_id),
                webhook_attempts::attempt.eq(i32::try_from(attempt.attempt).unwrap_or(i32::MAX)),
                webhook_attempts::date.eq(attempt.date),
                webhook_attempts::status_code.eq(attempt.status_code.map(i32::from)),
                webhook_attempts::error.eq(&attempt.error),
                webhook_attempts::duration_ms.eq(attempt.duration_ms),
            ))
            .execute(self.conn)
            .store()?;
        let (state, next) = match outcome {
            DeliveryOutcome::Delivered => ("delivered", attempt.date),
            DeliveryOutcome::RetryAt(at) => ("pending", at),
            DeliveryOutcome::GaveUp => ("failed", attempt.date),
        };
        diesel::update(webhook_deliveries::table.find(&attempt.delivery_id))
            .set((
                webhook_deliveries::state.eq(state),
                webhook_deliveries::attempts.eq(i32::try_from(attempt.attempt).unwrap_or(i32::MAX)),
                webhook_deliveries::next_attempt_at.eq(next),
            ))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn list_attempts(&mut self, webhook_id: &str, limit: u32) -> StoreResult<Vec<DeliveryAttempt>> {
        let rows: Vec<AttemptRow> = webhook_attempts::table
            .filter(webhook_attempts::webhook_id.eq(webhook_id))
            .order((
                webhook_attempts::date.desc(),
                webhook_attempts::attempt.desc(),
            ))
            .limit(i64::from(limit))
            .select(AttemptRow::as_select())
            .load(self.conn)
            .store()?;
        Ok(rows
            .into_iter()
            .map(|row| DeliveryAttempt {
                delivery_id: row.delivery_id,
                entry_id: row.entry_id,
                attempt: u32::try_from(row.attempt).unwrap_or(0),
                date: row.date,
                status_code: row.status_code.and_then(|s| u16::try_from(s).ok()),
                error: row.error,
                duration_ms: row.duration_ms,
            })
            .collect())
    }

    fn flag_defaults(&mut self, project_id: &str) -> StoreResult<Vec<(String, Defaults)>> {
        let rows: Vec<(String, i32, i32)> = flags::table
            .filter(flags::project_id.eq(project_id))
            .select((flags::key, flags::default_on, flags::default_off))
            .load(self.conn)
            .store()?;
        rows.into_iter()
            .map(|(key, on, off)| {
                let index = |i: i32| usize::try_from(i).map_err(|e| corrupt("flag defaults", e));
                Ok((
                    key,
                    Defaults {
                        on_variation: index(on)?,
                        off_variation: index(off)?,
                    },
                ))
            })
            .collect()
    }

    fn insert_flag_configs(
        &mut self,
        project_id: &str,
        environment_key: &str,
        configs: &[(String, FlagConfig)],
    ) -> StoreResult<()> {
        let rows = configs
            .iter()
            .map(|(flag_key, config)| {
                Ok(FlagConfigRow {
                    project_id: project_id.to_owned(),
                    flag_key: flag_key.clone(),
                    environment_key: environment_key.to_owned(),
                    config: config_json(config)?,
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        insert_rows!(self.conn, flag_configs, rows);
        let prerequisites: Vec<_> = configs
            .iter()
            .flat_map(|(flag_key, config)| {
                config.prerequisites.iter().map(move |p| {
                    (
                        flag_prerequisites::project_id.eq(project_id),
                        flag_prerequisites::flag_key.eq(flag_key),
                        flag_prerequisites::environment_key.eq(environment_key),
                        flag_prerequisites::prerequisite_key.eq(&p.key),
                        flag_prerequisites::variation.eq(index_i32(p.variation)),
                    )
                })
            })
            .collect();
        insert_rows!(self.conn, flag_prerequisites, prerequisites);
        let segment_refs: Vec<_> = configs
            .iter()
            .flat_map(|(flag_key, config)| {
                Segment::referenced_by(config.rules.iter().flat_map(|r| &r.clauses))
                    .into_iter()
                    .map(move |segment| {
                        (
                            flag_segment_refs::project_id.eq(project_id),
                            flag_segment_refs::flag_key.eq(flag_key),
                            flag_segment_refs::environment_key.eq(environment_key),
                            flag_segment_refs::segment_key.eq(segment),
                        )
                    })
            })
            .collect();
        insert_rows!(self.conn, flag_segment_refs, segment_refs);
        Ok(())
    }
}
