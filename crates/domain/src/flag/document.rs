//! A flag changed as a document (JSON Patch and merge patch, as stored or as shown), and the
//! bookkeeping that every change ends with.

use serde_json::Value;

use super::serve::variation_use;
use super::{Flag, FlagConfig};
use crate::patch::{self, PatchError};
use crate::IdSource;

/// Field names of a validation error as JSON Pointers (`environments.test.rules[0].variation`
/// becomes `/environments/test/rules/0/variation`), the language of JSON Patch.
fn as_pointers(mut err: crate::ValidationError) -> crate::ValidationError {
    for field in &mut err.errors {
        if !field.attribute.starts_with('/') {
            let pointer: String = field
                .attribute
                .replace('[', ".")
                .replace(']', "")
                .split('.')
                .map(|segment| format!("/{}", segment.replace('~', "~0").replace('/', "~1")))
                .collect();
            field.attribute = pointer;
        }
    }
    err
}

/// What the API adds to a flag's document when it shows it.
const SHOWN_ONLY: [&str; 3] = ["_links", "_maintainer", "_maintainerTeam"];
/// What the API adds to each configuration's document when it shows it.
const SHOWN_ONLY_PER_ENVIRONMENT: [&str; 2] = ["_site", "_summary"];

/// Paths of a flag that no patch may write (besides every `_`-prefixed field).
const READ_ONLY_FLAG_FIELDS: [&str; 6] = [
    "key",
    "kind",
    "creationDate",
    "archivedDate",
    "deprecatedDate",
    "experiments",
];
/// Per-environment paths that no patch may write.
const READ_ONLY_CONFIG_FIELDS: [&str; 4] = ["version", "lastModified", "salt", "sel"];

/// Whether a patch may write at `path` (segments of a JSON Pointer into a flag).
fn flag_path_is_read_only(path: &[String]) -> bool {
    if path.iter().any(|segment| segment.starts_with('_')) {
        return true;
    }
    match path {
        [] => true,
        [first, ..] if READ_ONLY_FLAG_FIELDS.contains(&first.as_str()) => true,
        // The set of environments follows the project's; whole configurations carry read-only fields.
        [env] | [env, _] if env == "environments" => true,
        [env, _, field, ..] if env == "environments" => {
            READ_ONLY_CONFIG_FIELDS.contains(&field.as_str())
        }
        _ => false,
    }
}

/// `ops` with every `test` of `/version` reading `/_version` instead: the documented version
/// check of a flag patch is `{"op": "test", "path": "/version", "value": N}`, and a flag has no
/// top-level `version` (its version is `_version`; each environment's is
/// `/environments/{env}/version`). Other operations are left as they are: `/version` is not a
/// writable path.
fn version_tests_as_flag_version(
    ops: &[patch::Operation],
) -> std::borrow::Cow<'_, [patch::Operation]> {
    use json_patch::jsonptr::PointerBuf;
    let is_version_test = |op: &patch::Operation| matches!(op, patch::Operation::Test(t) if t.path.as_str() == "/version");
    if !ops.iter().any(is_version_test) {
        return std::borrow::Cow::Borrowed(ops);
    }
    std::borrow::Cow::Owned(
        ops.iter()
            .map(|op| match op {
                patch::Operation::Test(test) if test.path.as_str() == "/version" => {
                    patch::Operation::Test(json_patch::TestOperation {
                        path: PointerBuf::from_tokens(["_version"]),
                        value: test.value.clone(),
                    })
                }
                other => other.clone(),
            })
            .collect(),
    )
}

