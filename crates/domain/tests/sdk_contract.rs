//! The original's SDK evaluation contract (`tests/sdk-eval-contract`, from its SDK test harness;
//! see `ORIGIN.md`): every case expanded as `FORMAT.md` says and held to the expected value,
//! variation index and reason: the server-side cases evaluated by `domain::evaluation`, the
//! client-side ones (results the server sent, read by a variation call) by
//! `domain::evaluation::client_side_variation`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::Path;

use domain::evaluation::{
    client_side_variation, evaluate, typed, ClientSideFlag, Context, Detail, ErrorKind, FlagData,
    Reason, SdkFlag, SdkSegment, ValueType,
};
use serde_json::{Map, Value};

/// One file's parameter sets: a list of objects, or a list of lists whose product is taken.
fn parameter_sets(parameters: Option<&Value>) -> Vec<Map<String, Value>> {
    let Some(Value::Array(items)) = parameters else {
        return vec![Map::new()];
    };
    if items.iter().all(Value::is_array) {
        let mut sets = vec![Map::new()];
        for list in items {
            let mut next = Vec::new();
            for set in &sets {
                for choice in list.as_array().unwrap() {
                    let mut merged = set.clone();
                    merged.extend(choice.as_object().unwrap().clone());
                    next.push(merged);
                }
            }
            sets = next;
        }
        return sets;
    }
    items
        .iter()
        .map(|item| item.as_object().unwrap().clone())
        .collect()
}

