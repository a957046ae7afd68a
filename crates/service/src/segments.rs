//! Segments, and the references flags' rules make to them.

use std::collections::BTreeSet;

use domain::flag::Flag;
use domain::id::ProjectId;
use domain::key::{EnvironmentKey, SegmentKey};
use domain::patch::JsonPatchBody;
use domain::policy::{Request, Resource};
use domain::query::SegmentQuery;
use domain::segment::{Segment, SegmentPatch, SegmentPost};
use ports::{Listed, Repository, StoreExt, TombstoneOf};

use crate::audit::{json, Change};
use crate::authorize::Authorized;
use serde_json::Value;

use crate::environments::load_environment;
use crate::projects::load_project;
use crate::{
    use_case, ApiResource, Permit, RandomIds, Service, ServiceError, ServiceResult, Write,
};

/// Segments. The use cases of `Service::segments`; they work with the service's data
/// ([`Service`], which this derefs to).
#[derive(Debug, Clone, Copy)]
pub struct Segments<'a>(&'a Service);

impl Service {
    /// Segments.
    pub fn segments(&self) -> Segments<'_> {
        Segments(self)
    }
}

impl std::ops::Deref for Segments<'_> {
    type Target = Service;

    fn deref(&self) -> &Service {
        self.0
    }
}

/// A change to a segment, in one of the three patch forms.
#[derive(Debug, Clone, PartialEq)]
pub enum SegmentChange {
    /// RFC 6902 operations.
    JsonPatch(JsonPatchBody),
    /// RFC 7386 merge document.
    MergePatch {
        /// Audit comment.
        comment: Option<String>,
        /// The merge document.
        merge: Value,
    },
    /// Segment instructions.
    Semantic(SegmentPatch),
}

/// One page of segments.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentPage {
    /// The page.
    pub items: Vec<Segment>,
    /// All matches.
    pub total: u64,
}

/// A segment with the flags whose rules use it.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentWithFlags {
    /// The segment.
    pub segment: Segment,
    /// `(flag key, flag name)` of the flags using it in this environment.
    pub flags: Vec<(String, String)>,
}

/// Checks that the environment a request names exists, and returns the project's id and the
/// environment's key.
fn environment_of(
    repo: &mut dyn Repository,
    project_key: &str,
    environment_key: &str,
) -> ServiceResult<(ProjectId, EnvironmentKey)> {
    let project = load_project(repo, project_key)?;
    let environment = load_environment(repo, &project.id, project_key, environment_key)?;
    Ok((project.id, environment.key))
}

fn segment_not_found(project_key: &str, environment_key: &str, key: &str) -> ServiceError {
    ServiceError::NotFound(format!(
        "no segment with key '{key}' in {project_key}/{environment_key}"
    ))
}

/// The segments `next` names in `segmentMatch` clauses that `previous` did not, which do not
/// exist in their environment: a message naming them, if any.
pub(crate) fn missing_segments(
    repo: &mut dyn Repository,
    project_id: &ProjectId,
    previous: Option<&Flag>,
    next: &Flag,
) -> ServiceResult<Option<String>> {
    let mut missing = Vec::new();
    for (env, config) in &next.environments {
        let named = Segment::referenced_by(config.rules.iter().flat_map(|r| &r.clauses));
        let before: BTreeSet<String> = previous
            .and_then(|p| p.environments.get(env))
            .map(|c| {
                Segment::referenced_by(c.rules.iter().flat_map(|r| &r.clauses))
                    .into_iter()
                    .collect()
            })
            .unwrap_or_default();
        let new: Vec<String> = named.into_iter().filter(|k| !before.contains(k)).collect();
        if new.is_empty() {
            continue;
        }
        let existing = repo.existing_segments(project_id, &EnvironmentKey::lookup(env), &new)?;
        missing.extend(
            new.into_iter()
                .filter(|k| !existing.contains(k))
                .map(|k| format!("'{k}' in '{env}'")),
        );
    }
    Ok((!missing.is_empty()).then(|| {
        format!(
            "segmentMatch names segments that do not exist: {}",
            missing.join(", ")
        )
    }))
}

