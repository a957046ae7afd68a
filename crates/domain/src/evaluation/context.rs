//! Evaluation contexts: who a flag is evaluated for. A context has a kind (`user` unless said
//! otherwise) and a key, and attributes; a multi-kind context holds one context per kind. Read
//! from the JSON the SDKs send (`{"kind": "org", "key": "acme", ...}`, `{"kind": "multi",
//! "user": {...}, "org": {...}}`, or the older user form without `kind`).

use serde_json::{Map, Value};

use super::model::USER_KIND;

/// The most contexts a multi-kind context holds: one with more is refused. (How deep an
/// attribute value nests is bounded by the JSON reader of the driving adapter, not here.)
pub const MAX_CONTEXT_KINDS: usize = 32;

/// Why a context cannot be evaluated for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid context: {0}")]
pub struct ContextError(pub String);

/// The attributes of the older user form that stand at the top of its object.
const USER_BUILT_INS: [&str; 8] = [
    "ip",
    "country",
    "email",
    "firstName",
    "lastName",
    "avatar",
    "name",
    "anonymous",
];

/// The context of one kind.
#[derive(Debug, Clone, PartialEq)]
pub struct SingleContext {
    kind: String,
    key: String,
    attributes: Map<String, Value>,
}

/// Who a flag is evaluated for: one context, or one per kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    /// By kind, in the order given.
    contexts: Vec<SingleContext>,
    multi: bool,
}

/// Whether `kind` is a valid kind: letters, digits, `.`, `_`, `-`; not `kind` nor `multi`.
fn valid_kind(kind: &str) -> bool {
    !kind.is_empty()
        && kind != "kind"
        && kind != "multi"
        && kind
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

impl SingleContext {
    /// A context of `kind` with `key` and no other attributes.
    ///
    /// # Errors
    /// An invalid kind or an empty key.
    pub fn new(kind: &str, key: &str) -> Result<Self, ContextError> {
        if !valid_kind(kind) {
            return Err(ContextError(format!(
                "'{kind}' is not a valid context kind"
            )));
        }
        if key.is_empty() {
            return Err(ContextError("a context key must not be empty".into()));
        }
        Ok(Self {
            kind: kind.to_owned(),
            key: key.to_owned(),
            attributes: Map::new(),
        })
    }

    /// The same context with attribute `name` set to `value` (`key`, `kind` and `_meta` are
    /// not attributes one sets).
    #[must_use]
    pub fn with(mut self, name: &str, value: Value) -> Self {
        if !matches!(name, "key" | "kind" | "_meta") {
            self.attributes.insert(name.to_owned(), value);
        }
        self
    }

    /// Its kind.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// Its key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The value of attribute `reference` (`kind` and `key` included), if it has one.
    pub fn get(&self, reference: &AttributeRef) -> Option<Value> {
        let (first, rest) = reference.parts.split_first()?;
        let top = match first.as_str() {
            "kind" => return rest.is_empty().then(|| Value::String(self.kind.clone())),
            "key" => return rest.is_empty().then(|| Value::String(self.key.clone())),
            // A built-in attribute: a context that does not say is not anonymous.
            "anonymous" if rest.is_empty() => {
                return Some(
                    self.attributes
                        .get("anonymous")
                        .cloned()
                        .unwrap_or(Value::Bool(false)),
                )
            }
            name => self.attributes.get(name)?,
        };
        let mut value = top;
        for part in rest {
            value = value.as_object()?.get(part)?;
        }
        Some(value.clone())
    }

    /// Reads one context of `kind` from its JSON object (without `kind` in it for the parts of
    /// a multi-kind context).
    fn from_object(kind: &str, object: &Map<String, Value>) -> Result<Self, ContextError> {
        let key = match object.get("key") {
            Some(Value::String(key)) => key,
            Some(_) => return Err(ContextError("a context key must be a string".into())),
            None => return Err(ContextError("a context must have a key".into())),
        };
        let mut context = Self::new(kind, key)?;
        for (name, value) in object {
            match name.as_str() {
                "kind" | "key" | "_meta" => {}
                "name" if !value.is_string() && !value.is_null() => {
                    return Err(ContextError("a context's name must be a string".into()))
                }
                "anonymous" if !value.is_boolean() && !value.is_null() => {
                    return Err(ContextError(
                        "a context's anonymous must be a boolean".into(),
                    ))
                }
                _ if value.is_null() => {}
                _ => {
                    context.attributes.insert(name.clone(), value.clone());
                }
            }
        }
        Ok(context)
    }

    /// Reads the older user form (no `kind`): built-in attributes at the top, the others under
    /// `custom`; its key may be empty.
    fn from_user(object: &Map<String, Value>) -> Result<Self, ContextError> {
        let key = match object.get("key") {
            Some(Value::String(key)) => key.clone(),
            Some(_) => return Err(ContextError("a user key must be a string".into())),
            None => return Err(ContextError("a user must have a key".into())),
        };
        let mut context = Self {
            kind: USER_KIND.to_owned(),
            key,
            attributes: Map::new(),
        };
        // Only the user form's built-in attributes stand at the top; the rest is in `custom`.
        for name in USER_BUILT_INS {
            match object.get(name) {
                None | Some(Value::Null) => {}
                Some(value) => {
                    context.attributes.insert(name.to_owned(), value.clone());
                }
            }
        }
        if let Some(Value::Object(custom)) = object.get("custom") {
            for (name, value) in custom {
                if !value.is_null() && !matches!(name.as_str(), "kind" | "key") {
                    context
                        .attributes
                        .entry(name.clone())
                        .or_insert_with(|| value.clone());
                }
            }
        }
        Ok(context)
    }
}

impl Context {
    /// A context of one kind.
    pub fn single(context: SingleContext) -> Self {
        Self {
            contexts: vec![context],
            multi: false,
        }
    }

    /// A multi-kind context of `contexts` (one per kind).
    ///
    /// # Errors
    /// No context, two of one kind, or more than [`MAX_CONTEXT_KINDS`].
    pub fn multi(contexts: Vec<SingleContext>) -> Result<Self, ContextError> {
        if contexts.is_empty() {
            return Err(ContextError("a multi-kind context needs a context".into()));
        }
        if contexts.len() > MAX_CONTEXT_KINDS {
            return Err(ContextError(format!(
                "a multi-kind context holds at most {MAX_CONTEXT_KINDS} kinds"
            )));
        }
        for (at, context) in contexts.iter().enumerate() {
            if contexts[..at].iter().any(|c| c.kind == context.kind) {
                return Err(ContextError(format!("kind '{}' given twice", context.kind)));
            }
        }
        Ok(Self {
            multi: contexts.len() > 1,
            contexts,
        })
    }

    /// Reads a context from the JSON the SDKs send.
    ///
    /// ```
    /// use domain::evaluation::Context;
    /// let context = Context::from_json(&serde_json::json!({
    ///     "kind": "multi", "user": {"key": "ann"}, "org": {"key": "acme", "plan": "gold"}
    /// })).unwrap();
    /// assert_eq!(context.as_kind("org").map(|c| c.key()), Some("acme"));
    /// assert!(Context::from_json(&serde_json::json!({"kind": "user"})).is_err());
    /// ```
    ///
    /// # Errors
    /// A context that is not an object, has no key, an invalid kind, or wrong built-in types.
    pub fn from_json(value: &Value) -> Result<Self, ContextError> {
        let Value::Object(object) = value else {
            return Err(ContextError("a context must be a JSON object".into()));
        };
        match object.get("kind") {
            None => Ok(Self::single(SingleContext::from_user(object)?)),
            Some(Value::String(kind)) if kind == "multi" => {
                let mut contexts = Vec::new();
                for (kind, part) in object {
                    if kind == "kind" {
                        continue;
                    }
                    let Value::Object(part) = part else {
                        return Err(ContextError(format!(
                            "the '{kind}' context must be an object"
                        )));
                    };
                    contexts.push(SingleContext::from_object(kind, part)?);
                }
                Self::multi(contexts)
            }
            Some(Value::String(kind)) => {
                Ok(Self::single(SingleContext::from_object(kind, object)?))
            }
            Some(_) => Err(ContextError("a context's kind must be a string".into())),
        }
    }

    /// The context of `kind`, if this context has one.
    pub fn as_kind(&self, kind: &str) -> Option<&SingleContext> {
        self.contexts.iter().find(|c| c.kind == kind)
    }

    /// The kinds it holds (`multi` is never one).
    pub fn kinds(&self) -> impl Iterator<Item = &str> {
        self.contexts.iter().map(|c| c.kind.as_str())
    }

    /// Whether it is a multi-kind context.
    pub fn is_multi(&self) -> bool {
        self.multi
    }
}

/// An attribute of a context: a path of names (`/address/city`), or one plain name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributeRef {
    parts: Vec<String>,
}

