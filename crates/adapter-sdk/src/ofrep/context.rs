//! An OFREP evaluation context, as the SDK context the original's OpenFeature providers make of
//! it: `targetingKey` (else `key`) is the key, `kind` defaults to `user`, `privateAttributes`
//! goes to `_meta`, every other attribute is kept; a multi-kind context is `kind: "multi"` with
//! one object per kind (attributes of the top level that are not objects are left out, as the
//! providers leave them).

use domain::evaluation::Context;
use serde_json::{Map, Value};

/// What an OFREP context makes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Read {
    /// A valid SDK context.
    Ready(Context),
    /// A valid context but for its key: the context of kind `.0` has no `targetingKey`. An
    /// evaluation that needs one cannot be made; a flag that is off needs none.
    NoTargetingKey(String),
}

/// Stands in for a missing key while the rest of the context is checked.
const STAND_IN_KEY: &str = "-";

/// Reads `context` (the request's `context`; absent or `null` is an empty one).
///
/// # Errors
/// Why it is no valid context (for `INVALID_CONTEXT`).
pub(crate) fn read(context: Option<&Value>) -> Result<Read, String> {
    let empty = Map::new();
    let object = match context {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(object)) => object,
        Some(_) => return Err("the context must be a JSON object".into()),
    };
    let kind = match object.get("kind") {
        None => "user",
        Some(Value::String(kind)) => kind.as_str(),
        Some(_) => return Err("the context's kind must be a string".into()),
    };
    let mut missing = None;
    let sdk = if kind == "multi" {
        let mut multi = Map::new();
        multi.insert("kind".into(), Value::String("multi".into()));
        for (kind, part) in object {
            let Value::Object(part) = part else {
                continue;
            };
            multi.insert(kind.clone(), single(kind, part, &mut missing)?);
        }
        if multi.len() == 1 {
            return Err("a multi-kind context needs one object per kind".into());
        }
        Value::Object(multi)
    } else {
        single(kind, object, &mut missing)?
    };
    let context = Context::from_json(&sdk).map_err(|e| e.0)?;
    Ok(match missing {
        Some(kind) => Read::NoTargetingKey(kind),
        None => Read::Ready(context),
    })
}

/// The SDK context of `kind` that `part` makes; `missing` names the kind when it has no key.
fn single(
    kind: &str,
    part: &Map<String, Value>,
    missing: &mut Option<String>,
) -> Result<Value, String> {
    let key_in = |name: &str| match part.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(key)) => Ok(Some(key.as_str())),
        Some(_) => Err(format!("the {kind} context's {name} must be a string")),
    };
    // `targetingKey` wins; `key` is read only without it.
    let key = match key_in("targetingKey")? {
        Some(key) => key,
        None => key_in("key")?.unwrap_or(""),
    };
    let mut out = Map::with_capacity(part.len() + 2);
    for (name, value) in part {
        match name.as_str() {
            "targetingKey" | "key" | "kind" => {}
            "privateAttributes" => {
                let mut meta = Map::new();
                meta.insert("privateAttributes".into(), value.clone());
                out.insert("_meta".into(), Value::Object(meta));
            }
            _ => {
                out.insert(name.clone(), value.clone());
            }
        }
    }
    out.insert("kind".into(), Value::String(kind.to_owned()));
    let key = if key.is_empty() {
        missing.get_or_insert_with(|| kind.to_owned());
        STAND_IN_KEY
    } else {
        key
    };
    out.insert("key".into(), Value::String(key.to_owned()));
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ready(context: Value) -> Context {
        match read(Some(&context)) {
            Ok(Read::Ready(context)) => context,
            other => panic!("{context}: {other:?}"),
        }
    }

    #[test]
    fn a_targeting_key_is_the_key_of_a_user_unless_the_kind_says_otherwise() {
        let user = ready(json!({"targetingKey": "ann", "plan": "gold"}));
        let ann = user.as_kind("user").unwrap();
        assert_eq!(ann.key(), "ann");
        assert_eq!(
            ann.get(&domain::evaluation::AttributeRef::name("plan")),
            Some(json!("gold"))
        );
        let org = ready(json!({"kind": "org", "targetingKey": "acme"}));
        assert_eq!(org.as_kind("org").unwrap().key(), "acme");
        let keyed = ready(json!({"key": "bob"}));
        assert_eq!(keyed.as_kind("user").unwrap().key(), "bob");
        let both = ready(json!({"targetingKey": "ann", "key": "bob"}));
        assert_eq!(
            both.as_kind("user").unwrap().key(),
            "ann",
            "targetingKey wins"
        );
    }

    #[test]
    fn a_multi_kind_context_has_one_object_per_kind() {
        let multi = ready(json!({
            "kind": "multi",
            "user": {"targetingKey": "ann"},
            "org": {"key": "acme", "privateAttributes": ["plan"], "plan": "gold"},
            "loose": 3,
        }));
        assert!(multi.is_multi());
        assert_eq!(multi.as_kind("org").unwrap().key(), "acme");
        assert_eq!(multi.kinds().count(), 2, "non-objects are left out");
    }

    #[test]
    fn a_missing_key_is_told_apart_from_an_invalid_context() {
        for context in [
            None,
            Some(json!(null)),
            Some(json!({})),
            Some(json!({"plan": "gold"})),
            Some(json!({"targetingKey": ""})),
            Some(json!({"targetingKey": null})),
        ] {
            assert_eq!(
                read(context.as_ref()),
                Ok(Read::NoTargetingKey("user".into())),
                "{context:?}"
            );
        }
        assert_eq!(
            read(Some(
                &json!({"kind": "multi", "user": {"targetingKey": "a"}, "org": {}})
            )),
            Ok(Read::NoTargetingKey("org".into()))
        );
        for invalid in [
            json!("ann"),
            json!([1]),
            json!({"targetingKey": 3}),
            json!({"key": true}),
            json!({"kind": 3, "targetingKey": "a"}),
            json!({"kind": "multi"}),
            json!({"kind": "kind", "targetingKey": "a"}),
            json!({"kind": "", "targetingKey": "a"}),
            json!({"targetingKey": "a", "anonymous": "yes"}),
        ] {
            assert!(read(Some(&invalid)).is_err(), "{invalid}");
        }
    }
}