/// `value` with every `<NAME>` of `names` replaced: a string that is exactly one placeholder
/// becomes the value itself; elsewhere (and in keys) its text.
fn substitute(value: &Value, names: &Map<String, Value>) -> Value {
    let text_of = |value: &Value| match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let in_text = |text: &str| {
        let mut out = text.to_owned();
        for (name, value) in names {
            out = out.replace(&format!("<{name}>"), &text_of(value));
        }
        out
    };
    match value {
        Value::String(text) => {
            if let Some(name) = text.strip_prefix('<').and_then(|t| t.strip_suffix('>')) {
                if let Some(value) = names.get(name) {
                    return value.clone();
                }
            }
            Value::String(in_text(text))
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, names)).collect()),
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(k, v)| (in_text(k), substitute(v, names)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `value` with YAML merge keys (`<<: *base`) applied: the merged mappings' entries that the
/// mapping does not set itself.
fn merge_keys(value: Value) -> Value {
    match value {
        Value::Object(mut object) => {
            let merged = object.remove("<<");
            let mut object: Map<String, Value> = object
                .into_iter()
                .map(|(k, v)| (k, merge_keys(v)))
                .collect();
            let bases = match merged {
                Some(Value::Array(bases)) => bases,
                Some(base) => vec![base],
                None => Vec::new(),
            };
            for base in bases {
                if let Value::Object(base) = merge_keys(base) {
                    for (k, v) in base {
                        object.entry(k).or_insert(v);
                    }
                }
            }
            Value::Object(object)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(merge_keys).collect()),
        other => other,
    }
}

/// The suites of one file: its body with each parameter set's names in place.
fn suites(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let yaml: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let file: Value = merge_keys(serde_json::to_value(yaml).unwrap());
    let constants = file
        .get("constants")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    parameter_sets(file.get("parameters"))
        .into_iter()
        .map(|set| {
            let mut names = constants.clone();
            names.extend(set);
            let mut body = file.clone();
            // Names may hold names: substitute until nothing changes.
            for _ in 0..8 {
                let next = substitute(&body, &names);
                if next == body {
                    break;
                }
                body = next;
            }
            body
        })
        .collect()
}

#[derive(Default)]
struct Data {
    flags: HashMap<String, SdkFlag>,
    segments: HashMap<String, SdkSegment>,
}

impl FlagData for Data {
    fn flag(&self, key: &str) -> Option<&SdkFlag> {
        self.flags.get(key).filter(|f| !f.deleted)
    }
    fn segment(&self, key: &str) -> Option<&SdkSegment> {
        self.segments.get(key).filter(|s| !s.deleted)
    }
}

fn data_of(sdk_data: &Value) -> Data {
    let mut data = Data::default();
    let keyed = |object: &Value, key: &str| {
        let mut object = object.clone();
        object["key"] = Value::String(key.to_owned());
        object
    };
    for (key, flag) in sdk_data["flags"].as_object().into_iter().flatten() {
        let flag = serde_json::from_value(keyed(flag, key))
            .unwrap_or_else(|e| panic!("flag {key}: {e}: {flag}"));
        data.flags.insert(key.clone(), flag);
    }
    for (key, segment) in sdk_data["segments"].as_object().into_iter().flatten() {
        let segment = serde_json::from_value(keyed(segment, key))
            .unwrap_or_else(|e| panic!("segment {key}: {e}"));
        data.segments.insert(key.clone(), segment);
    }
    data
}

/// The type a case's variation call asks for (`any` when it names none).
fn value_type(case: &Value) -> ValueType {
    let name = case
        .get("valueType")
        .and_then(Value::as_str)
        .unwrap_or("any");
    ValueType::parse(name).unwrap_or_else(|| panic!("value type {name}"))
}

/// What an SDK's variation method answers: the evaluation, with the default where there is
/// no value and a type check.
fn answer(case: &Value, data: &Data) -> (Value, Option<usize>, Reason) {
    // A case without a default is the harness's boolean evaluation with default `false`.
    let default = case.get("default").cloned().unwrap_or(Value::Bool(false));
    let context = case
        .get("context")
        .or_else(|| case.get("user"))
        .unwrap_or(&Value::Null);
    let Some(flag) = data.flag(case["flagKey"].as_str().unwrap()) else {
        return (default, None, error(ErrorKind::FlagNotFound));
    };
    let Ok(context) = Context::from_json(context) else {
        return (default, None, error(ErrorKind::UserNotSpecified));
    };
    let Detail {
        value,
        variation_index,
        reason,
    } = typed(evaluate(flag, &context, data), value_type(case), default);
    (value.unwrap_or_default(), variation_index, reason)
}

fn error(error_kind: ErrorKind) -> Reason {
    Reason::Error { error_kind }
}

fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// Runs `check` on every case of every suite of directory `dir` of the contract (given the
/// suite and the case; it returns what it got when that is not what the case expects), and
/// asserts that all `expected` cases were run and held.
fn every_case_of(
    dir: &str,
    expected: usize,
    mut check: impl FnMut(&Value, &Value) -> Option<String>,
) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sdk-eval-contract")
        .join(dir);
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    let (mut cases, mut failures) = (0, Vec::new());
    for path in &paths {
        for suite in suites(path) {
            for case in suite["evaluations"].as_array().into_iter().flatten() {
                cases += 1;
                if let Some(got) = check(&suite, case) {
                    failures.push(format!(
                        "{} / {} / {}: got {got}, expected {}",
                        path.file_name().unwrap().to_string_lossy(),
                        suite["name"],
                        case["name"],
                        case["expect"]
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(cases, expected, "the contract's cases in {}", dir.display());
}

#[test]
fn every_server_side_case_of_the_contract_holds() {
    every_case_of("server-side-eval", 728, |suite, case| {
        let (value, index, reason) = answer(case, &data_of(&suite["sdkData"]));
        let expect = &case["expect"];
        let expected_reason: Reason = serde_json::from_value(expect["reason"].clone())
            .unwrap_or_else(|e| panic!("{e}: {}", expect["reason"]));
        let expected_index = expect.get("variationIndex").and_then(Value::as_u64);
        let index_ok = index.map(|i| i as u64) == expected_index;
        let held = same_json(&value, &expect["value"]) && index_ok && reason == expected_reason;
        (!held).then(|| format!("{value} {index:?} {reason:?}"))
    });
}

#[test]
fn every_client_side_case_of_the_contract_holds() {
    every_case_of("client-side-eval", 30, |suite, case| {
        let flags: HashMap<String, ClientSideFlag> = suite["sdkData"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(key, flag)| (key.clone(), serde_json::from_value(flag.clone()).unwrap()))
            .collect();
        let default = case.get("default").cloned().unwrap_or(Value::Bool(false));
        let flag = flags.get(case["flagKey"].as_str().unwrap());
        let got = client_side_variation(flag, value_type(case), default);
        let expect = &case["expect"];
        let expected_index = expect.get("variationIndex").and_then(Value::as_u64);
        let index_ok = got.variation_index.map(|i| i as u64) == expected_index;
        let reason_ok = expect
            .get("reason")
            .is_none_or(|reason| got.reason.as_ref() == Some(reason));
        let held = same_json(&got.value, &expect["value"]) && index_ok && reason_ok;
        (!held).then(|| format!("{got:?}"))
    });
}
