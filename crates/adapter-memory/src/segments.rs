//! Segments of an environment.

use std::cmp::Ordering;

use domain::query::{SegmentQuery, SegmentSortField};
use domain::segment::Segment;
use ports::StoreResult;

use crate::{
    directed, duplicate, has_all_tags, matches_search, missing, one_page, rows, search_text,
    tag_rows, Tables,
};

fn segment_order(field: SegmentSortField, a: &Segment, b: &Segment) -> Ordering {
    match field {
        SegmentSortField::CreationDate => a.creation_date.cmp(&b.creation_date),
        SegmentSortField::Name => a.name.cmp(&b.name),
        SegmentSortField::LastModified => a.last_modified_date.cmp(&b.last_modified_date),
    }
    .then_with(|| a.key.cmp(&b.key))
}

/// What the `query` filter of segments searches: key, name and description.
fn segment_search(segment: &Segment) -> String {
    search_text(&[
        &segment.key,
        &segment.name,
        segment.description.as_deref().unwrap_or_default(),
    ])
}

fn segment_id(project_id: &str, environment_key: &str, key: &str) -> (String, String, String) {
    (
        project_id.to_owned(),
        environment_key.to_owned(),
        key.to_owned(),
    )
}

impl Tables {
    pub(crate) fn insert_segment(
        &mut self,
        project_id: &str,
        environment_key: &str,
        segment: &Segment,
    ) -> StoreResult<()> {
        let id = segment_id(project_id, environment_key, &segment.key);
        if self.segments.contains_key(&id) {
            return Err(duplicate(
                "segments.project_id, segments.environment_key, segments.key",
            ));
        }
        if self.environment_row(project_id, environment_key).is_none() {
            return Err(missing("segments.environment_key"));
        }
        tag_rows(&segment.tags, "segment_tags")?;
        rows(&mut self.segments).insert(id, segment.clone());
        Ok(())
    }

    pub(crate) fn get_segment(
        &self,
        project_id: &str,
        environment_key: &str,
        key: &str,
    ) -> Option<Segment> {
        self.segments
            .get(&segment_id(project_id, environment_key, key))
            .cloned()
    }

    /// Every segment of the environment, by key.
    pub(crate) fn all_segments(&self, project_id: &str, environment_key: &str) -> Vec<Segment> {
        self.segments
            .iter()
            .filter(|((p, e, _), _)| p == project_id && e == environment_key)
            .map(|(_, segment)| segment.clone())
            .collect()
    }

    pub(crate) fn list_segments(
        &self,
        project_id: &str,
        environment_key: &str,
        q: &SegmentQuery,
    ) -> (Vec<Segment>, u64) {
        let mut found: Vec<Segment> = self
            .all_segments(project_id, environment_key)
            .into_iter()
            .filter(|s| {
                q.query
                    .as_ref()
                    .is_none_or(|text| matches_search(&segment_search(s), text))
            })
            .filter(|s| has_all_tags(&s.tags, &q.tags))
            .collect();
        found.sort_by(|a, b| directed(q.sort.direction, segment_order(q.sort.field, a, b)));
        one_page(found, q.page)
    }

    pub(crate) fn update_segment(
        &mut self,
        project_id: &str,
        environment_key: &str,
        segment: &Segment,
    ) -> StoreResult<()> {
        let id = segment_id(project_id, environment_key, &segment.key);
        if !self.segments.contains_key(&id) {
            return Ok(());
        }
        tag_rows(&segment.tags, "segment_tags")?;
        rows(&mut self.segments).insert(id, segment.clone());
        Ok(())
    }

    pub(crate) fn delete_segment(&mut self, project_id: &str, environment_key: &str, key: &str) {
        rows(&mut self.segments).remove(&segment_id(project_id, environment_key, key));
    }

    /// Which of `keys` are segments of the environment, sorted.
    pub(crate) fn existing_segments(
        &self,
        project_id: &str,
        environment_key: &str,
        keys: &[String],
    ) -> Vec<String> {
        let mut found: Vec<String> = keys
            .iter()
            .filter(|key| {
                self.segments
                    .contains_key(&segment_id(project_id, environment_key, key))
            })
            .cloned()
            .collect();
        found.sort();
        found
    }
}
