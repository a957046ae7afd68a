//! An evaluation in OFREP's words: its reason mapped (`OFF` → `DISABLED`; a rollout → `SPLIT`;
//! targets, rules and failed prerequisites → `TARGETING_MATCH`; a fixed fallthrough →
//! `STATIC`), `variant` always present (the variation's name, else its `_id`; `null` when no
//! variation is served), and `metadata` a flat map: the flag's `version`, the original's
//! `reason` kind, and the reason's own fields (`ruleIndex`, `ruleId`, `inExperiment`,
//! `prerequisiteKey`) with `variationIndex`. A flag that serves no value (off without an off
//! variation) is `DISABLED` without `value`: the application's default applies.

use actix_web::http::StatusCode;
use domain::evaluation::{Detail, ErrorKind, Reason, SdkFlag};
use serde_json::{Map, Value};

/// An OFREP error: its status, `errorCode` and `errorDetails`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub(crate) status: StatusCode,
    pub(crate) code: &'static str,
    pub(crate) details: String,
}

impl Failure {
    pub(crate) fn new(status: StatusCode, code: &'static str, details: impl Into<String>) -> Self {
        Self {
            status,
            code,
            details: details.into(),
        }
    }

    /// `FLAG_NOT_FOUND` for flag `key`.
    pub(crate) fn flag_not_found(key: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "FLAG_NOT_FOUND",
            format!("no flag '{key}' in this environment (or it is archived)"),
        )
    }

    /// `TARGETING_KEY_MISSING`: the context of `kind` has none, and flag `key` needs one.
    pub(crate) fn targeting_key_missing(key: &str, kind: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "TARGETING_KEY_MISSING",
            format!("flag '{key}' is on and needs a targetingKey (the {kind} context has none)"),
        )
    }

    /// The body of a single flag's failure: `{key, errorCode, errorDetails}`.
    pub(crate) fn for_flag(&self, key: &str) -> Value {
        serde_json::json!({"key": key, "errorCode": self.code, "errorDetails": self.details})
    }

    /// The body of a failure of the whole request: `{errorCode, errorDetails}`.
    pub(crate) fn for_request(&self) -> Value {
        serde_json::json!({"errorCode": self.code, "errorDetails": self.details})
    }
}

/// OFREP's reason for `reason` of `flag`.
fn ofrep_reason(flag: &SdkFlag, reason: &Reason) -> &'static str {
    match reason {
        Reason::Off => "DISABLED",
        Reason::TargetMatch | Reason::PrerequisiteFailed { .. } => "TARGETING_MATCH",
        Reason::RuleMatch { rule_index, .. } => {
            let rollout = flag
                .rules
                .get(*rule_index)
                .is_some_and(|rule| rule.serve.rollout.is_some());
            if rollout {
                "SPLIT"
            } else {
                "TARGETING_MATCH"
            }
        }
        Reason::Fallthrough { .. } if flag.fallthrough.rollout.is_some() => "SPLIT",
        Reason::Fallthrough { .. } => "STATIC",
        Reason::Error { .. } => "UNKNOWN",
    }
}

/// The failure an evaluation error is told as.
fn failure_of(key: &str, kind: &ErrorKind) -> Failure {
    match kind {
        ErrorKind::FlagNotFound => Failure::flag_not_found(key),
        ErrorKind::UserNotSpecified => Failure::new(
            StatusCode::BAD_REQUEST,
            "INVALID_CONTEXT",
            "the context cannot be evaluated",
        ),
        ErrorKind::MalformedFlag => Failure::new(
            StatusCode::BAD_REQUEST,
            "GENERAL",
            format!(
                "flag '{key}' cannot be evaluated: its configuration is inconsistent (a missing variation, or a prerequisite or segment cycle)"
            ),
        ),
        ErrorKind::WrongType | ErrorKind::ClientNotReady | ErrorKind::Exception => Failure::new(
            StatusCode::BAD_REQUEST,
            "GENERAL",
            format!("flag '{key}' cannot be evaluated"),
        ),
    }
}

/// The metadata of an evaluation of `flag` (see the module's documentation).
fn metadata(flag: &SdkFlag, detail: &Detail) -> Value {
    let mut metadata = Map::new();
    metadata.insert("version".into(), Value::from(flag.version));
    if let Ok(Value::Object(reason)) = serde_json::to_value(&detail.reason) {
        for (name, value) in reason {
            let name = if name == "kind" {
                "reason".to_owned()
            } else {
                name
            };
            metadata.insert(name, value);
        }
    }
    if let Some(index) = detail.variation_index {
        metadata.insert("variationIndex".into(), Value::from(index));
    }
    Value::Object(metadata)
}