impl Flag {
    /// A fresh configuration for a new environment: targeting off, serving `defaults`.
    ///
    /// ```
    /// # use domain::flag::{Flag, NewFlag};
    /// # use domain::key::FlagKey;
    /// let mut ids = domain::SequentialIds::default();
    /// let flag = Flag::create(NewFlag::boolean(FlagKey::parse("f").unwrap(), "F"), 1, &mut ids).unwrap();
    /// let config = flag.new_config("Production", 5, &mut ids);
    /// assert!(!config.on);
    /// assert_eq!(config.off_variation, Some(1));
    /// assert_eq!(config.fallthrough.variation, Some(0));
    /// ```
    pub fn new_config(
        &self,
        environment_name: &str,
        now: i64,
        ids: &mut dyn IdSource,
    ) -> FlagConfig {
        FlagConfig::new(self.defaults, environment_name, now, ids)
    }

    /// The version SDKs are told a deletion of this flag at: above every version it has in
    /// any environment (SDKs apply a deletion only above the version they hold).
    ///
    /// ```
    /// # use domain::flag::{Flag, NewFlag};
    /// # use domain::key::FlagKey;
    /// # let mut ids = domain::SequentialIds::default();
    /// let mut flag = Flag::create(NewFlag::boolean(FlagKey::parse("f").unwrap(), "F"), 1, &mut ids).unwrap();
    /// assert_eq!(flag.tombstone_version(), 1);
    /// let mut config = flag.new_config("Production", 1, &mut ids);
    /// config.version = 7;
    /// flag.environments.insert("production".into(), config);
    /// assert_eq!(flag.tombstone_version(), 8);
    /// ```
    pub fn tombstone_version(&self) -> i64 {
        self.environments
            .values()
            .map(|config| config.version)
            .max()
            .unwrap_or(0)
            .saturating_add(1)
    }

    /// Makes every configuration's version greater than `tombstone`: a new flag whose key a
    /// deleted flag had, as SDKs may hold the deleted one's tombstone.
    ///
    /// ```
    /// # use domain::flag::{Flag, NewFlag};
    /// # use domain::key::FlagKey;
    /// # let mut ids = domain::SequentialIds::default();
    /// let mut flag = Flag::create(NewFlag::boolean(FlagKey::parse("f").unwrap(), "F"), 1, &mut ids).unwrap();
    /// let config = flag.new_config("Production", 1, &mut ids);
    /// flag.environments.insert("production".into(), config);
    /// flag.start_above(8);
    /// assert_eq!(flag.environments["production"].version, 9);
    /// ```
    pub fn start_above(&mut self, tombstone: i64) {
        for config in self.environments.values_mut() {
            config.version = config.version.max(tombstone.saturating_add(1));
        }
    }

    /// Settles the bookkeeping of a change from `previous` to `self`: every environment whose
    /// configuration changed gets `version + 1` and `lastModified = now`; the flag gets
    /// `_version + 1` if anything changed; archive and deprecation times follow their flags.
    /// Returns whether anything changed.
    pub fn settle_change(&mut self, previous: &Flag, now: i64) -> bool {
        // A configuration's summary has one entry per variation: a change of their number
        // changes how every configuration reads, so each one counts as changed.
        let variations_changed = self.variations.len() != previous.variations.len();
        let mut changed = false;
        let mut unchanged_configs = Vec::new();
        for (key, config) in &mut self.environments {
            if let Some(old) = previous.environments.get(key) {
                config.version = old.version;
                config.last_modified = old.last_modified;
                config.salt.clone_from(&old.salt);
                config.sel.clone_from(&old.sel);
                if config != old || variations_changed {
                    config.version += 1;
                    config.last_modified = now;
                    changed = true;
                } else {
                    unchanged_configs.push(key.clone());
                }
            }
        }
        self.settle_archiving(previous, now);
        // A flag-wide change (a variation's value, archiving, client-side availability) changes
        // what SDKs evaluate in every environment: each must show them a higher version, as
        // SDKs apply only a version above the one they hold.
        for key in unchanged_configs {
            let served_differently = crate::evaluation::sdk_flag(self, &key)
                != crate::evaluation::sdk_flag(previous, &key);
            if let Some(config) = self
                .environments
                .get_mut(&key)
                .filter(|_| served_differently)
            {
                config.version += 1;
                config.last_modified = now;
                changed = true;
            }
        }
        self.version = previous.version;
        if changed || self != previous {
            self.version += 1;
            changed = true;
        }
        changed
    }

