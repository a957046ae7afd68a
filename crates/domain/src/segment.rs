//! Segments: reusable groups of contexts, per project and environment, that flag clauses match
//! with `segmentMatch`. Their rules share the clause model of flags (see `rules`).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::flag::Clause;
use crate::instruction::{ClauseInput, InstructionError};
use crate::key::SegmentKey;
use crate::patch::{self, PatchError};
use crate::rules::{self, ClauseRule, Step};
use crate::{
    normalize_tags, validate_name, validate_tags, FieldError, IdSource, ValidationError,
    MAX_TARGETS,
};

mod instructions;
pub use instructions::{
    SegmentInstruction, SegmentInstructionKind, SegmentPatch, MAX_TARGET_OPERATIONS,
};

/// `(context kind, key)` of user keys and of other kinds' targets.
fn kinds<'a>(
    user: &'a [String],
    contexts: &'a [SegmentTarget],
) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
    user.iter()
        .map(|v| ("user", v.as_str()))
        .chain(contexts.iter().flat_map(|t| {
            t.values
                .iter()
                .map(move |v| (t.context_kind.as_str(), v.as_str()))
        }))
}

/// Targets of one context kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SegmentTarget {
    /// Context keys.
    pub values: Vec<String>,
    /// Their context kind.
    pub context_kind: String,
}

/// A segment rule: contexts matching every clause are in the segment (or `weight`/100000 of them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SegmentRule {
    /// UUID, assigned by the server.
    #[serde(rename = "_id", default)]
    pub id: String,
    /// All must match.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub clauses: Vec<Clause>,
    /// Share of matching contexts included, in thousandths of a percent (0..=100000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub weight: Option<i64>,
    /// Attribute the weight buckets by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub bucket_by: Option<String>,
    /// Context kind the weight buckets by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub rollout_context_kind: Option<String>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub description: Option<String>,
}

impl ClauseRule for SegmentRule {
    fn id(&self) -> &str {
        &self.id
    }
    fn clauses_mut(&mut self) -> &mut Vec<Clause> {
        &mut self.clauses
    }
}

/// A segment of one environment.
///
/// Its serde representation is the document a JSON Patch or merge patch applies to: the API's
/// representation without the `_links` the HTTP adapter adds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Segment {
    /// Unique within the project and environment; never changes.
    pub key: SegmentKey,
    /// Display name.
    pub name: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Sorted, unique tags.
    pub tags: Vec<String>,
    /// Creation time (epoch ms).
    pub creation_date: i64,
    /// Last change (epoch ms).
    pub last_modified_date: i64,
    /// Grows by one with every change.
    pub version: i64,
    /// Always false for a stored segment.
    pub deleted: bool,
    /// Big segments' recreation count (always 0 here).
    pub generation: i64,
    /// Mixed into the hash that weighted rules bucket contexts by: made at creation, never
    /// changed (a segment of an earlier release has [`derived_salt`]).
    #[serde(default)]
    pub salt: String,
    /// User keys in the segment.
    pub included: Vec<String>,
    /// User keys kept out of the segment.
    pub excluded: Vec<String>,
    /// Keys of other context kinds in the segment.
    pub included_contexts: Vec<SegmentTarget>,
    /// Keys of other context kinds kept out.
    pub excluded_contexts: Vec<SegmentTarget>,
    /// Rules, in order.
    pub rules: Vec<SegmentRule>,
}

/// `POST /segments/{projectKey}/{environmentKey}` body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SegmentPost {
    /// Segment key.
    pub key: String,
    /// Display name.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Big segments are not supported: `false` (or absent) only; `true` is a 400 naming the
    /// field.
    #[serde(default)]
    pub unbounded: Option<bool>,
    /// Big segments are not supported: a request that sets it is a 400 naming the field.
    #[serde(default)]
    pub unbounded_context_kind: Option<String>,
}

const READ_ONLY: [&str; 7] = [
    "salt",
    "key",
    "creationDate",
    "lastModifiedDate",
    "version",
    "deleted",
    "generation",
];

/// What the API adds to a segment's document when it shows it.
const SHOWN_ONLY: [&str; 1] = ["_links"];

fn segment_path_is_read_only(path: &[String]) -> bool {
    path.is_empty()
        || path.iter().any(|s| s.starts_with('_'))
        || READ_ONLY.contains(&path[0].as_str())
}

