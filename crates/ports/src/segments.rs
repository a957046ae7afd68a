//! Segments of environments.

use domain::id::ProjectId;
use domain::key::{EnvironmentKey, SegmentKey};
use domain::query::SegmentQuery;
use domain::segment::Segment;

use crate::{Listed, Locked, StoreResult};

/// A flag whose rules use a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentUser {
    /// The flag's key.
    pub flag_key: String,
    /// The flag's name.
    pub flag_name: String,
}

/// Segments, by key within one environment (`environment_key`) of a project (`project_id`).
pub trait SegmentRepository {
    /// Stores a new segment of an environment.
    fn insert_segment(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        segment: &Segment,
    ) -> StoreResult<()>;
    /// A segment by key.
    fn get_segment(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        key: &SegmentKey,
    ) -> StoreResult<Option<Segment>>;
    /// A segment by key, locked until the transaction ends.
    fn lock_segment(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        key: &SegmentKey,
    ) -> StoreResult<Option<Locked<Segment>>>;
    /// Every segment of an environment, by key, each locked until the transaction ends.
    fn lock_segments(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
    ) -> StoreResult<Vec<Locked<Segment>>>;
    /// Every segment of an environment, by key, unlocked (what evaluations read).
    fn segments_of_environment(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
    ) -> StoreResult<Vec<Segment>>;
    /// One page of an environment's segments matching `query`, with the total count.
    fn list_segments(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        query: &SegmentQuery,
    ) -> StoreResult<Listed<Segment>>;
    /// Saves a segment.
    fn update_segment(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        segment: &Locked<Segment>,
    ) -> StoreResult<()>;
    /// Deletes a segment.
    fn delete_segment(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        segment: &Locked<Segment>,
    ) -> StoreResult<()>;
    /// Flags whose rules in the environment use segment `key`.
    fn segment_users(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        key: &SegmentKey,
    ) -> StoreResult<Vec<SegmentUser>>;
    /// Which of `keys` are segments of the environment; those found cannot be deleted until the
    /// transaction ends.
    fn existing_segments(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        keys: &[String],
    ) -> StoreResult<Vec<String>>;
}