    /// Archive and deprecation times follow their flags; `includeInSnippet` and client-side
    /// availability follow each other.
    fn settle_archiving(&mut self, previous: &Flag, now: i64) {
        self.archived_date = match (previous.archived, self.archived) {
            (false, true) => Some(now),
            (_, false) => None,
            (true, true) => previous.archived_date,
        };
        self.deprecated_date = match (previous.deprecated, self.deprecated) {
            (false, true) => Some(now),
            (_, false) => None,
            (true, true) => previous.deprecated_date,
        };
        self.include_in_snippet = if self.include_in_snippet != previous.include_in_snippet
            && self.client_side_availability == previous.client_side_availability
        {
            self.client_side_availability.using_environment_id = self.include_in_snippet;
            self.include_in_snippet
        } else {
            self.client_side_availability.using_environment_id
        };
    }

    /// Applies a JSON Patch to the flag's API representation and checks the result.
    ///
    /// Any path into the representation can be patched except `_`-prefixed fields, `key`,
    /// `kind`, `creationDate`, and per environment `version`, `lastModified`, `salt`, `sel`;
    /// `test` may read any path (e.g. `/_version`; `/version`, the documented idiom, reads
    /// `/_version` too). New rules, clauses and variations get ids.
    ///
    /// ```
    /// # use domain::flag::{Flag, NewFlag};
    /// # use domain::key::FlagKey;
    /// # let mut ids = domain::SequentialIds::default();
    /// # let mut flag = Flag::create(NewFlag::boolean(FlagKey::parse("f").unwrap(), "F"), 1, &mut ids).unwrap();
    /// # let config = flag.new_config("Production", 1, &mut ids);
    /// # flag.environments.insert("production".into(), config);
    /// let ops: Vec<domain::patch::Operation> = serde_json::from_value(serde_json::json!([
    ///     {"op": "test", "path": "/_version", "value": 1},
    ///     {"op": "replace", "path": "/environments/production/on", "value": true}])).unwrap();
    /// let next = flag.apply_patch(&ops, 2, &mut ids).unwrap();
    /// assert!(next.environments["production"].on);
    /// assert_eq!(next.version, 2);
    /// assert_eq!(next.environments["production"].version, 2);
    /// ```
    ///
    /// # Errors
    /// [`PatchError`]: read-only path, failed `test`, inapplicable operation, or a result that
    /// breaks a rule of the model.
    pub fn apply_patch(
        &self,
        ops: &[patch::Operation],
        now: i64,
        ids: &mut dyn IdSource,
    ) -> Result<Flag, PatchError> {
        self.apply_patch_as_shown(&Value::Null, ops, now, ids)
    }

    /// [`Flag::apply_patch`] on this flag as the API shows it: its document with the `_links`,
    /// `_maintainer` and each configuration's `_site` and `_summary` of `shown` (its
    /// representation; nothing else is taken from it), which the operations may `test` and
    /// `copy` from but not write (every `_` path is read-only).
    ///
    /// ```
    /// # use domain::flag::{Flag, NewFlag};
    /// # use domain::key::FlagKey;
    /// # let mut ids = domain::SequentialIds::default();
    /// # let flag = Flag::create(NewFlag::boolean(FlagKey::parse("f").unwrap(), "F"), 1, &mut ids).unwrap();
    /// let mut shown = serde_json::to_value(&flag).unwrap();
    /// shown["_links"] = serde_json::json!({"self": {"href": "/flags/p/f"}});
    /// let ops: Vec<domain::patch::Operation> = serde_json::from_value(serde_json::json!([
    ///     {"op": "test", "path": "/_links/self/href", "value": "/flags/p/f"},
    ///     {"op": "replace", "path": "/name", "value": "G"}])).unwrap();
    /// let next = flag.apply_patch_as_shown(&shown, &ops, 2, &mut ids).unwrap();
    /// assert_eq!(next.name, "G");
    /// ```
    ///
    /// # Errors
    /// As [`Flag::apply_patch`].
    pub fn apply_patch_as_shown(
        &self,
        shown: &Value,
        ops: &[patch::Operation],
        now: i64,
        ids: &mut dyn IdSource,
    ) -> Result<Flag, PatchError> {
        let ops = version_tests_as_flag_version(ops);
        let patched = patch::apply(
            &self.document_as_shown(shown)?,
            &ops,
            flag_path_is_read_only,
        )?;
        self.finish_document_change(patched, now, ids)
    }