/// The salt of a segment stored by a release before segments had one: derived from what never
/// changes (its key and creation time), so that every read gives the same, until the segment is
/// written again with it.
///
/// ```
/// let salt = domain::segment::derived_salt("beta", 1);
/// assert_eq!(salt, domain::segment::derived_salt("beta", 1));
/// assert_eq!(salt.len(), 32);
/// ```
pub fn derived_salt(key: &str, creation_date: i64) -> String {
    use sha1::Digest;
    let digest = sha1::Sha1::digest(format!("{key}.{creation_date}").as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

impl Segment {
    /// A new segment, without targets or rules (they are added by patches).
    ///
    /// ```
    /// use domain::segment::{Segment, SegmentPost};
    /// let post = SegmentPost { key: "beta".into(), name: "Beta users".into(), ..Default::default() };
    /// let segment = Segment::create(post, 1, &mut domain::SequentialIds::default()).unwrap();
    /// assert_eq!(segment.key, "beta");
    /// assert_eq!(segment.version, 1);
    /// assert_eq!(segment.salt.len(), 32);
    /// ```
    ///
    /// # Errors
    /// [`ValidationError`] for an invalid key, empty name or bad tags.
    pub fn create(
        post: SegmentPost,
        now: i64,
        ids: &mut dyn crate::IdSource,
    ) -> Result<Self, ValidationError> {
        let mut refused = Vec::new();
        if post.unbounded == Some(true) {
            refused.push(FieldError::new(
                "unbounded",
                "big segments are not supported; leave unbounded out or false",
            ));
        }
        if post.unbounded_context_kind.is_some() {
            refused.push(FieldError::new(
                "unboundedContextKind",
                "big segments are not supported; unboundedContextKind applies only to them",
            ));
        }
        ValidationError::check(refused)?;
        let key =
            SegmentKey::parse(&post.key).map_err(|e| ValidationError::single("key", e.reason))?;
        let mut segment = Self {
            key,
            name: post.name,
            description: post.description.filter(|d| !d.is_empty()),
            tags: post.tags,
            creation_date: now,
            last_modified_date: now,
            version: 1,
            deleted: false,
            generation: 0,
            salt: ids.hex(32),
            included: vec![],
            excluded: vec![],
            included_contexts: vec![],
            excluded_contexts: vec![],
            rules: vec![],
        };
        segment.validate()?;
        normalize_tags(&mut segment.tags);
        Ok(segment)
    }

    /// This segment as a new segment of another environment (a clone of an environment): the
    /// same name, description, tags, targets, rules (with their `_id`s) and salt (a weighted
    /// rule keeps the same contexts in), created `now` at version 1.
    ///
    /// ```
    /// use domain::segment::{Segment, SegmentPost};
    /// let post = SegmentPost { key: "beta".into(), name: "Beta".into(), ..Default::default() };
    /// let mut segment = Segment::create(post, 1, &mut domain::SequentialIds::default()).unwrap();
    /// segment.version = 4;
    /// let copy = segment.clone_for_environment(9);
    /// assert_eq!((copy.version, copy.creation_date), (1, 9));
    /// assert_eq!(copy.name, "Beta");
    /// ```
    pub fn clone_for_environment(&self, now: i64) -> Self {
        Self {
            creation_date: now,
            last_modified_date: now,
            version: 1,
            ..self.clone()
        }
    }

    /// The version SDKs are told a deletion of this segment at: above its own.
    pub fn tombstone_version(&self) -> i64 {
        self.version.saturating_add(1)
    }

    /// Makes its version greater than `tombstone`: a new segment whose key a deleted segment of
    /// its environment had, as SDKs may hold the deleted one's tombstone.
    ///
    /// ```
    /// use domain::segment::{Segment, SegmentPost};
    /// let post = SegmentPost { key: "beta".into(), name: "Beta".into(), ..Default::default() };
    /// let mut segment = Segment::create(post, 1, &mut domain::SequentialIds::default()).unwrap();
    /// segment.version = 4;
    /// let tombstone = segment.tombstone_version();
    /// let mut again = Segment::create(
    ///     SegmentPost { key: "beta".into(), name: "Beta".into(), ..Default::default() },
    ///     2,
    ///     &mut domain::SequentialIds::default(),
    /// ).unwrap();
    /// again.start_above(tombstone);
    /// assert_eq!((tombstone, again.version), (5, 6));
    /// ```
    pub fn start_above(&mut self, tombstone: i64) {
        self.version = self.version.max(tombstone.saturating_add(1));
    }

    /// Checks every rule: a name, valid tags, no key both included and excluded for one context
    /// kind, weights 0..=100000, clause values typed as their operators need, unique ids.
    ///
    /// # Errors
    /// [`ValidationError`] naming every broken rule.
    pub fn validate(&self) -> Result<(), ValidationError> {
        self.validate_since(None)
    }

    /// [`Segment::validate`] for a change from `previous`, whose regular expressions were checked
    /// when it was stored and are not compiled again.
    fn validate_since(&self, previous: Option<&Segment>) -> Result<(), ValidationError> {
        let mut regexes = rules::RegexCheck::since(
            previous
                .into_iter()
                .flat_map(|p| p.rules.iter().flat_map(|r| &r.clauses)),
        );
        let mut errors = Vec::new();
        validate_name("name", &self.name, &mut errors);
        validate_tags("tags", &self.tags, &mut errors);
        let targets = kinds(&self.included, &self.included_contexts)
            .chain(kinds(&self.excluded, &self.excluded_contexts))
            .count();
        if targets > MAX_TARGETS {
            errors.push(FieldError::new(
                "included",
                format!(
                    "a segment holds at most {MAX_TARGETS} target values (included and excluded, \
                     every context kind), not {targets}"
                ),
            ));
        } else {
            let included: HashSet<(&str, &str)> =
                kinds(&self.included, &self.included_contexts).collect();
            for (kind, key) in kinds(&self.excluded, &self.excluded_contexts) {
                if included.contains(&(kind, key)) {
                    errors.push(FieldError::new(
                        "excluded",
                        format!("'{key}' ({kind}) is both included and excluded"),
                    ));
                }
            }
        }
        for (i, rule) in self.rules.iter().enumerate() {
            if rule.weight.is_some_and(|w| !(0..=100_000).contains(&w)) {
                errors.push(FieldError::new(
                    format!("rules[{i}].weight"),
                    "must be between 0 and 100000",
                ));
            }
            for (j, clause) in rule.clauses.iter().enumerate() {
                rules::validate_clause(
                    &format!("rules[{i}].clauses[{j}]"),
                    clause,
                    &mut regexes,
                    &mut errors,
                );
            }
        }
        rules::validate_ids(
            "",
            self.rules
                .iter()
                .map(|r| (r.id.as_str(), r.clauses.as_slice())),
            &mut errors,
        );
        ValidationError::check(errors)
    }

    /// The segment keys that `segmentMatch` clauses of `clauses` name.
    pub fn referenced_by<'a>(clauses: impl IntoIterator<Item = &'a Clause>) -> Vec<String> {
        let mut keys: Vec<String> = clauses
            .into_iter()
            .filter(|c| c.op == crate::flag::Operator::SegmentMatch)
            .flat_map(|c| {
                c.values
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
            })
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    fn settle(
        &mut self,
        previous: &Segment,
        now: i64,
        ids: &mut dyn IdSource,
    ) -> Result<(), ValidationError> {
        for rule in &mut self.rules {
            if rule.id.is_empty() {
                rule.id = ids.uuid();
            }
            for clause in &mut rule.clauses {
                if clause.id.is_empty() {
                    clause.id = ids.uuid();
                }
            }
        }
        normalize_tags(&mut self.tags);
        self.validate_since(Some(previous))?;
        let changed_targets = target_set(self)
            .symmetric_difference(&target_set(previous))
            .count();
        if changed_targets > MAX_TARGET_OPERATIONS {
            return Err(ValidationError::single(
                "included",
                format!("{changed_targets} target values changed in one request; at most {MAX_TARGET_OPERATIONS}"),
            ));
        }
        self.version = previous.version;
        self.last_modified_date = previous.last_modified_date;
        if self != previous {
            self.version += 1;
            self.last_modified_date = now;
        }
        Ok(())
    }

    /// Applies a JSON Patch; read-only: `key`, `creationDate`, `lastModifiedDate`, `version`,
    /// `deleted`, `generation` and `_`-prefixed fields.
    ///
    /// # Errors
    /// As [`crate::flag::Flag::apply_patch`].
    pub fn apply_patch(
        &self,
        ops: &[patch::Operation],
        now: i64,
        ids: &mut dyn IdSource,
    ) -> Result<Segment, PatchError> {
        self.apply_patch_as_shown(&Value::Null, ops, now, ids)
    }

    /// [`Segment::apply_patch`] on this segment as the API shows it: its document with the
    /// `_links` of `shown` (its representation; nothing else is taken from it), which the
    /// operations may `test` and `copy` from but not write.
    ///
    /// # Errors
    /// As [`Segment::apply_patch`].
    pub fn apply_patch_as_shown(
        &self,
        shown: &Value,
        ops: &[patch::Operation],
        now: i64,
        ids: &mut dyn IdSource,
    ) -> Result<Segment, PatchError> {
        let patched = patch::apply(
            &self.document_as_shown(shown)?,
            ops,
            segment_path_is_read_only,
        )?;
        self.finish_document_change(patched, now, ids)
    }

    /// Applies a JSON Merge Patch with the same rules as [`Segment::apply_patch`].
    ///
    /// # Errors
    /// As [`Segment::apply_patch`].
    pub fn apply_merge(
        &self,
        merge: &Value,
        now: i64,
        ids: &mut dyn IdSource,
    ) -> Result<Segment, PatchError> {
        self.apply_merge_as_shown(&Value::Null, merge, now, ids)
    }

    /// [`Segment::apply_merge`] on `shown` (see [`Segment::apply_patch_as_shown`]): a segment
    /// as GET shows it, changed and sent back whole, merges.
    ///
    /// # Errors
    /// As [`Segment::apply_patch`].
    pub fn apply_merge_as_shown(
        &self,
        shown: &Value,
        merge: &Value,
        now: i64,
        ids: &mut dyn IdSource,
    ) -> Result<Segment, PatchError> {
        let patched = patch::merge(
            &self.document_as_shown(shown)?,
            merge,
            segment_path_is_read_only,
        )?;
        self.finish_document_change(patched, now, ids)
    }

    /// The segment's document with the members of `shown` that the API adds to it.
    fn document_as_shown(&self, shown: &Value) -> Result<Value, PatchError> {
        let mut doc = patch::to_document(self)?;
        patch::copy_members(&mut doc, shown, &SHOWN_ONLY);
        Ok(doc)
    }

    fn finish_document_change(
        &self,
        mut patched: Value,
        now: i64,
        ids: &mut dyn IdSource,
    ) -> Result<Segment, PatchError> {
        patch::remove_members(&mut patched, &SHOWN_ONLY);
        let mut next: Segment = patch::from_document(patched)?;
        next.settle(self, now, ids)?;
        Ok(next)
    }

    /// Applies a segment semantic patch, all or nothing.
    ///
    /// ```
    /// use domain::segment::{Segment, SegmentPatch, SegmentPost};
    /// let post = SegmentPost { key: "beta".into(), name: "Beta".into(), ..Default::default() };
    /// let segment = Segment::create(post, 1, &mut domain::SequentialIds::default()).unwrap();
    /// let patch = SegmentPatch::parse(serde_json::json!({"environmentKey": "production", "instructions": [
    ///     {"kind": "addIncludedUsers", "values": ["alice"]}]})).unwrap();
    /// let next = segment.apply_instructions(&patch, 2, &mut domain::SequentialIds::default()).unwrap();
    /// assert_eq!(next.included, ["alice"]);
    /// assert_eq!(next.version, 2);
    /// ```
    ///
    /// # Errors
    /// [`InstructionError`] naming the failing instruction, or for a result that breaks a rule.
    pub fn apply_instructions(
        &self,
        patch: &SegmentPatch,
        now: i64,
        ids: &mut dyn IdSource,
    ) -> Result<Segment, InstructionError> {
        let mut next = self.clone();
        for (index, instruction) in patch.instructions.iter().enumerate() {
            next.apply_one(instruction, ids)
                .map_err(|message| InstructionError::Instruction { index, message })?;
        }
        next.settle(self, now, ids)?;
        patch::check_growth(self, &next).map_err(|e| InstructionError::Malformed(e.to_string()))?;
        Ok(next)
    }

    fn apply_one(&mut self, instruction: &SegmentInstruction, ids: &mut dyn IdSource) -> Step {
        use SegmentInstruction::*;
        match instruction {
            UpdateName { value } => self.name = value.clone(),
            AddTags { values } => self.tags.extend(values.iter().cloned()),
            RemoveTags { values } => self.tags.retain(|t| !values.contains(t)),
            AddIncludedTargets {
                context_kind,
                values,
            } => add(self.targets_mut(true, context_kind), values),
            RemoveIncludedTargets {
                context_kind,
                values,
            } => remove(self.targets_mut(true, context_kind), values),
            AddExcludedTargets {
                context_kind,
                values,
            } => add(self.targets_mut(false, context_kind), values),
            RemoveExcludedTargets {
                context_kind,
                values,
            } => remove(self.targets_mut(false, context_kind), values),
            AddIncludedUsers { values } => add(&mut self.included, values),
            RemoveIncludedUsers { values } => remove(&mut self.included, values),
            AddExcludedUsers { values } => add(&mut self.excluded, values),
            RemoveExcludedUsers { values } => remove(&mut self.excluded, values),
            AddRule {
                clauses,
                description,
                weight,
                bucket_by,
                rollout_context_kind,
            } => self.rules.push(SegmentRule {
                id: ids.uuid(),
                clauses: rules::clauses_from(clauses, ids),
                weight: *weight,
                bucket_by: bucket_by.clone(),
                rollout_context_kind: rollout_context_kind.clone(),
                description: description.clone(),
            }),
            RemoveRule { rule_id } => rules::remove_rule(&mut self.rules, rule_id),
            ReorderRules { rule_ids } => rules::reorder_rules(&mut self.rules, rule_ids)?,
            AddClauses { rule_id, clauses } => {
                rules::add_clauses(&mut self.rules, rule_id, clauses, ids)?
            }
            RemoveClauses {
                rule_id,
                clause_ids,
            } => rules::remove_clauses(&mut self.rules, rule_id, clause_ids)?,
            UpdateClause {
                rule_id,
                clause_id,
                clause,
            } => rules::update_clause(&mut self.rules, rule_id, clause_id, clause)?,
            AddValuesToClause {
                rule_id,
                clause_id,
                values,
            } => {
                rules::add_clause_values(&mut self.rules, rule_id, clause_id, values)?;
            }
            RemoveValuesFromClause {
                rule_id,
                clause_id,
                values,
            } => {
                rules::remove_clause_values(&mut self.rules, rule_id, clause_id, values)?;
            }
            UpdateRuleDescription {
                rule_id,
                description,
            } => {
                rules::rule_mut(&mut self.rules, rule_id)?.description = Some(description.clone());
            }
            UpdateRuleRolloutAndContextKind {
                rule_id,
                weight,
                context_kind,
            } => {
                let rule = rules::rule_mut(&mut self.rules, rule_id)?;
                rule.weight = Some(*weight);
                rule.rollout_context_kind = context_kind.clone();
            }
        }
        Ok(())
    }

    /// The target list of `kind`: `included`/`excluded` for users, else the context lists.
    fn targets_mut(&mut self, included: bool, kind: &str) -> &mut Vec<String> {
        if kind == "user" {
            return if included {
                &mut self.included
            } else {
                &mut self.excluded
            };
        }
        let lists = if included {
            &mut self.included_contexts
        } else {
            &mut self.excluded_contexts
        };
        let index = match lists.iter().position(|t| t.context_kind == kind) {
            Some(index) => index,
            None => {
                lists.push(SegmentTarget {
                    values: vec![],
                    context_kind: kind.to_owned(),
                });
                lists.len() - 1
            }
        };
        &mut lists[index].values
    }
}

/// Every (included?, context kind, key) of a segment.
fn target_set(segment: &Segment) -> std::collections::BTreeSet<(bool, String, String)> {
    let mut set = std::collections::BTreeSet::new();
    for (included, users, contexts) in [
        (true, &segment.included, &segment.included_contexts),
        (false, &segment.excluded, &segment.excluded_contexts),
    ] {
        set.extend(
            users
                .iter()
                .map(|v| (included, "user".to_owned(), v.clone())),
        );
        for target in contexts {
            set.extend(
                target
                    .values
                    .iter()
                    .map(|v| (included, target.context_kind.clone(), v.clone())),
            );
        }
    }
    set
}

fn add(list: &mut Vec<String>, values: &[String]) {
    for value in values {
        if !list.contains(value) {
            list.push(value.clone());
        }
    }
}

fn remove(list: &mut Vec<String>, values: &[String]) {
    list.retain(|v| !values.contains(v));
}

#[cfg(test)]
mod tests;
