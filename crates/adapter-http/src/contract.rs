//! What the validators enforce, stated in the OpenAPI document with the very constants they
//! use (`domain::text`, the limits of `domain`): patterns, lengths, enums and ranges of path
//! parameters and request bodies. A generated client then refuses what the server would refuse,
//! and a schema-valid request is one the server accepts unless a rule the schema cannot express
//! (an unknown key, a cross-field rule) says otherwise.

use serde_json::{json, Map, Value};

use domain::text;

mod links;
use links::add_links;

/// A string rule: pattern and length bounds, in characters.
struct Text {
    pattern: &'static str,
    min: Option<usize>,
    max: usize,
}

const PROJECT_KEY: Text = Text {
    pattern: text::KEY_PATTERN,
    min: Some(1),
    max: text::MAX_PROJECT_KEY_CHARS,
};
const KEY: Text = Text {
    pattern: text::KEY_PATTERN,
    min: Some(1),
    max: text::MAX_KEY_CHARS,
};
const NAME: Text = Text {
    pattern: text::NAME_PATTERN,
    min: Some(1),
    max: text::MAX_NAME_CHARS,
};
const LABEL: Text = Text {
    pattern: text::SINGLE_LINE_PATTERN,
    min: None,
    max: text::MAX_NAME_CHARS,
};
const TAG: Text = Text {
    pattern: text::TAG_PATTERN,
    min: Some(1),
    max: text::MAX_TAG_CHARS,
};
const EMAIL: Text = Text {
    pattern: text::EMAIL_PATTERN,
    min: Some(1),
    max: text::MAX_EMAIL_CHARS,
};
const COLOR: Text = Text {
    pattern: text::COLOR_PATTERN,
    min: Some(6),
    max: 6,
};
/// `http(s)://`, then an authority without user information (`@`), backslash, white space or
/// control characters; whether the host may be reached is the service's policy, not syntax.
const WEBHOOK_URL: Text = Text {
    pattern: r"^[Hh][Tt][Tt][Pp][Ss]?://[^@/?#\\\s\u0000-\u001F\u007F-\u009F]+([/?#][^\\\s\u0000-\u001F\u007F-\u009F]*)?$",
    min: None,
    max: domain::webhook::MAX_URL_CHARS,
};

impl Text {
    fn apply(&self, schema: &mut Map<String, Value>) {
        schema.insert("pattern".into(), json!(self.pattern));
        match self.min {
            Some(min) => schema.insert("minLength".into(), json!(min)),
            None => schema.remove("minLength"),
        };
        schema.insert("maxLength".into(), json!(self.max));
    }
}

/// Path parameters by name (an `id` depends on the route, see [`id_rule`]).
fn path_parameter_rule(name: &str) -> Option<&'static Text> {
    match name {
        "projectKey" => Some(&PROJECT_KEY),
        "environmentKey" | "flagKey" | "segmentKey" | "customRoleKey" | "teamKey" => Some(&KEY),
        _ => None,
    }
}

/// `id` path parameters: 24 hex digits, and `me` for members.
fn id_rule(path: &str) -> Value {
    if path.starts_with("/api/v2/members/") {
        json!({"type": "string", "pattern": "^([0-9a-f]{24}|me)$"})
    } else {
        json!({"type": "string", "pattern": text::ID_PATTERN})
    }
}

/// String properties of request bodies: (schema, property, rule).
const BODY_TEXT: [(&str, &str, &Text); 25] = [
    ("InitialPrerequisite", "key", &KEY),
    ("ProjectPost", "key", &PROJECT_KEY),
    ("ProjectPost", "name", &NAME),
    ("EnvironmentPost", "key", &KEY),
    ("EnvironmentPost", "name", &NAME),
    ("EnvironmentPost", "color", &COLOR),
    ("FlagPost", "key", &KEY),
    ("FlagPost", "name", &NAME),
    ("SegmentPost", "key", &KEY),
    ("SegmentPost", "name", &NAME),
    ("CopyEnvironment", "key", &KEY),
    ("PrerequisiteInput", "key", &KEY),
    ("TokenPost", "name", &LABEL),
    ("NewMemberForm", "email", &EMAIL),
    ("NewMemberForm", "firstName", &LABEL),
    ("NewMemberForm", "lastName", &LABEL),
    ("WebhookPost", "url", &WEBHOOK_URL),
    ("WebhookPost", "name", &LABEL),
    ("VariationPost", "name", &LABEL),
    ("CustomProperty", "name", &NAME),
    ("CustomRolePost", "key", &KEY),
    ("CustomRolePost", "name", &NAME),
    ("TeamPost", "key", &KEY),
    ("FlagPost", "maintainerTeamKey", &KEY),
    ("TeamPost", "name", &NAME),
];