    /// Applies a JSON Merge Patch (RFC 7386) with the same rules as [`Flag::apply_patch`].
    ///
    /// # Errors
    /// As [`Flag::apply_patch`].
    pub fn apply_merge(
        &self,
        merge: &Value,
        now: i64,
        ids: &mut dyn IdSource,
    ) -> Result<Flag, PatchError> {
        self.apply_merge_as_shown(&Value::Null, merge, now, ids)
    }

    /// [`Flag::apply_merge`] on `shown` (see [`Flag::apply_patch_as_shown`]): a flag as GET
    /// shows it, changed and sent back whole, merges.
    ///
    /// # Errors
    /// As [`Flag::apply_patch`].
    pub fn apply_merge_as_shown(
        &self,
        shown: &Value,
        merge: &Value,
        now: i64,
        ids: &mut dyn IdSource,
    ) -> Result<Flag, PatchError> {
        let patched = patch::merge(
            &self.document_as_shown(shown)?,
            merge,
            flag_path_is_read_only,
        )?;
        self.finish_document_change(patched, now, ids)
    }

    /// The flag's document with the members of `shown` that the API adds to it.
    fn document_as_shown(&self, shown: &Value) -> Result<Value, PatchError> {
        let mut doc = patch::to_document(self)?;
        patch::copy_members(&mut doc, shown, &SHOWN_ONLY);
        if let (Some(Value::Object(environments)), Some(Value::Object(shown_environments))) =
            (doc.get_mut("environments"), shown.get("environments"))
        {
            for (key, config) in environments.iter_mut() {
                if let Some(shown_config) = shown_environments.get(key) {
                    patch::copy_members(config, shown_config, &SHOWN_ONLY_PER_ENVIRONMENT);
                }
            }
        }
        Ok(doc)
    }

    fn finish_document_change(
        &self,
        patched: Value,
        now: i64,
        ids: &mut dyn IdSource,
    ) -> Result<Flag, PatchError> {
        let mut next = Flag::from_shown(patched)?;
        next.assign_missing_ids(ids);
        crate::normalize_tags(&mut next.tags);
        // A patch cannot remove a variation that is in use: the references would silently shift.
        let kept: std::collections::HashSet<&str> =
            next.variations.iter().map(|v| v.id.as_str()).collect();
        for (index, variation) in self.variations.iter().enumerate() {
            if !kept.contains(variation.id.as_str()) {
                if let Some(place) = variation_use(self, index) {
                    return Err(PatchError::Invalid(crate::ValidationError::single(
                        format!("/variations/{index}"),
                        format!("variation {index} is used by {place}; stop using it before removing it"),
                    )));
                }
            }
        }
        next.validate_since(Some(self))
            .map_err(|e| PatchError::Invalid(as_pointers(e)))?;
        next.settle_change(self, now);
        Ok(next)
    }