impl Service {
    /// The API path of segment `key` of environment `environment_key` of project `project_key`.
    fn segment_href(&self, project_key: &str, environment_key: &str, key: &str) -> String {
        self.shown.href(ApiResource::Segment {
            project_key,
            environment_key,
            key,
        })
    }

    fn patch_segment_as(
        &self,
        permit: &Permit<use_case::PatchSegment>,
        project_key: &str,
        environment_key: &str,
        key: &str,
        change: &SegmentChange,
        write: Write,
    ) -> ServiceResult<Segment> {
        let caller = permit.caller();
        // It answers the resource even when it changes nothing: only for a caller who may read it.
        caller.require_view(project_key)?;
        if let SegmentChange::Semantic(patch) = change {
            if patch.environment_key != environment_key {
                return Err(ServiceError::invalid(format!(
                    "environmentKey '{}' is not this segment's environment '{environment_key}'",
                    patch.environment_key
                )));
            }
        }
        self.write(write, |repo| -> ServiceResult<_> {
            let (project_id, env_key) = environment_of(repo, project_key, environment_key)?;
            let mut held = repo
                .lock_segment(&project_id, &env_key, &SegmentKey::lookup(key))?
                .ok_or_else(|| segment_not_found(project_key, environment_key, key))?;
            let segment: &Segment = &held;
            let now = self.now();
            // What a semantic patch's instructions ask is decided before it is applied.
            let mut authorized = Authorized::default();
            let mut next = match change {
                SegmentChange::JsonPatch(patch) => segment.apply_patch_as_shown(
                    &self.shown.segment(project_key, environment_key, segment),
                    &patch.operations,
                    now,
                    &mut RandomIds,
                )?,
                SegmentChange::MergePatch { merge, .. } => segment.apply_merge_as_shown(
                    &self.shown.segment(project_key, environment_key, segment),
                    merge,
                    now,
                    &mut RandomIds,
                )?,
                SegmentChange::Semantic(patch) => {
                    // Each instruction is decided, whether it changes anything or not.
                    let at = Resource::project(project_key)
                        .environment(environment_key)
                        .segment(key)
                        .with_tags(&segment.tags);
                    authorized = caller.authorize(
                        patch
                            .instructions
                            .iter()
                            .map(|instruction| Request::new(instruction.action(), at.clone()))
                            .collect(),
                    )?;
                    segment.apply_instructions(patch, now, &mut RandomIds)?
                }
            };
            if next.version != segment.version {
                let audit =
                    self.segment_audit((project_key, environment_key, key), segment, &next, change);
                let authorized = authorized.and(caller, &audit.accesses)?;
                self.audit(repo, caller, authorized.record(audit)?)?;
                held.replace(next);
                repo.update_segment(&project_id, &env_key, &held)?;
                next = held.into_inner();
            }
            Ok(next)
        })
    }