/// Request bodies with `tags`.
const TAGGED: [&str; 5] = [
    "ProjectPost",
    "EnvironmentPost",
    "FlagPost",
    "SegmentPost",
    "WebhookPost",
];

fn property<'a>(
    schemas: &'a mut Map<String, Value>,
    schema: &str,
    name: &str,
) -> Option<&'a mut Map<String, Value>> {
    schemas
        .get_mut(schema)?
        .get_mut("properties")?
        .get_mut(name)?
        .as_object_mut()
}

/// Lists of keys or `_id`s in request bodies: each item's pattern, how many, none twice.
fn key_lists(schemas: &mut Map<String, Value>) {
    let mut key = Map::new();
    key.insert("type".into(), json!("string"));
    KEY.apply(&mut key);
    let key = Value::Object(key);
    let id = json!({"type": "string", "pattern": "^[0-9a-f]{24}$"});
    let roles = domain::member::MAX_CUSTOM_ROLES;
    let teams = domain::team::MAX_TEAMS_PER_MEMBER;
    for (schema, name, items, min, max, optional) in [
        ("NewMemberForm", "customRoles", &key, 0, roles, true),
        ("NewMemberForm", "teamKeys", &key, 0, teams, true),
        ("TeamPost", "customRoleKeys", &key, 0, roles, true),
        (
            "TeamPost",
            "memberIDs",
            &id,
            0,
            domain::team::MAX_MEMBER_IDS,
            true,
        ),
        ("MemberTeamsPost", "teamKeys", &key, 1, teams, false),
    ] {
        if let Some(list) = property(schemas, schema, name) {
            if optional {
                list.insert("type".into(), json!(["array", "null"]));
            }
            if min > 0 {
                list.insert("minItems".into(), json!(min));
            }
            list.insert("maxItems".into(), json!(max));
            list.insert("uniqueItems".into(), json!(true));
            list.insert("items".into(), items.clone());
        }
    }
    if let Some(description) = property(schemas, "TeamPost", "description") {
        description.insert(
            "maxLength".into(),
            json!(domain::team::MAX_DESCRIPTION_CHARS),
        );
    }
}

/// `_access` on the objects a single read or write shows it on (`crate::wire::access`): not
/// required, since lists, the audit log and webhook payloads show them without it.
fn caller_access(schemas: &mut Map<String, Value>) {
    for name in [
        "ProjectExpanded",
        "ProjectRep",
        "Environment",
        "Segment",
        "SegmentDetail",
        "Webhook",
        "CustomRole",
        "Team",
    ] {
        if let Some(properties) = schemas
            .get_mut(name)
            .and_then(|s| s.get_mut("properties"))
            .and_then(Value::as_object_mut)
        {
            properties.insert(
                "_access".into(),
                json!({
                    "$ref": "#/components/schemas/ResourceAccess",
                    "description": "What the caller may do to it: each action of its kind, allowed or denied, with the deciding statement and its role (answers of single reads and writes only, not list items)"
                }),
            );
        }
    }
    if let Some(properties) = schemas
        .get_mut("FlagConfig")
        .and_then(|s| s.get_mut("properties"))
        .and_then(Value::as_object_mut)
    {
        properties.insert(
            "_access".into(),
            json!({
                "$ref": "#/components/schemas/ResourceAccess",
                "description": "What the caller may do to the flag in this environment: each flag action, allowed or denied, with the deciding statement and its role (only in the answer of GET of one flag with expand=_access)"
            }),
        );
    }
}

