//! The resources requests act on, as specifier parts with their tags, and the requests
//! themselves (an action on a resource).

use std::fmt;

use super::pattern::{compile_specifier, CompiledPart};

/// One action on one resource.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Access {
    /// What was done (`createFlag`, `updateOn`, ...).
    pub action: String,
    /// The resource specifier it was done to.
    pub resource: String,
}

/// One part of a resource: `kind/name` (or a bare kind, `acct`) and the tags the thing carries.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Part {
    /// `kind/name`, as a specifier writes it.
    pub(super) text: String,
    /// Its tags (a flag's, a segment's, an environment's, a project's).
    pub(super) tags: Vec<String>,
}

/// A resource a request acts on, as a specifier's parts with each one's tags, so that a
/// statement's `;tag` qualifiers can be checked.
///
/// ```
/// use domain::policy::Resource;
/// let flag = Resource::project("shop").environment("production").flag("checkout");
/// assert_eq!(flag.to_string(), "proj/shop:env/production:flag/checkout");
/// assert!(flag.matches("proj/*:env/prod*:flag/*"));
/// assert!(!flag.matches("proj/*:env/*"), "parts must line up");
/// assert_eq!(Resource::from_specifier("member/abc").to_string(), "member/abc");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Resource {
    pub(super) parts: Vec<Part>,
}

impl Resource {
    fn part(kind: &str, name: &str) -> Part {
        Part {
            text: format!("{kind}/{name}"),
            tags: Vec::new(),
        }
    }

    fn then(mut self, kind: &str, name: &str) -> Self {
        self.parts.push(Self::part(kind, name));
        self
    }

    /// `acct`: the account itself.
    pub fn account() -> Self {
        Self {
            parts: vec![Part {
                text: "acct".into(),
                tags: Vec::new(),
            }],
        }
    }

    /// `proj/{key}`.
    pub fn project(key: &str) -> Self {
        Self {
            parts: vec![Self::part("proj", key)],
        }
    }

    /// `…:env/{key}`, inside this project.
    #[must_use]
    pub fn environment(self, key: &str) -> Self {
        self.then("env", key)
    }

    /// `…:flag/{key}`, inside this environment.
    #[must_use]
    pub fn flag(self, key: &str) -> Self {
        self.then("flag", key)
    }

    /// `…:segment/{key}`, inside this environment.
    #[must_use]
    pub fn segment(self, key: &str) -> Self {
        self.then("segment", key)
    }

    /// `member/{id}`.
    pub fn member(id: &str) -> Self {
        Self {
            parts: vec![Self::part("member", id)],
        }
    }

    /// `…:token/{name}`, of this member.
    #[must_use]
    pub fn token(self, name: &str) -> Self {
        self.then("token", name)
    }

    /// `webhook/{id}`.
    pub fn webhook(id: &str) -> Self {
        Self {
            parts: vec![Self::part("webhook", id)],
        }
    }

    /// `role/{key}`: a custom role.
    pub fn role(key: &str) -> Self {
        Self {
            parts: vec![Self::part("role", key)],
        }
    }

    /// `team/{key}`.
    pub fn team(key: &str) -> Self {
        Self {
            parts: vec![Self::part("team", key)],
        }
    }

    /// The same resource, its last part carrying `tags`.
    #[must_use]
    pub fn with_tags(mut self, tags: &[String]) -> Self {
        if let Some(last) = self.parts.last_mut() {
            last.tags = tags.to_vec();
        }
        self
    }

    /// The same resource in environment `key`, when it is in every environment (its
    /// environment part is `env/*`): a change to a flag in every environment is one to each of
    /// them, which a statement naming one environment may deny.
    ///
    /// ```
    /// use domain::policy::Resource;
    /// let everywhere = Resource::project("shop").environment("*").flag("f");
    /// let production = everywhere.in_environment("production").unwrap();
    /// assert_eq!(production.to_string(), "proj/shop:env/production:flag/f");
    /// assert!(production.in_environment("test").is_none(), "already in one environment");
    /// ```
    #[must_use]
    pub fn in_environment(&self, key: &str) -> Option<Resource> {
        let at = self.parts.iter().position(|part| part.text == "env/*")?;
        let mut resource = self.clone();
        resource.parts[at].text = format!("env/{key}");
        Some(resource)
    }

    /// This resource as it is in every environment (its `env/{key}` part made `env/*`) and the
    /// environment's key; `None` for a resource in no environment.
    ///
    /// ```
    /// use domain::policy::Resource;
    /// let flag = Resource::project("shop").environment("test").flag("f");
    /// let (everywhere, env) = flag.split_environment().unwrap();
    /// assert_eq!((everywhere.to_string().as_str(), env), ("proj/shop:env/*:flag/f", "test"));
    /// assert!(Resource::project("shop").split_environment().is_none());
    /// ```
    pub fn split_environment(&self) -> Option<(Resource, &str)> {
        let at = self
            .parts
            .iter()
            .position(|part| part.text.starts_with("env/"))?;
        let key = self.parts[at].text.strip_prefix("env/")?;
        let mut everywhere = self.clone();
        everywhere.parts[at].text = "env/*".to_owned();
        Some((everywhere, key))
    }

    /// A resource from a specifier without tags (an audit access's `resource`).
    pub fn from_specifier(spec: &str) -> Self {
        Self {
            parts: spec
                .split(':')
                .map(|text| Part {
                    text: text.to_owned(),
                    tags: Vec::new(),
                })
                .collect(),
        }
    }

    /// Whether the specifier `pattern` names this resource: as many parts, each part's
    /// `kind/name` matching its glob, and each `;tag` of the pattern carried by the part.
    pub fn matches(&self, pattern: &str) -> bool {
        self.matches_parts(&compile_specifier(pattern))
    }
}

impl Resource {
    /// [`Resource::matches`] for a specifier already split into parts.
    pub(super) fn matches_parts(&self, pattern: &[CompiledPart]) -> bool {
        pattern.len() == self.parts.len()
            && pattern.iter().zip(&self.parts).all(|(p, part)| {
                p.kind_name.matches(&part.text)
                    && p.tags.iter().all(|tag| part.tags.iter().any(|t| t == tag))
            })
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, part) in self.parts.iter().enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            f.write_str(&part.text)?;
        }
        Ok(())
    }
}

/// An action on a resource: what a request asks [`decide`](super::decide) about, and (as an
/// [`Access`](Access), without tags) what its audit entry records.
///
/// ```
/// use domain::policy::{Request, Resource};
/// let on = Request::new("updateOn", Resource::project("web").environment("test").flag("f"));
/// assert_eq!(on.to_access().resource, "proj/web:env/test:flag/f");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Request {
    /// The action's name (`updateOn`).
    pub action: String,
    /// What it is done to.
    pub resource: Resource,
}

impl Request {
    /// `action` on `resource`.
    pub fn new(action: &str, resource: Resource) -> Self {
        Self {
            action: action.to_owned(),
            resource,
        }
    }

    /// As an audit entry records it: the resource's specifier, without tags.
    pub fn to_access(&self) -> Access {
        Access {
            action: self.action.clone(),
            resource: self.resource.to_string(),
        }
    }
}