    /// Refuses this flag, the result of a JSON or merge patch of `previous`, when it moved a
    /// variation that `previous` uses (in a rule, a target, a fallthrough, an off variation or
    /// the defaults) to another index: those uses name it by index, so they would serve another
    /// value. (The semantic patch's `removeVariation` moves the uses along, and a variation
    /// another flag uses as a prerequisite is the project's rule, checked first.)
    ///
    /// ```
    /// # use domain::flag::{Flag, FlagPost};
    /// # let mut ids = domain::SequentialIds::default();
    /// let post: FlagPost = serde_json::from_value(serde_json::json!({"key": "f", "name": "F",
    ///     "variations": [{"value": "a"}, {"value": "b"}], "defaults": {"onVariation": 1, "offVariation": 1}})).unwrap();
    /// let flag = Flag::create(post.validate().unwrap(), 1, &mut ids).unwrap();
    /// let ops: Vec<domain::patch::Operation> = serde_json::from_value(serde_json::json!([
    ///     {"op": "move", "from": "/variations/1", "path": "/variations/0"}])).unwrap();
    /// let next = flag.apply_patch(&ops, 2, &mut ids).unwrap();
    /// assert!(next.check_variation_moves(&flag).is_err(), "b, the default, would become index 0");
    /// ```
    ///
    /// # Errors
    /// [`PatchError::Invalid`] naming the variation, its use and where it would move.
    pub fn check_variation_moves(&self, previous: &Flag) -> Result<(), PatchError> {
        for (index, variation) in previous.variations.iter().enumerate() {
            let moved_to = self
                .variations
                .iter()
                .position(|v| v.id == variation.id)
                .filter(|new_index| *new_index != index);
            if let (Some(new_index), Some(place)) = (moved_to, variation_use(previous, index)) {
                return Err(PatchError::Invalid(crate::ValidationError::single(
                    format!("/variations/{index}"),
                    format!(
                        "variation {index} is used by {place} and would move to index {new_index}, which would change what it serves; \
                         remove variations with the semantic patch instruction removeVariation, which moves their uses along"
                    ),
                )));
            }
        }
        Ok(())
    }

    /// Reads a flag from its JSON as the API shows it (the body of `GET /flags/{p}/{f}`),
    /// leaving out what the API adds to show it (`_links`, `_maintainer`, and each
    /// configuration's `_site` and `_summary`). The flag's own document reads as well.
    ///
    /// ```
    /// # use domain::flag::{Flag, NewFlag};
    /// # use domain::key::FlagKey;
    /// # let mut ids = domain::SequentialIds::default();
    /// # let flag = Flag::create(NewFlag::boolean(FlagKey::parse("f").unwrap(), "F"), 1, &mut ids).unwrap();
    /// let mut shown = serde_json::to_value(&flag).unwrap();
    /// shown["_links"] = serde_json::json!({"self": {"href": "/flags/p/f"}});
    /// assert_eq!(Flag::from_shown(shown).unwrap(), flag);
    /// ```
    ///
    /// # Errors
    /// [`PatchError::InvalidResult`] when the JSON is not a flag.
    pub fn from_shown(mut shown: Value) -> Result<Flag, PatchError> {
        patch::remove_members(&mut shown, &SHOWN_ONLY);
        if let Some(Value::Object(environments)) = shown.get_mut("environments") {
            for config in environments.values_mut() {
                patch::remove_members(config, &SHOWN_ONLY_PER_ENVIRONMENT);
            }
        }
        patch::from_document(shown)
    }

    /// Gives an `_id` to every variation, rule and clause that has none.
    pub fn assign_missing_ids(&mut self, ids: &mut dyn IdSource) {
        for variation in &mut self.variations {
            if variation.id.is_empty() {
                variation.id = ids.uuid();
            }
        }
        for config in self.environments.values_mut() {
            for rule in &mut config.rules {
                if rule.id.is_empty() {
                    rule.id = ids.uuid();
                }
                for clause in &mut rule.clauses {
                    if clause.id.is_empty() {
                        clause.id = ids.uuid();
                    }
                }
            }
        }
    }
}