/// Fields the reference lists that this service refuses unless they are empty or absent: the
/// schema admits only what is accepted (its description says why).
fn refused_fields(schemas: &mut Map<String, Value>) {
    let only_null = || json!({"type": "null"});
    let rules: [(&str, &str, Value); 6] = [
        ("NewMemberForm", "password", only_null()),
        (
            "NewMemberForm",
            "roleAttributes",
            json!({"type": ["object", "null"], "maxProperties": 0}),
        ),
        ("FlagPost", "purpose", only_null()),
        ("FlagPost", "migrationSettings", only_null()),
        ("SegmentPost", "unboundedContextKind", only_null()),
        ("EnvironmentSource", "version", only_null()),
    ];
    for (schema, name, rule) in rules {
        if let Some(property) = property(schemas, schema, name) {
            let description = property.get("description").cloned();
            if let Value::Object(rule) = rule {
                *property = rule;
            }
            if let Some(description) = description {
                property.insert("description".into(), description);
            }
        }
    }
    key_lists(schemas);
    if let Some(ids) = property(schemas, "TokenPost", "customRoleIds") {
        ids.insert(
            "maxItems".into(),
            json!(domain::token::MAX_TOKEN_CUSTOM_ROLES),
        );
        ids.insert("uniqueItems".into(), json!(true));
        ids.insert(
            "items".into(),
            json!({"type": "string", "pattern": "^[0-9a-f]{24}$"}),
        );
    }
    if let Some(inline) = property(schemas, "TokenPost", "inlineRole") {
        inline.insert(
            "maxItems".into(),
            json!(domain::custom_role::MAX_STATEMENTS),
        );
    }
    if let Some(unbounded) = property(schemas, "SegmentPost", "unbounded") {
        unbounded.insert("enum".into(), json!([false, null]));
    }
    if let Some(key) = property(schemas, "EnvironmentSource", "key") {
        KEY.apply(key);
    }
}

/// The environments of `POST /projects` are environment requests without `source`: there is
/// nothing to clone from yet.
fn project_environments(schemas: &mut Map<String, Value>) {
    let Some(mut post) = schemas.get("EnvironmentPost").cloned() else {
        return;
    };
    if let Some(properties) = post.get_mut("properties").and_then(Value::as_object_mut) {
        properties.remove("source");
    }
    post["description"] = json!("An environment created with its project (`POST /projects`).");
    schemas.insert("ProjectEnvironmentPost".into(), post);
    if let Some(environments) = property(schemas, "ProjectPost", "environments") {
        environments.insert(
            "items".into(),
            json!({"$ref": "#/components/schemas/ProjectEnvironmentPost"}),
        );
    }
}

/// Descriptions come from doc comments, whose code examples are Rust for this crate's readers,
/// not for API clients: they are left out of the document.
fn without_code_examples(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(text)) = map.get_mut("description") {
                if text.contains("```") {
                    let mut kept = String::new();
                    let mut in_code = false;
                    for line in text.lines() {
                        if line.trim_start().starts_with("```") {
                            in_code = !in_code;
                        } else if !in_code {
                            kept.push_str(line);
                            kept.push('\n');
                        }
                    }
                    *text = kept.trim_end().to_owned();
                }
            }
            map.values_mut().for_each(without_code_examples);
        }
        Value::Array(items) => items.iter_mut().for_each(without_code_examples),
        _ => {}
    }
}

/// `[a-z]` enums and integer ranges the validators check.
fn enums_and_ranges(schemas: &mut Map<String, Value>) {
    let token_roles = ["reader", "writer", "admin"];
    let invite_roles = ["reader", "writer", "admin", "no_access"];
    let versions: Vec<i32> = domain::version::ApiVersion::VALID_DATES.to_vec();
    let set = |schemas: &mut Map<String, Value>, schema: &str, name: &str, key: &str, value| {
        if let Some(p) = property(schemas, schema, name) {
            p.insert(key.into(), value);
        }
    };
    set(
        schemas,
        "CallerIdentityRep",
        "authKind",
        "enum",
        json!(["token"]),
    );
    set(
        schemas,
        "CallerIdentityRep",
        "tokenKind",
        "enum",
        json!(["personal", "service"]),
    );
    // Optional fields are `type: [x, null]`: `null` stays valid (it means the default).
    set(
        schemas,
        "TokenPost",
        "role",
        "enum",
        json!(with_null(&token_roles)),
    );
    set(
        schemas,
        "NewMemberForm",
        "role",
        "enum",
        json!(with_null(&invite_roles)),
    );
    set(
        schemas,
        "TokenPost",
        "defaultApiVersion",
        "enum",
        json!(versions
            .iter()
            .map(|v| json!(v))
            .chain([Value::Null])
            .collect::<Vec<_>>()),
    );
    set(
        schemas,
        "EnvironmentPost",
        "defaultTtl",
        "minimum",
        json!(0),
    );
    set(
        schemas,
        "EnvironmentPost",
        "defaultTtl",
        "maximum",
        json!(domain::environment::MAX_TTL_MINUTES),
    );
}

