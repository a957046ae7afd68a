//! The flag and segment data that SDKs evaluate (the server-side SDK data model, version 1),
//! read and written with the same JSON names as the original's SDKs use.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The default context kind: what a clause, a target or a rollout without one means.
pub const USER_KIND: &str = "user";

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_user(kind: &String) -> bool {
    kind == USER_KIND
}

fn user() -> String {
    USER_KIND.to_owned()
}

/// A flag as SDKs evaluate it: one environment's configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SdkFlag {
    /// The flag's key.
    pub key: String,
    /// Its version in the environment: an SDK keeps the highest it has seen.
    #[serde(default)]
    pub version: u64,
    /// Whether targeting is on.
    #[serde(default)]
    pub on: bool,
    /// A tombstone: the flag is gone.
    #[serde(default, skip_serializing_if = "is_false")]
    pub deleted: bool,
    /// Flags that must serve a given variation first.
    #[serde(default)]
    pub prerequisites: Vec<Prerequisite>,
    /// Individual targets of kind `user`.
    #[serde(default)]
    pub targets: Vec<Target>,
    /// Individual targets by context kind (with empty `user` entries marking where the
    /// `targets` are read).
    #[serde(default)]
    pub context_targets: Vec<Target>,
    /// Rules, in order.
    #[serde(default)]
    pub rules: Vec<FlagRule>,
    /// What a context that no target or rule matched is served.
    #[serde(default)]
    pub fallthrough: VariationOrRollout,
    /// What is served when targeting is off; none: the caller's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_variation: Option<i64>,
    /// The values the flag can serve.
    #[serde(default)]
    pub variations: Vec<Value>,
    /// Which client-side SDKs may read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_side_availability: Option<ClientSideAvailability>,
    /// Whether browser SDKs may read it (`usingEnvironmentId`).
    #[serde(default)]
    pub client_side: bool,
    /// Mixed into the hash of percentage rollouts.
    #[serde(default)]
    pub salt: String,
    /// Whether every evaluation sends a full event.
    #[serde(default)]
    pub track_events: bool,
    /// Whether fallthrough evaluations send full events.
    #[serde(default)]
    pub track_events_fallthrough: bool,
    /// Until when (epoch ms) evaluations send debug events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug_events_until_date: Option<i64>,
    /// The share of events sent (1 in `samplingRatio`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_ratio: Option<u32>,
    /// Whether evaluations are left out of summary events.
    #[serde(default, skip_serializing_if = "is_false")]
    pub exclude_from_summaries: bool,
}

/// A flag that must serve `variation` for the flag that names it to go on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prerequisite {
    /// The prerequisite flag's key.
    pub key: String,
    /// The variation index it must serve.
    pub variation: i64,
}

/// Context keys of one kind served one variation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// The kind of the contexts (default `user`).
    #[serde(default = "user", skip_serializing_if = "is_user")]
    pub context_kind: String,
    /// Their keys.
    #[serde(default)]
    pub values: Vec<String>,
    /// The variation index served.
    pub variation: i64,
}

/// A rule of a flag: when every clause matches, what it serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct FlagRule {
    /// Its id (a reason names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Conditions that must all match.
    #[serde(default)]
    pub clauses: Vec<Clause>,
    /// What it serves.
    #[serde(flatten)]
    pub serve: VariationOrRollout,
    /// Whether its evaluations send full events.
    #[serde(default)]
    pub track_events: bool,
}

/// A condition on one attribute of one context kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Clause {
    /// The kind of context it looks at; absent: `user`, with `attribute` a plain name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_kind: Option<String>,
    /// The attribute: a reference (`/a/b`) when `contextKind` is set, else a plain name.
    #[serde(default)]
    pub attribute: String,
    /// The operator, by its name (one no SDK knows never matches).
    #[serde(default)]
    pub op: String,
    /// The values compared with the attribute's (any of them may match).
    #[serde(default)]
    pub values: Vec<Value>,
    /// Whether the match is inverted (a missing attribute never matches, inverted or not).
    #[serde(default)]
    pub negate: bool,
    /// The `matches` patterns of `values`, compiled on first use and kept with the clause.
    #[serde(skip)]
    pub(crate) patterns: Patterns,
}

/// A clause's compiled patterns: made once per clause, whatever the number of evaluations.
/// Not part of what a clause is (equal clauses compare equal, compiled or not).
#[derive(Debug, Clone, Default)]
pub(crate) struct Patterns(std::sync::OnceLock<Vec<Option<regex::Regex>>>);