    /// The audit entry of a segment's change: every part that changed, asked as it was and as
    /// it becomes (its tags may change).
    fn segment_audit(
        &self,
        (project_key, environment_key, key): (&str, &str, &str),
        segment: &Segment,
        next: &Segment,
        change: &SegmentChange,
    ) -> Change {
        let (comment, delta) = match change {
            SegmentChange::JsonPatch(patch) => (patch.comment.clone(), json(&patch.operations)),
            SegmentChange::MergePatch { comment, merge } => (comment.clone(), Some(merge.clone())),
            SegmentChange::Semantic(patch) => (patch.comment.clone(), json(&patch.instructions)),
        };
        let at = Resource::project(project_key)
            .environment(environment_key)
            .segment(key);
        let (was, becomes) = (
            at.clone().with_tags(&segment.tags),
            at.with_tags(&next.tags),
        );
        let mut audit = Change::new("segment", key, "updated", "updateSegment", was.clone())
            .href(self.segment_href(project_key, environment_key, key))
            .comment(comment)
            .delta(delta)
            .versions(
                Some(self.shown.segment(project_key, environment_key, segment)),
                Some(self.shown.segment(project_key, environment_key, next)),
            );
        audit.accesses = [
            (segment.name != next.name, "updateName"),
            (segment.description != next.description, "updateDescription"),
            (segment.tags != next.tags, "updateTags"),
            (
                segment.included != next.included
                    || segment.included_contexts != next.included_contexts,
                "updateIncluded",
            ),
            (
                segment.excluded != next.excluded
                    || segment.excluded_contexts != next.excluded_contexts,
                "updateExcluded",
            ),
            (segment.rules != next.rules, "updateRules"),
        ]
        .into_iter()
        .filter(|(changed, _)| *changed)
        .flat_map(|(_, action)| {
            [
                Request::new(action, was.clone()),
                Request::new(action, becomes.clone()),
            ]
        })
        .collect();
        audit
    }
}