/// A custom role's policy: at most [`domain::custom_role::MAX_STATEMENTS`] statements, each list
/// of 1 to [`domain::custom_role::MAX_STATEMENT_ENTRIES`] specifiers (of
/// [`domain::policy::SPECIFIER_PATTERN`]) or actions.
fn policies(schemas: &mut Map<String, Value>) {
    use domain::custom_role::{MAX_DESCRIPTION_CHARS, MAX_STATEMENTS, MAX_STATEMENT_ENTRIES};
    for (schema, field) in [("CustomRolePost", "policy"), ("WebhookPost", "statements")] {
        if let Some(policy) = property(schemas, schema, field) {
            policy.insert("maxItems".into(), json!(MAX_STATEMENTS));
        }
    }
    if let Some(description) = property(schemas, "CustomRolePost", "description") {
        description.insert("maxLength".into(), json!(MAX_DESCRIPTION_CHARS));
    }
    let specifier = json!({
        "type": "string",
        "pattern": domain::policy::SPECIFIER_PATTERN,
        "maxLength": domain::policy::MAX_SPECIFIER_CHARS,
    });
    let action = json!({
        "type": "string",
        "pattern": domain::policy::ACTION_PATTERN,
        "maxLength": domain::policy::MAX_ACTION_CHARS,
    });
    for (name, items) in [
        ("resources", &specifier),
        ("notResources", &specifier),
        ("actions", &action),
        ("notActions", &action),
    ] {
        if let Some(list) = property(schemas, "PolicyStatement", name) {
            list.insert("minItems".into(), json!(1));
            list.insert("maxItems".into(), json!(MAX_STATEMENT_ENTRIES));
            list.insert("items".into(), items.clone());
        }
    }
    // Exactly one of `resources` and `notResources`; not both `actions` and `notActions`.
    if let Some(statement) = schemas
        .get_mut("PolicyStatement")
        .and_then(Value::as_object_mut)
    {
        statement.insert(
            "oneOf".into(),
            json!([{"required": ["resources"]}, {"required": ["notResources"]}]),
        );
        statement.insert("not".into(), json!({"required": ["actions", "notActions"]}));
    }
}

fn with_null(values: &[&str]) -> Vec<Value> {
    values
        .iter()
        .map(|v| json!(v))
        .chain([Value::Null])
        .collect()
}

/// One RFC 6902 operation, by its three shapes: the server refuses an `add` without `value` or
/// a `move` without `from` before reading anything else.
fn json_patch_operation() -> Value {
    let pointer = json!({
        "type": "string",
        "pattern": "^(/([^~]|~[01])*)+$",
        "description": "A JSON Pointer (RFC 6901) to a field of the resource: `/`-separated tokens where `~` is written `~0` and `/` is `~1` (the empty pointer, the whole resource, cannot be changed)."
    });
    json!({
        "description": "One RFC 6902 operation.",
        "oneOf": [
            {
                "type": "object",
                "title": "value operation",
                "required": ["op", "path", "value"],
                "properties": {
                    "op": {"type": "string", "enum": ["add", "replace", "test"]},
                    "path": pointer,
                    "value": {"description": "The value to add, to replace with, or to compare with."}
                },
                "additionalProperties": false
            },
            {
                "type": "object",
                "title": "remove",
                "required": ["op", "path"],
                "properties": {
                    "op": {"type": "string", "enum": ["remove"]},
                    "path": pointer
                },
                "additionalProperties": false
            },
            {
                "type": "object",
                "title": "move or copy",
                "required": ["op", "from", "path"],
                "properties": {
                    "op": {"type": "string", "enum": ["move", "copy"]},
                    "from": pointer,
                    "path": pointer
                },
                "additionalProperties": false
            }
        ]
    })
}