/// The success body of `detail`, the evaluation of `flag` (whose variation `i` is named
/// `variant(i)`), or the failure it is.
pub(crate) fn answer<'v>(
    flag: &SdkFlag,
    detail: &Detail,
    variant: impl Fn(usize) -> Option<&'v str>,
) -> Result<Value, Failure> {
    if let Reason::Error { error_kind } = &detail.reason {
        return Err(failure_of(&flag.key, error_kind));
    }
    let mut body = Map::new();
    body.insert("key".into(), Value::String(flag.key.clone()));
    if let Some(value) = &detail.value {
        body.insert("value".into(), value.clone());
    }
    body.insert(
        "reason".into(),
        Value::String(ofrep_reason(flag, &detail.reason).to_owned()),
    );
    let variant = detail
        .variation_index
        .and_then(variant)
        .map_or(Value::Null, |name| Value::String(name.to_owned()));
    body.insert("variant".into(), variant);
    body.insert("metadata".into(), metadata(flag, detail));
    Ok(Value::Object(body))
}

#[cfg(test)]
mod tests {
    use domain::evaluation::{evaluate, evaluate_off, Context, FlagData, SdkSegment};
    use serde_json::json;

    use super::*;

    struct Only(SdkFlag);
    impl FlagData for Only {
        fn flag(&self, key: &str) -> Option<&SdkFlag> {
            (self.0.key == key).then_some(&self.0)
        }
        fn segment(&self, _: &str) -> Option<&SdkSegment> {
            None
        }
    }

    fn flag(config: Value) -> SdkFlag {
        let mut base = json!({"key": "f", "version": 4, "on": true, "offVariation": 1,
                              "variations": [true, false], "salt": "s"});
        if let (Value::Object(base), Value::Object(config)) = (&mut base, config) {
            base.extend(config);
        }
        serde_json::from_value(base).unwrap()
    }

    fn answered(flag: &SdkFlag, key: &str) -> Result<Value, Failure> {
        let context = Context::from_json(&json!({"kind": "user", "key": key})).unwrap();
        let detail = evaluate(flag, &context, &Only(flag.clone()));
        let names = ["on", "off"];
        answer(flag, &detail, |i| names.get(i).copied())
    }

    #[test]
    fn reasons_are_told_in_ofreps_words() {
        let fixed = flag(json!({"fallthrough": {"variation": 0},
                                "targets": [{"values": ["ann"], "variation": 1}],
                                "rules": [{"id": "r1", "variation": 0, "clauses": [
                                    {"attribute": "key", "op": "in", "values": ["bob"]}]},
                                          {"id": "r2", "rollout": {"variations": [
                                    {"variation": 0, "weight": 100000}]}, "clauses": [
                                    {"attribute": "key", "op": "in", "values": ["cy"]}]}]}));
        let reason = |key| answered(&fixed, key).unwrap()["reason"].clone();
        assert_eq!(reason("dee"), "STATIC");
        assert_eq!(reason("ann"), "TARGETING_MATCH");
        assert_eq!(reason("bob"), "TARGETING_MATCH");
        assert_eq!(reason("cy"), "SPLIT");
        let split = flag(json!({"fallthrough": {"rollout": {"variations": [
            {"variation": 0, "weight": 50000}, {"variation": 1, "weight": 50000}]}}}));
        assert_eq!(answered(&split, "ann").unwrap()["reason"], "SPLIT");
        let bob = answered(&fixed, "bob").unwrap();
        assert_eq!(
            bob,
            json!({"key": "f", "value": true, "reason": "TARGETING_MATCH", "variant": "on",
                   "metadata": {"version": 4, "reason": "RULE_MATCH", "ruleIndex": 0,
                                "ruleId": "r1", "variationIndex": 0}})
        );
    }

    #[test]
    fn off_without_an_off_variation_serves_no_value_but_names_the_reason() {
        let off = flag(json!({"on": false, "offVariation": null}));
        let detail = evaluate_off(&off);
        let body = answer(&off, &detail, |_| None).unwrap();
        assert_eq!(
            body,
            json!({"key": "f", "reason": "DISABLED", "variant": null,
                   "metadata": {"version": 4, "reason": "OFF"}})
        );
        let with_off = flag(json!({"on": false}));
        let body = answer(&with_off, &evaluate_off(&with_off), |_| Some("off")).unwrap();
        assert_eq!(body["value"], false);
        assert_eq!(body["variant"], "off");
    }

    #[test]
    fn an_evaluation_error_is_a_failure() {
        let broken = flag(json!({"fallthrough": {"variation": 9}}));
        let failure = answered(&broken, "ann").unwrap_err();
        assert_eq!(
            (failure.status, failure.code),
            (StatusCode::BAD_REQUEST, "GENERAL")
        );
        assert_eq!(failure.for_flag("f")["errorCode"], "GENERAL", "{failure:?}");
    }
}
