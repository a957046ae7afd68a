//! The schemas of [`super`] against the domain's own serde, through the served document.
//!
//! For every schema that describes a domain type: an example built from the schema (every
//! property, optional ones too, with values other than the defaults) must parse as the domain
//! type, the domain must keep every property of it, and what the domain serialises must fit the
//! schema (every property declared, every required one present, the types and enum values it
//! states). Enums and the instruction unions list exactly the domain's variants. A flag and a
//! segment, built by the domain from examples and shown by the wire shapes, fit theirs.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};

/// The served document.
struct Doc(Value);

/// Reads `value` as a `T` and serialises it again.
type RoundTrip = fn(Value) -> Result<Value, String>;

fn round_trip<T: DeserializeOwned + Serialize>(value: Value) -> Result<Value, String> {
    let parsed: T = serde_json::from_value(value).map_err(|e| e.to_string())?;
    serde_json::to_value(parsed).map_err(|e| e.to_string())
}

/// The variants `T` accepts, from serde's message for an unknown one (`expected one of `a`,
/// `b``, `expected `a` or `b``).
fn variants<T: DeserializeOwned>(unknown: Value) -> Vec<String> {
    let Err(error) = serde_json::from_value::<T>(unknown) else {
        panic!("an unknown variant was accepted");
    };
    let message = error.to_string();
    let (_, expected) = message
        .split_once("expected")
        .unwrap_or_else(|| panic!("unexpected message: {message}"));
    let mut names: Vec<String> = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    names.sort();
    names
}

impl Doc {
    fn load() -> Self {
        Self(crate::openapi_document().unwrap())
    }

    fn schema(&self, name: &str) -> &Value {
        self.0["components"]["schemas"]
            .get(name)
            .unwrap_or_else(|| panic!("no schema {name}"))
    }