impl PartialEq for Patterns {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Clause {
    /// A clause on `attribute` of contexts of kind `context_kind` (`None`: `user`, and
    /// `attribute` a plain name rather than a reference) with operator `op` and `values`, not
    /// negated ([`Clause::negated`]).
    ///
    /// ```
    /// use domain::evaluation::Clause;
    /// use serde_json::json;
    /// let clause = Clause::new(Some("user"), "email", "endsWith", vec![json!("@example.com")]);
    /// assert_eq!((clause.op.as_str(), clause.negate), ("endsWith", false));
    /// assert!(Clause::new(None, "plan", "in", vec![json!("gold")]).negated().negate);
    /// ```
    pub fn new(context_kind: Option<&str>, attribute: &str, op: &str, values: Vec<Value>) -> Self {
        Self {
            context_kind: context_kind.map(str::to_owned),
            attribute: attribute.to_owned(),
            op: op.to_owned(),
            values,
            negate: false,
            patterns: Patterns::default(),
        }
    }

    /// The same clause, inverted.
    #[must_use]
    pub fn negated(mut self) -> Self {
        self.negate = !self.negate;
        self
    }

    /// The compiled pattern of each value (none for a value that is not a string, or not a
    /// pattern within the bounds of `operators::pattern`).
    pub(crate) fn patterns(&self) -> &[Option<regex::Regex>] {
        self.patterns
            .0
            .get_or_init(|| self.values.iter().map(super::operators::pattern).collect())
    }
}

/// A fixed variation, or a percentage rollout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct VariationOrRollout {
    /// A variation index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variation: Option<i64>,
    /// A rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<Rollout>,
}

/// A percentage rollout, or an experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Rollout {
    /// `rollout` (the default) or `experiment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<RolloutKind>,
    /// The context kind whose attribute is bucketed (default `user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_kind: Option<String>,
    /// The attribute bucketed (default `key`; experiments always use `key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket_by: Option<String>,
    /// Replaces the flag's key and salt in the hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Variations with their weights, in thousandths of a percent (100000 = 100 %).
    #[serde(default)]
    pub variations: Vec<WeightedVariation>,
}

/// Whether a rollout is an experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RolloutKind {
    /// A percentage rollout.
    Rollout,
    /// An experiment: contexts bucketed into tracked variations are in it.
    Experiment,
}

/// One variation of a rollout and its weight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WeightedVariation {
    /// The variation index.
    pub variation: i64,
    /// Its weight, in thousandths of a percent.
    #[serde(default)]
    pub weight: i64,
    /// Contexts bucketed here are not in the experiment.
    #[serde(default, skip_serializing_if = "is_false")]
    pub untracked: bool,
}

/// Which client-side SDKs may read a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClientSideAvailability {
    /// Mobile SDKs (with a mobile key).
    #[serde(default)]
    pub using_mobile_key: bool,
    /// Browser SDKs (with the client-side ID).
    #[serde(default)]
    pub using_environment_id: bool,
}

/// A segment as SDKs evaluate it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SdkSegment {
    /// Its key.
    pub key: String,
    /// Its version.
    #[serde(default)]
    pub version: u64,
    /// A tombstone.
    #[serde(default, skip_serializing_if = "is_false")]
    pub deleted: bool,
    /// User keys always in it.
    #[serde(default)]
    pub included: Vec<String>,
    /// User keys never in it (unless included).
    #[serde(default)]
    pub excluded: Vec<String>,
    /// Keys of other kinds always in it.
    #[serde(default)]
    pub included_contexts: Vec<SegmentTarget>,
    /// Keys of other kinds never in it (unless included).
    #[serde(default)]
    pub excluded_contexts: Vec<SegmentTarget>,
    /// Rules: a context any of them matches is in it.
    #[serde(default)]
    pub rules: Vec<SegmentRule>,
    /// Mixed into the hash of weighted rules.
    #[serde(default)]
    pub salt: String,
    /// A big segment (its members kept elsewhere): never matched here.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unbounded: bool,
    /// A big segment's generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
}

/// Keys of one context kind in (or out of) a segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentTarget {
    /// The kind.
    pub context_kind: String,
    /// The keys.
    #[serde(default)]
    pub values: Vec<String>,
}

/// A segment rule: clauses, and optionally a weight for a share of the matching contexts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SegmentRule {
    /// Its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Conditions that must all match.
    #[serde(default)]
    pub clauses: Vec<Clause>,
    /// The share of matching contexts in the segment, in thousandths of a percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i64>,
    /// The attribute bucketed for `weight` (default `key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket_by: Option<String>,
    /// The context kind bucketed for `weight` (default `user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_context_kind: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clause_compiles_its_patterns_once_and_skips_what_is_no_pattern() {
        let clause: Clause = serde_json::from_value(serde_json::json!({
            "attribute": "email", "op": "matches", "values": ["@x\\.com$", "(", 3]
        }))
        .unwrap();
        let first = clause.patterns().as_ptr();
        assert_eq!(clause.patterns().as_ptr(), first, "compiled once");
        let compiled: Vec<bool> = clause.patterns().iter().map(Option::is_some).collect();
        assert_eq!(compiled, [true, false, false]);
        assert_eq!(
            clause.clone(),
            clause,
            "the compiled form is not part of the clause"
        );
    }
}