impl AttributeRef {
    /// A reference in path form: `/a/b` (with `~1` for `/` and `~0` for `~` in a name), or a
    /// name without a leading `/`.
    ///
    /// ```
    /// use domain::evaluation::AttributeRef;
    /// assert!(AttributeRef::parse("/address/city").is_ok());
    /// assert!(AttributeRef::parse("/a~1b").is_ok());
    /// assert!(AttributeRef::parse("/a//b").is_err());
    /// assert!(AttributeRef::parse("").is_err());
    /// ```
    ///
    /// # Errors
    /// An empty reference, an empty name in the path, or an escape other than `~0` and `~1`.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() || text == "/" {
            return Err(format!("'{text}' is not an attribute reference"));
        }
        let Some(path) = text.strip_prefix('/') else {
            return Ok(Self::name(text));
        };
        let mut parts = Vec::new();
        for part in path.split('/') {
            if part.is_empty() {
                return Err(format!("'{text}' has an empty name"));
            }
            let mut name = String::with_capacity(part.len());
            let mut chars = part.chars();
            while let Some(c) = chars.next() {
                if c == '~' {
                    match chars.next() {
                        Some('0') => name.push('~'),
                        Some('1') => name.push('/'),
                        _ => return Err(format!("'{text}' has an invalid escape")),
                    }
                } else {
                    name.push(c);
                }
            }
            parts.push(name);
        }
        Ok(Self { parts })
    }

    /// A reference to the plain attribute `name` (whatever characters it holds): how a clause
    /// without a context kind names its attribute.
    pub fn name(name: &str) -> Self {
        Self {
            parts: vec![name.to_owned()],
        }
    }

    /// Whether it names the context's kind.
    pub fn is_kind(&self) -> bool {
        self.parts.len() == 1 && self.parts[0] == "kind"
    }
}
