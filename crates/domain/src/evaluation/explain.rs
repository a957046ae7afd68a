//! "Why does this context get this?": the trace of one evaluation, as [`explain`] records it
//! (the same evaluation as [`super::evaluate`], step by step).

use serde::Serialize;
use serde_json::Value;

use super::reason::Detail;

/// The trace of an evaluation of one flag: what was checked, in order, and what it found.
/// Steps after the one that decided are not evaluated, so not traced.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// The flag's key.
    pub flag_key: String,
    /// Whether targeting was on.
    pub on: bool,
    /// Prerequisites checked, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prerequisites: Vec<PrerequisiteTrace>,
    /// The individual target that named the context, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetTrace>,
    /// Rules checked, in order, up to the one that matched.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleTrace>,
    /// The percentage rollout that chose the variation, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutTrace>,
    /// The result.
    pub result: Detail,
    #[serde(skip)]
    pub(crate) recording: bool,
}

/// One prerequisite as it was checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct PrerequisiteTrace {
    /// The prerequisite flag's key.
    pub key: String,
    /// The variation it must serve.
    pub variation: i64,
    /// Whether it was met (found, on, and serving that variation).
    pub met: bool,
    /// How the prerequisite was evaluated (an `Explanation`; none when it does not exist).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub explanation: Option<Box<Explanation>>,
}

/// The individual target that named the context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct TargetTrace {
    /// The context kind of the target.
    pub context_kind: String,
    /// The key it named.
    pub key: String,
    /// The variation index it serves.
    pub variation: i64,
}

/// One rule as it was checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RuleTrace {
    /// Its index.
    pub index: usize,
    /// Its id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Whether every clause matched.
    pub matched: bool,
    /// Its clauses, in order, up to the first that did not match.
    pub clauses: Vec<ClauseTrace>,
}

/// One clause as it was checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClauseTrace {
    /// The context kind it looked at.
    pub context_kind: String,
    /// The attribute.
    pub attribute: String,
    /// The operator.
    pub op: String,
    /// The clause's values.
    pub values: Vec<Value>,
    /// Whether the match is inverted.
    pub negate: bool,
    /// What the context had for the attribute (absent: nothing, which never matches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_value: Option<Value>,
    /// Whether the clause matched.
    pub matched: bool,
    /// For `segmentMatch`: each segment named, and whether the context is in it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub segments: Vec<SegmentTrace>,
}

/// A segment a clause named, and why the context is in it or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SegmentTrace {
    /// The segment's key.
    pub key: String,
    /// `included`, `excluded`, `rule` (with `ruleIndex`), `noRule` or `notFound`.
    pub why: &'static str,
    /// The index of the rule that took the context in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_index: Option<usize>,
    /// Whether the context is in it.
    pub matched: bool,
}

/// Where a rollout put the context.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RolloutTrace {
    /// The context kind bucketed.
    pub context_kind: String,
    /// The attribute bucketed (`key` unless the rollout says).
    pub bucket_by: String,
    /// The seed, if the rollout has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// The context's bucket, in `[0, 1)`.
    pub bucket: f32,
    /// Each variation's range of buckets, in order.
    pub ranges: Vec<BucketRange>,
    /// Whether the rollout is an experiment.
    pub experiment: bool,
}

/// The buckets `[from, to)` that get `variation`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BucketRange {
    /// The variation index.
    pub variation: i64,
    /// From (inclusive).
    pub from: f32,
    /// To (exclusive).
    pub to: f32,
}

impl Explanation {
    fn blank(flag_key: &str, recording: bool) -> Self {
        Self {
            flag_key: flag_key.to_owned(),
            on: false,
            prerequisites: Vec::new(),
            target: None,
            rules: Vec::new(),
            rollout: None,
            result: Detail::error(super::reason::ErrorKind::Exception),
            recording,
        }
    }

    /// An explanation that records nothing: what a plain evaluation passes along.
    pub(crate) fn off() -> Self {
        Self::blank("", false)
    }

    /// One that records.
    pub(crate) fn recording(flag_key: &str) -> Self {
        Self::blank(flag_key, true)
    }

    /// A trace for a prerequisite of this one: recording when this one is.
    pub(crate) fn child(&self, flag_key: &str) -> Self {
        if self.recording {
            Self::recording(flag_key)
        } else {
            Self::off()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use crate::evaluation::{explain, Context, FlagData, SdkFlag, SdkSegment};

    struct Data(HashMap<String, SdkFlag>, Vec<SdkSegment>);

    impl FlagData for Data {
        fn flag(&self, key: &str) -> Option<&SdkFlag> {
            self.0.get(key)
        }
        fn segment(&self, key: &str) -> Option<&SdkSegment> {
            self.1.iter().find(|s| s.key == key)
        }
    }

    #[test]
    fn the_trace_shows_prerequisites_rules_clauses_segments_and_the_bucket() {
        let flag = |value| serde_json::from_value::<SdkFlag>(value).unwrap();
        let gate = flag(
            json!({"key": "gate", "on": true, "variations": [true, false],
                               "fallthrough": {"variation": 0}}),
        );
        let beta = flag(json!({
            "key": "beta", "on": true, "salt": "s", "variations": ["a", "b"],
            "prerequisites": [{"key": "gate", "variation": 0}],
            "rules": [
                {"id": "plan", "variation": 0, "clauses": [
                    {"attribute": "plan", "op": "in", "values": ["gold"]}]},
                {"id": "vip", "variation": 0, "clauses": [
                    {"attribute": "key", "op": "segmentMatch", "values": ["missing", "vip"]},
                    {"attribute": "plan", "op": "in", "values": ["silver"]}]},
            ],
            "fallthrough": {"rollout": {"variations": [
                {"variation": 0, "weight": 50000}, {"variation": 1, "weight": 50000}]}},
        }));
        let vip: SdkSegment =
            serde_json::from_value(json!({"key": "vip", "included": ["ann"], "salt": "x"}))
                .unwrap();
        let data = Data(HashMap::from([("gate".to_owned(), gate)]), vec![vip]);
        let ann =
            Context::from_json(&json!({"kind": "user", "key": "ann", "plan": "basic"})).unwrap();
        let trace = serde_json::to_value(explain(&beta, &ann, &data)).unwrap();
        assert_eq!(trace["prerequisites"][0]["met"], json!(true));
        assert_eq!(
            trace["prerequisites"][0]["explanation"]["result"]["reason"]["kind"],
            json!("FALLTHROUGH")
        );
        let first = &trace["rules"][0]["clauses"][0];
        assert_eq!(
            (&first["contextValue"], &first["matched"]),
            (&json!("basic"), &json!(false))
        );
        let segments = &trace["rules"][1]["clauses"][0]["segments"];
        assert_eq!(
            segments,
            &json!([{"key": "missing", "why": "notFound", "matched": false},
                    {"key": "vip", "why": "included", "matched": true}])
        );
        assert_eq!(trace["rules"][1]["clauses"][1]["matched"], json!(false));
        let rollout = &trace["rollout"];
        assert_eq!(rollout["bucketBy"], json!("key"));
        assert_eq!(
            rollout["ranges"][1],
            json!({"variation": 1, "from": 0.5, "to": 1.0})
        );
        let bucket = rollout["bucket"].as_f64().unwrap();
        let expected = if bucket < 0.5 { "a" } else { "b" };
        assert_eq!(trace["result"]["value"], json!(expected));
        assert_eq!(trace["result"]["reason"], json!({"kind": "FALLTHROUGH"}));
    }
}