/// Applies every constraint to the document (as JSON).
pub(crate) fn constrain(doc: &mut Value) {
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for (path, item) in paths.iter_mut() {
            let Some(item) = item.as_object_mut() else {
                continue;
            };
            for operation in item.values_mut() {
                json_patch_items(operation);
                let Some(parameters) = operation
                    .get_mut("parameters")
                    .and_then(Value::as_array_mut)
                else {
                    continue;
                };
                for parameter in parameters {
                    if parameter.get("in") == Some(&json!("query")) {
                        if parameter.get("name") == Some(&json!("filter")) {
                            if let Some(fields) = filter_fields(path) {
                                parameter["schema"]["pattern"] = json!(filter_pattern(fields));
                            }
                        }
                        // The audit log's `spec` is a specifier of the statements' grammar
                        // (or empty: no filter).
                        if parameter.get("name") == Some(&json!("spec")) {
                            parameter["schema"]["pattern"] =
                                json!(format!("^$|{}", domain::policy::SPECIFIER_PATTERN));
                            parameter["schema"]["maxLength"] =
                                json!(domain::policy::MAX_SPECIFIER_CHARS);
                        }
                        single_line_query_parameter(parameter);
                        continue;
                    }
                    if parameter.get("in") != Some(&json!("path")) {
                        continue;
                    }
                    let name = parameter.get("name").and_then(Value::as_str);
                    let schema = match name {
                        Some("id") => id_rule(path),
                        Some(name) => match path_parameter_rule(name) {
                            Some(rule) => {
                                let mut schema = Map::new();
                                schema.insert("type".into(), json!("string"));
                                rule.apply(&mut schema);
                                Value::Object(schema)
                            }
                            None => continue,
                        },
                        None => continue,
                    };
                    parameter["schema"] = schema;
                }
            }
        }
    }
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for (schema, name, rule) in BODY_TEXT {
        if let Some(property) = property(schemas, schema, name) {
            rule.apply(property);
        }
    }
    for schema in TAGGED {
        if let Some(tags) = property(schemas, schema, "tags") {
            tags.insert("maxItems".into(), json!(domain::MAX_TAGS));
            if let Some(items) = tags.get_mut("items").and_then(Value::as_object_mut) {
                TAG.apply(items);
            }
        }
    }
    enums_and_ranges(schemas);
    policies(schemas);
    refused_fields(schemas);
    project_environments(schemas);
    caller_access(schemas);
    for schema in schemas.values_mut() {
        without_code_examples(schema);
    }
    schemas.insert("JsonPatchOperation".into(), json_patch_operation());
    for schema in ["SemanticPatchBody", "SegmentSemanticPatchBody"] {
        if let Some(instructions) = property(schemas, schema, "instructions") {
            instructions.insert("minItems".into(), json!(1));
        }
    }
    add_links(doc);
    let requests = request_schemas(doc);
    if let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        open_responses(schemas, &requests);
    }
}

/// The fields each list's `filter` takes (`domain::query`).
fn filter_fields(path: &str) -> Option<&'static [&'static str]> {
    use domain::query::*;
    match path {
        "/api/v2/projects" => Some(&PROJECT_FILTERS),
        "/api/v2/projects/{projectKey}/environments" => Some(&ENVIRONMENT_FILTERS),
        "/api/v2/flags/{projectKey}" => Some(&FLAG_FILTERS),
        "/api/v2/members" => Some(&MEMBER_FILTERS),
        "/api/v2/segments/{projectKey}/{environmentKey}" => Some(&SEGMENT_FILTERS),
        "/api/v2/roles" => Some(&CUSTOM_ROLE_FILTERS),
        _ => None,
    }
}

