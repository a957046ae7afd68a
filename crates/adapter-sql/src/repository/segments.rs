//! [`SegmentRepository`] on diesel.

use diesel::prelude::*;
use domain::id::ProjectId;
use domain::key::{EnvironmentKey, SegmentKey};
use domain::query::{SegmentQuery, SegmentSortField};
use domain::segment::Segment;
use ports::{Listed, Locked, SegmentRepository, SegmentUser, StoreResult};

use crate::schema::{flag_segment_refs, flags, segment_tags, segments};
use crate::DbConnection;

use super::query::*;
use super::SqlRepository;
use crate::stored;

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
            key: segment.key.to_string(),
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
            doc: stored::segment::doc_json(segment)?,
        })
    }

    fn into_segment(self) -> StoreResult<Segment> {
        stored::segment::read_doc(&self.doc)
    }
}

/// The segments of one environment: what every segment query starts from.
type EnvironmentSegments<'a> = diesel::dsl::Filter<
    diesel::dsl::Filter<segments::table, diesel::dsl::Eq<segments::project_id, &'a str>>,
    diesel::dsl::Eq<segments::environment_key, &'a str>,
>;

/// The segments of environment `environment_key` of project `project_id`.
fn environment_segments<'a>(
    project_id: &'a str,
    environment_key: &'a str,
) -> EnvironmentSegments<'a> {
    segments::table
        .filter(segments::project_id.eq(project_id))
        .filter(segments::environment_key.eq(environment_key))
}

fn filtered_segments<'a>(
    project_id: &'a str,
    environment_key: &'a str,
    q: &'a SegmentQuery,
) -> segments::BoxedQuery<'a, Backend> {
    let mut query = environment_segments(project_id, environment_key).into_boxed();
    if let Some(text) = &q.query {
        query = query.filter(segments::search.like(search_pattern(text)).escape('\\'));
    }
    query = with_all_tags!(
        query,
        &q.tags,
        segments::key,
        segment_tags.segment_key,
        project_id = project_id,
        environment_key = environment_key
    );
    query
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
                segment_key = segment.key.as_str()
            ],
            segment.tags
        );
        Ok(())
    }
}

impl SegmentRepository for SqlRepository<'_> {
    fn insert_segment(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
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
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        key: &SegmentKey,
    ) -> StoreResult<Option<Segment>> {
        let row: Option<SegmentRow> = environment_segments(project_id, environment_key)
            .filter(segments::key.eq(key.as_str()))
            .select(SegmentRow::as_select())
            .first(self.conn)
            .optional()
            .store()?;
        row.map(SegmentRow::into_segment).transpose()
    }

    fn lock_segment(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        key: &SegmentKey,
    ) -> StoreResult<Option<Locked<Segment>>> {
        let locked = lock_rows!(
            self.conn,
            environment_segments(project_id, environment_key)
                .filter(segments::key.eq(key.as_str()))
                .select(segments::key)
        );
        held(&locked, || {
            self.get_segment(project_id, environment_key, key)
        })
    }

    fn lock_segments(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
    ) -> StoreResult<Vec<Locked<Segment>>> {
        let locked = lock_rows!(
            self.conn,
            environment_segments(project_id, environment_key)
                .order(segments::key.asc())
                .select(segments::key)
        );
        if locked.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<SegmentRow> = environment_segments(project_id, environment_key)
            .order(segments::key.asc())
            .select(SegmentRow::as_select())
            .load(self.conn)
            .store()?;
        rows.into_iter()
            .map(|row| row.into_segment().map(Locked::assume_locked))
            .collect()
    }

    fn segments_of_environment(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
    ) -> StoreResult<Vec<Segment>> {
        let rows: Vec<SegmentRow> = environment_segments(project_id, environment_key)
            .order(segments::key.asc())
            .select(SegmentRow::as_select())
            .load(self.conn)
            .store()?;
        rows.into_iter().map(SegmentRow::into_segment).collect()
    }

    fn list_segments(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        q: &SegmentQuery,
    ) -> StoreResult<Listed<Segment>> {
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
        Ok(Listed::new(
            rows.into_iter()
                .map(SegmentRow::into_segment)
                .collect::<StoreResult<_>>()?,
            count(total),
        ))
    }

    fn update_segment(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        segment: &Locked<Segment>,
    ) -> StoreResult<()> {
        let segment: &Segment = segment;
        diesel::update(
            environment_segments(project_id, environment_key)
                .filter(segments::key.eq(segment.key.as_str())),
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
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        segment: &Locked<Segment>,
    ) -> StoreResult<()> {
        diesel::delete(
            environment_segments(project_id, environment_key)
                .filter(segments::key.eq(segment.key.as_str())),
        )
        .execute(self.conn)
        .store()?;
        Ok(())
    }

    fn segment_users(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        key: &SegmentKey,
    ) -> StoreResult<Vec<SegmentUser>> {
        let rows: Vec<(String, String)> = flag_segment_refs::table
            .inner_join(
                flags::table.on(flags::project_id
                    .eq(flag_segment_refs::project_id)
                    .and(flags::key.eq(flag_segment_refs::flag_key))),
            )
            .filter(flag_segment_refs::project_id.eq(project_id.as_str()))
            .filter(flag_segment_refs::environment_key.eq(environment_key.as_str()))
            .filter(flag_segment_refs::segment_key.eq(key.as_str()))
            .order(flags::key)
            .select((flags::key, flags::name))
            .load(self.conn)
            .store()?;
        Ok(rows
            .into_iter()
            .map(|(flag_key, flag_name)| SegmentUser {
                flag_key,
                flag_name,
            })
            .collect())
    }

    fn existing_segments(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        keys: &[String],
    ) -> StoreResult<Vec<String>> {
        // Shared locks: a segment found here cannot be deleted (which locks it for update first)
        // before this transaction, which is about to refer to it, commits. Sorted, so that the
        // rows are locked in one order whatever the chunking.
        let mut keys = keys.to_vec();
        keys.sort();
        let conn = &mut *self.conn;
        chunked(&keys, |keys| {
            let existing = environment_segments(project_id, environment_key)
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
}