    /// `schema`, with a `$ref` followed.
    fn resolve<'a>(&'a self, schema: &'a Value) -> &'a Value {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(reference) => self.schema(
                reference
                    .strip_prefix("#/components/schemas/")
                    .unwrap_or_else(|| panic!("unexpected $ref {reference}")),
            ),
            None => schema,
        }
    }

    /// The branches of an `allOf`, as one object schema.
    fn merged(&self, branches: &[Value]) -> Value {
        let mut properties = Map::new();
        let mut required = vec![];
        for branch in branches {
            let branch = self.resolve(branch);
            let branch = match branch.get("allOf").and_then(Value::as_array) {
                Some(inner) => &self.merged(inner),
                None => branch,
            };
            if let Some(props) = branch.get("properties").and_then(Value::as_object) {
                properties.extend(props.clone());
            }
            if let Some(names) = branch.get("required").and_then(Value::as_array) {
                required.extend(names.iter().cloned());
            }
        }
        json!({"type": "object", "properties": properties, "required": required})
    }

    /// A value of `schema` with every property, the first enum value, one item per array.
    fn example(&self, schema: &Value) -> Value {
        let schema = self.resolve(schema);
        if let Some(branches) = schema.get("allOf").and_then(Value::as_array) {
            return self.example(&self.merged(branches));
        }
        // A `oneOf` beside `properties` only constrains which of them appear (a statement's
        // `resources` or `notResources`): the example shows every property.
        if let Some(branches) = schema
            .get("oneOf")
            .and_then(Value::as_array)
            .filter(|_| schema.get("properties").is_none())
        {
            let branch = branches
                .iter()
                .find(|b| b["type"] != "null")
                .unwrap_or(&branches[0]);
            return self.example(branch);
        }
        if let Some(first) = schema["enum"].get(0) {
            return first.clone();
        }
        let kind = match &schema["type"] {
            Value::String(kind) => kind.as_str(),
            Value::Array(kinds) => kinds
                .iter()
                .filter_map(Value::as_str)
                .find(|k| *k != "null")
                .unwrap_or("null"),
            // Any JSON value.
            _ => return json!("x"),
        };
        match kind {
            "string" => json!("x"),
            "integer" | "number" => json!(1),
            "boolean" => json!(true),
            "array" => json!([self.example(&schema["items"])]),
            "object" => {
                let mut object = Map::new();
                for (name, property) in schema["properties"].as_object().into_iter().flatten() {
                    object.insert(name.clone(), self.example(property));
                }
                if schema["additionalProperties"].is_object() {
                    object.insert("k".into(), self.example(&schema["additionalProperties"]));
                }
                Value::Object(object)
            }
            _ => Value::Null,
        }
    }

    /// Whatever of `value` (at `path`) does not fit `schema`, into `errors`.
    fn check(&self, value: &Value, schema: &Value, path: &str, errors: &mut Vec<String>) {
        let schema = self.resolve(schema);
        if let Some(branches) = schema.get("allOf").and_then(Value::as_array) {
            return self.check(value, &self.merged(branches), path, errors);
        }
        if let Some(branches) = schema.get("oneOf").and_then(Value::as_array) {
            let mut fewest: Option<Vec<String>> = None;
            for branch in branches {
                let mut found = vec![];
                self.check(value, branch, path, &mut found);
                if found.is_empty() {
                    return;
                }
                if fewest.as_ref().is_none_or(|f| found.len() < f.len()) {
                    fewest = Some(found);
                }
            }
            errors.push(format!("{path}: fits no branch of oneOf"));
            errors.extend(fewest.unwrap_or_default());
            return;
        }
        if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
            if !allowed.contains(value) {
                errors.push(format!("{path}: {value} is not one of {allowed:?}"));
            }
        }
        let kinds: Vec<&str> = match &schema["type"] {
            Value::String(kind) => vec![kind.as_str()],
            Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect(),
            _ => return,
        };
        let fits = kinds.iter().any(|kind| match *kind {
            "null" => value.is_null(),
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            _ => false,
        });
        if !fits {
            errors.push(format!("{path}: {value} is not of type {kinds:?}"));
            return;
        }
        match value {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.check(item, &schema["items"], &format!("{path}[{i}]"), errors);
                }
            }
            Value::Object(object) => {
                for name in schema["required"].as_array().into_iter().flatten() {
                    let name = name.as_str().unwrap_or_default();
                    if !object.contains_key(name) {
                        errors.push(format!("{path}: required `{name}` is missing"));
                    }
                }
                for (name, property) in object {
                    let inner = format!("{path}.{name}");
                    if let Some(declared) = schema["properties"].get(name) {
                        self.check(property, declared, &inner, errors);
                    } else if schema["additionalProperties"].is_object() {
                        self.check(property, &schema["additionalProperties"], &inner, errors);
                    } else {
                        errors.push(format!("{inner}: not declared by the schema"));
                    }
                }
            }
            _ => {}
        }
    }

    /// `value` against schema `name`: the list of misfits.
    fn misfits(&self, name: &str, value: &Value) -> Vec<String> {
        let mut errors = vec![];
        self.check(value, self.schema(name), name, &mut errors);
        errors
    }
}

/// The properties of `example` that `serialised` lost (the domain ignored them).
fn lost(example: &Value, serialised: &Value, path: &str, errors: &mut Vec<String>) {
    match (example, serialised) {
        (Value::Object(example), Value::Object(serialised)) => {
            for (name, value) in example {
                let inner = format!("{path}.{name}");
                match serialised.get(name) {
                    Some(kept) => lost(value, kept, &inner, errors),
                    None => errors.push(format!("{inner}: declared, but the domain drops it")),
                }
            }
        }
        (Value::Array(example), Value::Array(serialised)) => {
            for (i, (value, kept)) in example.iter().zip(serialised).enumerate() {
                lost(value, kept, &format!("{path}[{i}]"), errors);
            }
        }
        _ => {}
    }
}

