//! The schemas derived on the domain's types against the domain's own serde, through the
//! served document.
//!
//! For every domain type the API reads: an example built from its schema (every property,
//! optional ones too, with values other than the defaults; every branch of an instruction union)
//! must parse as the domain type, the domain must keep every property of it, and what the domain
//! serialises must fit the schema (every property declared, every required one present, the
//! types and enum values it states). A flag and a segment, built by the domain from examples and
//! shown by the wire shapes, fit theirs.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

/// The served document.
struct Doc(Value);

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

/// Reads `value` as a `T` and serialises it again.
type RoundTrip = fn(Value) -> Result<Value, String>;

fn round_trip<T: DeserializeOwned + Serialize>(value: Value) -> Result<Value, String> {
    let parsed: T = serde_json::from_value(value).map_err(|e| e.to_string())?;
    serde_json::to_value(parsed).map_err(|e| e.to_string())
}

/// The schema of domain type `T`, by its name in the document, with `T`'s round trip.
fn schema_of<T: ToSchema + DeserializeOwned + Serialize>() -> (String, RoundTrip) {
    (T::name().into_owned(), round_trip::<T>)
}

/// The domain's types that the API reads (create bodies, instructions and their parts) or shows
/// and reads back (a flag's and a segment's parts): each schema derived on the type itself, then
/// completed by `crate::contract`.
fn read_types() -> Vec<(String, RoundTrip)> {
    use domain::{custom_role, environment, flag, instruction, member, policy, project};
    use domain::{segment, team, token, webhook};
    vec![
        schema_of::<flag::Variation>(),
        schema_of::<flag::Defaults>(),
        schema_of::<flag::CustomProperty>(),
        schema_of::<flag::Experiments>(),
        schema_of::<flag::Target>(),
        schema_of::<flag::VariationOrRollout>(),
        schema_of::<flag::Rule>(),
        schema_of::<flag::Prerequisite>(),
        schema_of::<flag::ConfigSummary>(),
        schema_of::<segment::SegmentTarget>(),
        schema_of::<segment::SegmentRule>(),
        schema_of::<project::NamingConvention>(),
        schema_of::<webhook::DeliveryAttempt>(),
        schema_of::<domain::audit::Access>(),
        schema_of::<project::ProjectPost>(),
        schema_of::<environment::EnvironmentPost>(),
        schema_of::<flag::FlagPost>(),
        schema_of::<flag::FlagCopyPost>(),
        schema_of::<segment::SegmentPost>(),
        schema_of::<token::TokenPost>(),
        schema_of::<member::NewMemberForm>(),
        schema_of::<webhook::WebhookPost>(),
        schema_of::<custom_role::CustomRolePost>(),
        schema_of::<team::TeamPost>(),
        schema_of::<policy::Statement>(),
        schema_of::<instruction::RuleInput>(),
        schema_of::<instruction::Instruction>(),
        schema_of::<segment::SegmentInstruction>(),
        schema_of::<team::TeamInstruction>(),
    ]
}

/// Every branch of a union (`oneOf` without properties: the instructions), else the schema.
fn branches(schema: &Value) -> Vec<Value> {
    match schema.get("oneOf").and_then(Value::as_array) {
        Some(branches) if schema.get("properties").is_none() => branches.clone(),
        _ => vec![schema.clone()],
    }
}

/// The schemas are derived from the domain's serde attributes, but what utoipa cannot see
/// (`value_type` overrides, `required`/`nullable` settings, `deserialize_with`, what
/// `crate::contract` adds) could still part them: an example of every schema (every property,
/// optional ones too, with values other than the defaults) must parse as the domain type, the
/// domain must keep all of it, and what the domain writes back must fit the schema.
#[test]
fn domain_types_read_their_examples_whole() {
    let doc = Doc::load();
    let mut failures = vec![];
    for (name, round_trip) in read_types() {
        for branch in branches(doc.schema(&name)) {
            let example = doc.example(&branch);
            match round_trip(example.clone()) {
                Ok(serialised) => {
                    failures.extend(doc.misfits(&name, &serialised));
                    lost(&example, &serialised, &name, &mut failures);
                }
                Err(e) => failures.push(format!("{name}: the domain refuses {example}: {e}")),
            }
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
