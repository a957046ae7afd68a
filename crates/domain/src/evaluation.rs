//! Flag evaluation, exactly as the original's SDKs compute it: which variation a flag serves to
//! a context, and why. Pure: no I/O, no clock.
//!
//! The input is the SDK data model ([`SdkFlag`], [`SdkSegment`]: the JSON the original's SDKs
//! receive), a [`Context`] read from the JSON they send, and a [`FlagData`] where prerequisites
//! and segments are found.
//!
//! ```
//! use std::collections::HashMap;
//! use domain::evaluation::{evaluate, Context, FlagData, Reason, SdkFlag, SdkSegment};
//!
//! struct Flags(HashMap<String, SdkFlag>);
//! impl FlagData for Flags {
//!     fn flag(&self, key: &str) -> Option<&SdkFlag> { self.0.get(key) }
//!     fn segment(&self, _: &str) -> Option<&SdkSegment> { None }
//! }
//!
//! let flag: SdkFlag = serde_json::from_value(serde_json::json!({
//!     "key": "beta", "on": true, "variations": [false, true], "offVariation": 0,
//!     "fallthrough": {"variation": 0},
//!     "rules": [{"id": "gold", "variation": 1,
//!                "clauses": [{"attribute": "plan", "op": "in", "values": ["gold"]}]}]
//! })).unwrap();
//! let ann = Context::from_json(&serde_json::json!({"kind": "user", "key": "ann", "plan": "gold"}))
//!     .unwrap();
//! let detail = evaluate(&flag, &ann, &Flags(HashMap::new()));
//! assert_eq!(detail.value, Some(serde_json::json!(true)));
//! assert!(matches!(detail.reason, Reason::RuleMatch { rule_index: 0, .. }));
//! ```

mod bucket;
mod context;
mod evaluate;
mod explain;
mod model;
mod operators;
mod projection;
mod reason;
mod typed;

pub use context::{AttributeRef, Context, ContextError, SingleContext, MAX_CONTEXT_KINDS};
pub use evaluate::{evaluate, evaluate_off, explain, FlagData, MAX_DEPTH};
pub use explain::{
    BucketRange, ClauseTrace, Explanation, PrerequisiteTrace, RolloutTrace, RuleTrace,
    SegmentTrace, TargetTrace,
};
pub use model::{
    Clause, ClientSideAvailability, FlagRule, Prerequisite, Rollout, RolloutKind, SdkFlag,
    SdkSegment, SegmentRule, SegmentTarget, Target, VariationOrRollout, WeightedVariation,
    USER_KIND,
};
pub use projection::{sdk_flag, sdk_segment};
pub use reason::{Detail, ErrorKind, Reason};
pub use typed::{client_side_variation, typed, ClientSideDetail, ClientSideFlag, ValueType};