/// Each schema of a domain struct, with the domain type's round trip.
const STRUCTS: [(&str, RoundTrip); 38] = [
    ("Variation", round_trip::<domain::flag::Variation>),
    ("Defaults", round_trip::<domain::flag::Defaults>),
    ("CustomProperty", round_trip::<domain::flag::CustomProperty>),
    ("Experiments", round_trip::<domain::flag::Experiments>),
    ("Target", round_trip::<domain::flag::Target>),
    (
        "VariationOrRollout",
        round_trip::<domain::flag::VariationOrRollout>,
    ),
    ("Rollout", round_trip::<domain::flag::Rollout>),
    (
        "WeightedVariation",
        round_trip::<domain::flag::WeightedVariation>,
    ),
    ("Rule", round_trip::<domain::flag::Rule>),
    ("Clause", round_trip::<domain::flag::Clause>),
    ("Prerequisite", round_trip::<domain::flag::Prerequisite>),
    ("ConfigSummary", round_trip::<domain::flag::ConfigSummary>),
    (
        "VariationSummary",
        round_trip::<domain::flag::VariationSummary>,
    ),
    (
        "SegmentTarget",
        round_trip::<domain::segment::SegmentTarget>,
    ),
    ("SegmentRule", round_trip::<domain::segment::SegmentRule>),
    (
        "ClientSideAvailability",
        round_trip::<domain::project::ClientSideAvailability>,
    ),
    (
        "NamingConvention",
        round_trip::<domain::project::NamingConvention>,
    ),
    (
        "DeliveryAttempt",
        round_trip::<domain::webhook::DeliveryAttempt>,
    ),
    ("Access", round_trip::<domain::audit::Access>),
    ("ProjectPost", round_trip::<domain::project::ProjectPost>),
    (
        "EnvironmentPost",
        round_trip::<domain::environment::EnvironmentPost>,
    ),
    (
        "EnvironmentSource",
        round_trip::<domain::environment::EnvironmentSource>,
    ),
    ("FlagPost", round_trip::<domain::flag::FlagPost>),
    ("VariationPost", round_trip::<domain::flag::VariationPost>),
    (
        "InitialPrerequisite",
        round_trip::<domain::flag::InitialPrerequisite>,
    ),
    ("FlagCopyPost", round_trip::<domain::flag::FlagCopyPost>),
    (
        "CopyEnvironment",
        round_trip::<domain::flag::CopyEnvironment>,
    ),
    ("SegmentPost", round_trip::<domain::segment::SegmentPost>),
    ("TokenPost", round_trip::<domain::token::TokenPost>),
    ("NewMemberForm", round_trip::<domain::member::NewMemberForm>),
    ("WebhookPost", round_trip::<domain::webhook::WebhookPost>),
    (
        "CustomRolePost",
        round_trip::<domain::custom_role::CustomRolePost>,
    ),
    ("PolicyStatement", round_trip::<domain::policy::Statement>),
    (
        "ClauseInput",
        round_trip::<domain::instruction::ClauseInput>,
    ),
    ("ServeInput", round_trip::<domain::instruction::ServeInput>),
    ("RuleInput", round_trip::<domain::instruction::RuleInput>),
    (
        "TargetInput",
        round_trip::<domain::instruction::TargetInput>,
    ),
    (
        "PrerequisiteInput",
        round_trip::<domain::instruction::PrerequisiteInput>,
    ),
];