impl Segments<'_> {
    /// Lists an environment's segments.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound` for an unknown project or environment.
    pub fn list_segments(
        &self,
        permit: &Permit<use_case::ListSegments>,
        project_key: &str,
        environment_key: &str,
        query: &SegmentQuery,
    ) -> ServiceResult<SegmentPage> {
        let caller = permit.caller();
        caller.authorize_view(project_key)?;
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let (project_id, env_key) = environment_of(repo, project_key, environment_key)?;
            let Listed { items, total } = repo.list_segments(&project_id, &env_key, query)?;
            Ok(SegmentPage { items, total })
        })
    }

    /// Creates a segment (targets and rules come by patch).
    ///
    /// # Errors
    /// `Invalid` (also for a segment larger than the resource size limit),
    /// `NotFound`, `KeyTaken` for a taken key.
    pub fn create_segment(
        &self,
        permit: &Permit<use_case::CreateSegment>,
        project_key: &str,
        environment_key: &str,
        post: SegmentPost,
    ) -> ServiceResult<Segment> {
        let caller = permit.caller();
        let key = post.key.clone();
        let segment = Segment::create(post, self.now(), &mut RandomIds)?;
        crate::sizes::check_new_size("the new segment", &segment)?;
        self.store
            .write_tx(|repo| -> ServiceResult<_> {
                let (project_id, env_key) = environment_of(repo, project_key, environment_key)?;
                repo.insert_segment(&project_id, &env_key, &segment)?;
                // Read after the insert, which waits for a deletion of the key being committed
                // meanwhile: its tombstone is seen, and the new segment starts above it.
                let of = TombstoneOf::Segment(&env_key);
                let tombstone = repo.tombstones(&project_id, of, &[&key])?.get(&key).copied();
                let segment = match tombstone.filter(|t| *t >= segment.version) {
                    None => segment.clone(),
                    Some(tombstone) => {
                        let mut held = repo
                            .lock_segment(&project_id, &env_key, &SegmentKey::lookup(&key))?
                            .ok_or_else(|| ServiceError::Internal("the new segment is gone".into()))?;
                        held.get_mut().start_above(tombstone);
                        repo.update_segment(&project_id, &env_key, &held)?;
                        held.into_inner()
                    }
                };
                let change = Change::new(
                    "segment",
                    &segment.key,
                    "created",
                    "createSegment",
                    Resource::project(project_key)
                        .environment(environment_key)
                        .segment(&segment.key)
                        .with_tags(&segment.tags),
                )
                .href(self.segment_href(project_key, environment_key, &segment.key))
                .versions(None, Some(self.shown.segment(project_key, environment_key, &segment)));
                self.audit(repo, caller, change.authorize(caller)?)?;
                Ok(segment)
            })
            .map_err(|e| e.key_taken(|| format!("a segment with key '{key}' already exists in {project_key}/{environment_key}")))
    }

    /// One segment, with the flags whose rules use it.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn get_segment(
        &self,
        permit: &Permit<use_case::GetSegment>,
        project_key: &str,
        environment_key: &str,
        key: &str,
    ) -> ServiceResult<SegmentWithFlags> {
        let caller = permit.caller();
        caller.authorize_view(project_key)?;
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let (project_id, env_key) = environment_of(repo, project_key, environment_key)?;
            let segment = repo
                .get_segment(&project_id, &env_key, &SegmentKey::lookup(key))?
                .ok_or_else(|| segment_not_found(project_key, environment_key, key))?;
            let flags = repo
                .segment_users(&project_id, &env_key, &segment.key)?
                .into_iter()
                .map(|user| (user.flag_key, user.flag_name))
                .collect();
            Ok(SegmentWithFlags { segment, flags })
        })
    }

    /// Changes a segment by JSON Patch, merge patch or segment semantic patch.
    ///
    /// # Errors
    /// `Invalid` for a malformed body, an invalid instruction or a semantic patch for another
    /// environment; `NotFound`; `VersionConflict` for a failed `test`;
    /// `PatchFailed` for a patch that cannot be applied.
    pub fn patch_segment(
        &self,
        permit: &Permit<use_case::PatchSegment>,
        project_key: &str,
        environment_key: &str,
        key: &str,
        change: &SegmentChange,
    ) -> ServiceResult<Segment> {
        self.patch_segment_as(
            permit,
            project_key,
            environment_key,
            key,
            change,
            Write::Commit,
        )
    }

    /// A dry run of [`Segments::patch_segment`]: the same checks, locks and writes in one
    /// transaction, which is then rolled back. Returns the segment as the change would make it
    /// (`version` included); nothing is stored, audited or queued for webhooks.
    ///
    /// # Errors
    /// Exactly those of [`Segments::patch_segment`].
    pub fn dry_run_patch_segment(
        &self,
        permit: &Permit<use_case::PatchSegment>,
        project_key: &str,
        environment_key: &str,
        key: &str,
        change: &SegmentChange,
    ) -> ServiceResult<Segment> {
        self.patch_segment_as(
            permit,
            project_key,
            environment_key,
            key,
            change,
            Write::DryRun,
        )
    }

    /// Deletes a segment no flag rule uses.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`; `StillReferenced` while a flag's rules use it.
    pub fn delete_segment(
        &self,
        permit: &Permit<use_case::DeleteSegment>,
        project_key: &str,
        environment_key: &str,
        key: &str,
    ) -> ServiceResult<()> {
        let caller = permit.caller();
        self.store.write_tx(|repo| -> ServiceResult<()> {
            let (project_id, env_key) = environment_of(repo, project_key, environment_key)?;
            let segment = repo
                .lock_segment(&project_id, &env_key, &SegmentKey::lookup(key))?
                .ok_or_else(|| segment_not_found(project_key, environment_key, key))?;
            let users = repo.segment_users(&project_id, &env_key, &segment.key)?;
            if !users.is_empty() {
                let names: Vec<String> = users.into_iter().map(|user| user.flag_key).collect();
                return Err(ServiceError::StillReferenced(
                    format!(
                        "segment '{key}' is used by the rules of {}; remove those clauses first",
                        names.join(", ")
                    )
                    .into(),
                ));
            }
            let tombstone = segment.tombstone_version();
            repo.keep_tombstone(&project_id, TombstoneOf::Segment(&env_key), key, tombstone)?;
            repo.delete_segment(&project_id, &env_key, &segment)?;
            let change = Change::new(
                "segment",
                key,
                "deleted",
                "deleteSegment",
                Resource::project(project_key)
                    .environment(environment_key)
                    .segment(key)
                    .with_tags(&segment.tags),
            )
            .versions(
                Some(self.shown.segment(project_key, environment_key, &segment)),
                None,
            );
            self.audit(repo, caller, change.authorize(caller)?)?;
            Ok(())
        })
    }
}