/// `field:value` pairs joined by `,` (blank pairs are skipped), with `field` one of `fields`;
/// each field's values have their own grammar, described in the parameter's text.
fn filter_pattern(fields: &[&str]) -> String {
    let pair = format!(r"\s*(({})\s*:[^,]*)?", fields.join("|"));
    format!("^{pair}(,{pair})*$")
}

/// A JSON Patch body (an array of operations) is an array of [`json_patch_operation`]s.
fn json_patch_items(operation: &mut Value) {
    if let Some(schema) = operation.pointer_mut("/requestBody/content/application~1json/schema") {
        if schema.get("type") == Some(&json!("array"))
            && schema.get("items") == Some(&json!({"type": "object"}))
        {
            schema["items"] = json!({"$ref": "#/components/schemas/JsonPatchOperation"});
        }
    }
}

/// Every query parameter is single-line text: the server refuses control characters in the
/// query string before reading it.
fn single_line_query_parameter(parameter: &mut Value) {
    let Some(schema) = parameter.get_mut("schema") else {
        return;
    };
    let target = if schema.get("type") == Some(&json!("array")) {
        schema.get_mut("items")
    } else {
        Some(schema)
    };
    if let Some(target) = target.and_then(Value::as_object_mut) {
        if target.get("type") == Some(&json!("string")) && !target.contains_key("enum") {
            target
                .entry("pattern")
                .or_insert_with(|| json!(text::SINGLE_LINE_PATTERN));
        }
    }
}