#[test]
fn domain_structs_fit_their_schemas() {
    let doc = Doc::load();
    let mut failures = vec![];
    for (name, round_trip) in STRUCTS {
        let example = doc.example(doc.schema(name));
        match round_trip(example.clone()) {
            Ok(serialised) => {
                failures.extend(doc.misfits(name, &serialised));
                lost(&example, &serialised, name, &mut failures);
            }
            Err(e) => failures.push(format!("{name}: the domain refuses {example}: {e}")),
        }
    }
    // Only serialised, never read.
    let error = serde_json::to_value(domain::FieldError::new("key", "empty")).unwrap();
    failures.extend(doc.misfits("FieldError", &error));
    // A project's new environments are `EnvironmentPost`s, whose `source` (serialised as `null`
    // here) the contract leaves out of their schema: there is nothing to clone from yet.
    failures.retain(|f| f != "ProjectPost.environments[0].source: not declared by the schema");
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn enums_list_the_domain_variants() {
    let doc = Doc::load();
    let unknown = || json!("?unknown?");
    let domain: [(&str, Vec<String>, RoundTrip); 8] = [
        (
            "FlagKind",
            variants::<domain::flag::FlagKind>(unknown()),
            round_trip::<domain::flag::FlagKind>,
        ),
        (
            "Operator",
            variants::<domain::flag::Operator>(unknown()),
            round_trip::<domain::flag::Operator>,
        ),
        (
            "FlagStatusName",
            variants::<domain::flag::FlagStatusName>(unknown()),
            round_trip::<domain::flag::FlagStatusName>,
        ),
        (
            "CopyAction",
            variants::<domain::flag::CopyAction>(unknown()),
            round_trip::<domain::flag::CopyAction>,
        ),
        (
            "NamingCase",
            variants::<domain::project::NamingCase>(unknown()),
            round_trip::<domain::project::NamingCase>,
        ),
        (
            "Role",
            variants::<domain::role::Role>(unknown()),
            round_trip::<domain::role::Role>,
        ),
        (
            "Effect",
            variants::<domain::webhook::Effect>(unknown()),
            round_trip::<domain::webhook::Effect>,
        ),
        (
            "BasePermissions",
            variants::<domain::custom_role::BasePermissions>(unknown()),
            round_trip::<domain::custom_role::BasePermissions>,
        ),
    ];
    for (name, variants, round_trip) in domain {
        let listed = doc.schema(name)["enum"].as_array().unwrap().clone();
        let mut names: Vec<String> = listed
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        names.sort();
        assert_eq!(
            names, variants,
            "{name}: the schema's enum and the domain's"
        );
        for value in listed {
            assert_eq!(round_trip(value.clone()), Ok(value), "{name}");
        }
    }
}

#[test]
fn instruction_unions_list_the_domain_kinds_and_fit() {
    let doc = Doc::load();
    let unknown = json!({"kind": "?unknown?"});
    let unions: [(&str, Vec<String>, RoundTrip); 3] = [
        (
            "Instruction",
            variants::<domain::instruction::Instruction>(unknown.clone()),
            round_trip::<domain::instruction::Instruction>,
        ),
        (
            "SegmentInstruction",
            variants::<domain::segment::SegmentInstruction>(unknown.clone()),
            round_trip::<domain::segment::SegmentInstruction>,
        ),
        (
            "TeamInstruction",
            variants::<domain::team::TeamInstruction>(unknown),
            round_trip::<domain::team::TeamInstruction>,
        ),
    ];
    for (name, kinds, round_trip) in unions {
        let mut failures = vec![];
        let mut listed = vec![];
        for branch in doc.schema(name)["oneOf"].as_array().unwrap() {
            let example = doc.example(branch);
            listed.push(example["kind"].as_str().unwrap().to_owned());
            match round_trip(example.clone()) {
                Ok(serialised) => {
                    failures.extend(doc.misfits(name, &serialised));
                    lost(&example, &serialised, name, &mut failures);
                }
                Err(e) => failures.push(format!("{name}: the domain refuses {example}: {e}")),
            }
        }
        listed.sort();
        assert_eq!(listed, kinds, "{name}: the schema's kinds and the domain's");
        assert!(failures.is_empty(), "{failures:#?}");
    }
}

/// A flag as served (rules with clauses and rollouts, targets, prerequisites, every optional
/// field set) and a segment, built by the domain and shown by the wire shapes.
#[test]
fn served_flags_and_segments_fit_their_schemas() {
    let doc = Doc::load();
    // What the wire shapes add to the domain's document.
    let derived = |value: &mut Value, fields: &[&str]| {
        if let Value::Object(object) = value {
            for field in fields {
                object.remove(*field);
            }
        }
    };
    let mut flag = doc.example(doc.schema("Flag"));
    derived(&mut flag, &["_links", "_maintainer", "_maintainerTeam"]);
    for config in flag["environments"].as_object_mut().unwrap().values_mut() {
        derived(config, &["_site", "_summary", "_access"]);
    }
    let flag: domain::flag::Flag = serde_json::from_value(flag).unwrap();
    assert!(flag
        .environments
        .values()
        .any(|c| !c.rules.is_empty() && c.rules[0].rollout.is_some() && !c.targets.is_empty()));
    let served = serde_json::to_value(crate::wire::Flag::of(
        "web",
        flag,
        &service::Maintainers::default(),
    ))
    .unwrap();
    let mut failures = doc.misfits("Flag", &served);

    let mut segment = doc.example(doc.schema("Segment"));
    derived(&mut segment, &["_links", "_access"]);
    let segment: domain::segment::Segment = serde_json::from_value(segment).unwrap();
    let served =
        serde_json::to_value(crate::wire::Segment::of("web", "production", segment)).unwrap();
    failures.extend(doc.misfits("Segment", &served));
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The checker itself: it finds an undeclared property, a missing required one, a wrong type
/// and a value outside an enum.
#[test]
fn the_check_finds_misfits() {
    let doc = Doc::load();
    let mut target = doc.example(doc.schema("Target"));
    assert!(doc.misfits("Target", &target).is_empty());
    target["extra"] = json!(1);
    target.as_object_mut().unwrap().remove("values");
    target["variation"] = json!("zero");
    assert_eq!(doc.misfits("Target", &target).len(), 3, "{target}");
    assert_eq!(doc.misfits("Operator", &json!("like")).len(), 1);
}