/// Names of the component schemas a request body reaches.
fn request_schemas(doc: &Value) -> std::collections::BTreeSet<String> {
    fn refs(value: &Value, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    if let Some(name) = target.strip_prefix("#/components/schemas/") {
                        found.push(name.to_owned());
                    }
                }
                map.values().for_each(|v| refs(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, found)),
            _ => {}
        }
    }
    let mut pending = vec![];
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        for item in paths.values().filter_map(Value::as_object) {
            for operation in item.values() {
                if let Some(body) = operation.get("requestBody") {
                    refs(body, &mut pending);
                }
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    while let Some(name) = pending.pop() {
        if seen.insert(name.clone()) {
            if let Some(schema) = doc.pointer(&format!("/components/schemas/{name}")) {
                refs(schema, &mut pending);
            }
        }
    }
    seen
}

/// A response object may gain fields in later releases, and a client must not reject it then:
/// only request bodies say `additionalProperties: false` (the server refuses unknown fields).
fn open_responses(schemas: &mut Map<String, Value>, requests: &std::collections::BTreeSet<String>) {
    for (name, schema) in schemas.iter_mut() {
        if requests.contains(name) {
            continue;
        }
        if let Some(schema) = schema.as_object_mut() {
            if schema.get("additionalProperties") == Some(&json!(false)) {
                schema.remove("additionalProperties");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::links::LINKS;
    use super::*;

    fn document() -> Value {
        crate::openapi_document().unwrap()
    }

    #[test]
    fn every_rule_lands_on_an_existing_property() {
        let doc = document();
        for (schema, name, rule) in BODY_TEXT {
            let property = doc
                .pointer(&format!("/components/schemas/{schema}/properties/{name}"))
                .unwrap_or_else(|| panic!("{schema}.{name} is not in the document"));
            assert_eq!(property["pattern"], json!(rule.pattern), "{schema}.{name}");
            assert_eq!(property["maxLength"], json!(rule.max), "{schema}.{name}");
        }
        for schema in TAGGED {
            let tags = &doc["components"]["schemas"][schema]["properties"]["tags"];
            assert_eq!(
                tags["items"]["pattern"],
                json!(text::TAG_PATTERN),
                "{schema}"
            );
            assert_eq!(tags["maxItems"], json!(domain::MAX_TAGS), "{schema}");
        }
    }

    #[test]
    fn every_link_leaves_a_creation_and_reaches_an_operation() {
        let doc = document();
        let mut operations = std::collections::BTreeMap::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for operation in item.as_object().unwrap().values() {
                if let Some(id) = operation["operationId"].as_str() {
                    operations.insert(id.to_owned(), (path.clone(), operation.clone()));
                }
            }
        }
        for (path, method, status, targets, parameters) in LINKS {
            let links = &doc["paths"][path][method]["responses"][status]["links"];
            for target in targets {
                assert!(links[target].is_object(), "{method} {path} -> {target}");
                let (target_path, operation) = operations
                    .get(*target)
                    .unwrap_or_else(|| panic!("no operation {target}"));
                let declared: Vec<&str> = operation["parameters"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|p| p["in"] == json!("path"))
                    .filter_map(|p| p["name"].as_str())
                    .collect();
                for name in &declared {
                    assert!(
                        parameters.iter().any(|(given, _)| given == name),
                        "{target} ({target_path}) needs {name}"
                    );
                }
            }
        }
    }

    /// What every route can answer whatever it does: 503 when the store is down (authentication
    /// reads it), 409 for a write whose retries lost every race, 408/413/415 for a body.
    #[test]
    fn shared_statuses_are_declared_on_every_route() {
        let doc = document();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let declared = |status: &str| operation["responses"][status].is_object();
                let public = path == "/api/v2" || path == "/api/v2/openapi.json";
                assert_eq!(declared("503"), !public, "{method} {path}: 503");
                assert_eq!(declared("401"), !public, "{method} {path}: 401");
                if method != "get" {
                    assert!(declared("409"), "{method} {path}: 409");
                }
                if method == "post" || method == "patch" {
                    for status in ["408", "413", "415"] {
                        assert!(declared(status), "{method} {path}: {status}");
                    }
                }
            }
        }
    }

    #[test]
    fn filter_patterns_agree_with_the_filter_parser() {
        let fields = domain::query::PROJECT_FILTERS;
        let pattern = regex::Regex::new(&filter_pattern(&fields)).unwrap();
        for filter in [
            "",
            "query:dark",
            " query : dark ,tags:a+b",
            "query:x,,keys:a|b",
            ",",
            "color:red",
            "oops",
            "query:x,oops",
            "querytags:x",
        ] {
            assert_eq!(
                pattern.is_match(filter),
                domain::query::parse_filter(filter, &fields).is_ok(),
                "{filter:?}"
            );
        }
    }

    #[test]
    fn descriptions_hold_no_rust_examples() {
        let text = document().to_string();
        assert!(
            !text.contains("```"),
            "a description still holds a code block"
        );
        assert!(!text.contains("use domain::"));
    }

    #[test]
    fn every_key_and_id_path_parameter_has_its_pattern() {
        let doc = document();
        let mut seen = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for operation in item.as_object().unwrap().values() {
                for parameter in operation["parameters"].as_array().into_iter().flatten() {
                    if parameter["in"] != json!("path") {
                        continue;
                    }
                    seen += 1;
                    let name = parameter["name"].as_str().unwrap();
                    let pattern = parameter["schema"]["pattern"].as_str();
                    assert!(pattern.is_some(), "{path}: {name} has no pattern");
                    if name.ends_with("Key") {
                        assert_eq!(pattern, Some(text::KEY_PATTERN), "{path}: {name}");
                    }
                }
            }
        }
        assert!(seen > 20);
    }

    /// The patterns in the document compile as the server's own regexes and say what the
    /// validators say on a few values (the domain's tests compare them exhaustively).
    #[test]
    fn patterns_agree_with_the_validators() {
        let key = regex::Regex::new(KEY.pattern).unwrap();
        assert!(
            key.is_match("new-checkout") && domain::key::FlagKey::parse("new-checkout").is_ok()
        );
        assert!(!key.is_match("-x") && domain::key::FlagKey::parse("-x").is_err());
        let url = regex::Regex::new(WEBHOOK_URL.pattern).unwrap();
        for (candidate, valid) in [
            ("https://hooks.example.com/in?x=1", true),
            ("HTTP://hooks.example.com", true),
            ("https://user@hooks.example.com/", false),
            ("ftp://hooks.example.com/", false),
            ("https://hooks.example.com/a b", false),
            ("https://a\\b/", false),
        ] {
            assert_eq!(url.is_match(candidate), valid, "{candidate}");
            if valid {
                assert!(
                    domain::webhook::target::parse_url(candidate).is_ok(),
                    "{candidate}"
                );
            } else {
                assert!(
                    domain::webhook::target::parse_url(candidate).is_err(),
                    "{candidate}"
                );
            }
        }
    }
}
